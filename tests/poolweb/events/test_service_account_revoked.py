"""A revoked service account's event stream closes as a deactivated user's does (decision 190):
revoking deactivates the account and deletes its tokens in one transaction, and the stream's
periodic check sees the account first."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from poolweb.services.service_accounts import service_account_create, service_account_revoke

from .streams import quick_stream  # noqa: F401 (an autouse fixture: the streams here poll often)
from .streams import connect, in_event_loop, nothing_more, refusal

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def check_often(settings):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "RECHECK_MS": 50}


@in_event_loop
async def test_a_revoked_service_accounts_stream_closes_within_the_interval(check_often):
    _row, token = await database_sync_to_async(service_account_create)(name="slurm-bridge", admin=True)
    stream = await connect(origin=None)  # a program: no Origin, signed in by its token
    await stream.send_json_to({"token": token, "resume_from": None})
    assert await nothing_more(stream)

    await database_sync_to_async(service_account_revoke)(name="slurm-bridge")

    assert await refusal(stream) == ("account_disabled", 4403)
    await stream.disconnect()


@in_event_loop
async def test_a_revoked_service_accounts_token_cannot_open_a_stream(check_often):
    _row, token = await database_sync_to_async(service_account_create)(name="slurm-bridge")
    await database_sync_to_async(service_account_revoke)(name="slurm-bridge")
    stream = await connect(origin=None)

    await stream.send_json_to({"token": token, "resume_from": None})

    assert await refusal(stream) == ("unauthenticated", 4401)
    await stream.disconnect()
