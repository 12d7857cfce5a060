"""An open event stream of a directory user closes when the directory disables them: its periodic
rights check asks the directory again once the last answer is old (decision 167)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from poolweb.models import DirectoryAccount
from tests.poolweb.events.streams import connect, in_event_loop, nothing_more, refusal
from tests.poolweb.events.streams import quick_stream  # noqa: F401 (autouse: streams re-check often)
from tests.slapd import BASE, password

ldap = pytest.importorskip("ldap", reason="python-ldap is not installed (pip install -e '.[ldap]'; .ci/run does)")
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bea(directory) -> User:
    response = Client().post("/accounts/login/", {"username": "bea", "password": password("bea")})
    assert response.status_code == 302
    yield User.objects.get(username="bea")
    directory.modify(f"uid=bea,ou=people,{BASE}", [(ldap.MOD_DELETE, "pwdAccountLockedTime", None)])


@pytest.fixture(autouse=True)
def check_often(settings):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "RECHECK_MS": 50}


@database_sync_to_async
def disable_in_the_directory(directory) -> None:
    directory.modify(f"uid=bea,ou=people,{BASE}", [(ldap.MOD_ADD, "pwdAccountLockedTime", [b"000001010000Z"])])


@in_event_loop
async def test_a_directory_users_open_stream_closes_once_the_directory_disabled_them(directory, bea):
    stream = await connect(bea)
    await disable_in_the_directory(directory)
    assert await nothing_more(stream)  # the directory answered for her a moment ago: that answer stands

    await database_sync_to_async(DirectoryAccount.objects.update)(checked_at=timezone.now() - timedelta(minutes=5))

    assert await refusal(stream) == ("account_disabled", 4403)
    await stream.disconnect()


@pytest.fixture
def ada(directory) -> User:
    response = Client().post("/accounts/login/", {"username": "ada", "password": password("ada")})
    assert response.status_code == 302
    yield User.objects.get(username="ada")
    directory.modify(f"cn=gpu-admins,ou=groups,{BASE}", [(ldap.MOD_ADD, "member", [f"uid=ada,ou=people,{BASE}".encode()])])


@in_event_loop
async def test_an_administrator_the_directory_demotes_has_their_stream_closed_to_reconnect(directory, ada):
    stream = await connect(ada)
    await database_sync_to_async(directory.modify)(
        f"cn=gpu-admins,ou=groups,{BASE}", [(ldap.MOD_DELETE, "member", [f"uid=ada,ou=people,{BASE}".encode()])])
    await database_sync_to_async(DirectoryAccount.objects.update)(checked_at=timezone.now() - timedelta(minutes=5))

    assert await refusal(stream) == ("permissions_changed", 4409)  # reconnecting gives what a member may see
    await stream.disconnect()
    assert not (await database_sync_to_async(User.objects.get)(username="ada")).is_staff
