"""The library's calls for a bridge (decision 131, 132), against the live server: ``submit`` for
another user, and ``submit_batch`` with a result per item, in item order."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from poolctl import BatchResult, Client, PermissionRefused
from poolctl.api import BATCH_MOST
from poolweb.services.tokens import token_issue

from .conftest import People

pytestmark = pytest.mark.slow


@pytest.fixture
def bridge(live: People) -> Client:
    """A service account granted ``poolweb.submit_for_others``."""
    user = User.objects.create_user("bridge")
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    with Client(live.server.url, token_issue(user=user)) as client:
        yield client


def test_a_request_submitted_for_bob_is_bobs_and_names_the_bridge(bridge, live):
    request = bridge.submit(policy="dev", profile="one", owner="bob", idempotency_key="slurm:c1:1")

    assert (request.owner, request.submitted_by) == ("bob", "bridge")
    with Client(live.server.url, live.bob) as bob:
        assert bob.get(request).submitted_by == "bridge"
    assert bridge.submit(policy="dev", profile="one", owner="bob", idempotency_key="slurm:c1:1").id == request.id


def test_without_the_permission_submitting_for_another_is_refused(live):
    with Client(live.server.url, live.carol) as carol, pytest.raises(PermissionRefused, match="submit_for_others"):
        carol.submit(policy="dev", profile="one", owner="bob")


def test_a_batch_answers_each_item_in_order_and_a_retry_the_same_requests(bridge):
    items = [dict(policy="dev", profile="one", owner="bob", name=f"job-{n}", idempotency_key=f"slurm:c1:{n}")
             for n in range(BATCH_MOST + 3)]  # two calls
    items[1] = {**items[1], "owner": "nobody"}
    items[2] = {**items[2], "owner": "carol"}

    results = bridge.submit_batch(items)
    again = bridge.submit_batch(items)

    assert all(isinstance(result, BatchResult) for result in results) and len(results) == BATCH_MOST + 3
    assert [r.status for r in results[:4]] == [201, 400, 403, 201]
    assert results[1].errors[0].path == "owner" and "carol may not submit" in results[2].detail
    assert [r.request.name for r in results if r.ok] == [item["name"] for item in items if item["owner"] == "bob"]
    assert [r.request.id for r in again if r.ok] == [r.request.id for r in results if r.ok]
    assert {r.status for r in again if r.ok} == {200}
