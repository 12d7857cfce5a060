"""The library's calls for a bridge's poll (decisions 140, 141), against the live server: its
requests listed by label, and heartbeat, release or cancel of many in one call, each item
answered as its single call would answer it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from django.contrib.auth.models import Permission, User

from poolctl import ActionResult, Client
from poolctl.api import BATCH_MOST
from poolweb.services.tokens import token_issue

from .conftest import People

pytestmark = pytest.mark.slow


@pytest.fixture
def bridge(live: People) -> Client:
    """The bridge's service account: submits for others, and is an admin to follow them (decision 131)."""
    user = User.objects.create_user("bridge", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    with Client(live.server.url, token_issue(user=user)) as client:
        yield client


@pytest.fixture
def bob(live: People) -> Client:
    with Client(live.server.url, live.bob) as client:
        yield client


def test_a_bridge_finds_its_requests_by_label_and_keeps_them_alive_and_gives_them_back_in_one_call(bridge):
    jobs = [bridge.submit(policy="dev", profile="one", owner="bob", idempotency_key=f"slurm:c1:{n}",
                          labels={"slurm_cluster": "c1", "slurm_job": str(n)}) for n in range(2)]
    granted = [bridge.wait(job, timeout=30) for job in jobs]
    bridge.submit(policy="dev", profile="one", owner="bob", labels={"slurm_cluster": "c2"})

    assert sorted(r.id for r in bridge.list(labels={"slurm_cluster": "c1"})) == sorted(j.id for j in jobs)
    assert [r.id for r in bridge.list(labels={"slurm_cluster": "c1"}, page=1)] == [jobs[1].id, jobs[0].id]  # 2 pages
    assert [r.id for r in bridge.list(labels={"slurm_cluster": "c1", "slurm_job": "1"})] == [jobs[1].id]

    kept = bridge.act_many("heartbeat", [*granted, 10**9])
    assert all(isinstance(result, ActionResult) for result in kept)
    assert [r.status for r in kept] == [200, 200, 404]
    assert all(r.request.lease_expires_at >= g.lease_expires_at for r, g in zip(kept, granted))

    given_back = bridge.act_many("release", granted)
    assert [(r.status, r.request.state) for r in given_back] == [(200, "released")] * 2
    assert [r.status for r in bridge.act_many("heartbeat", granted)] == [409, 409]  # the runs are over


def test_a_request_carries_its_attempt_and_another_attempts_run_touches_nothing(bob):
    request = bob.wait(bob.submit(policy="dev", profile="one"), timeout=30)
    old_run = replace(request, attempt=request.attempt + 1)  # as if it were another attempt's

    kept, released = bob.act_many("heartbeat", [old_run]), bob.act_many("release", [old_run])

    assert (kept[0].status, f"attempt {old_run.attempt}" in kept[0].detail) == (409, True)
    assert (released[0].status, released[0].request.state) == (200, "allocated")
    assert bob.act_many("cancel", [request])[0].request.state == "released"  # cancel takes no attempt


def test_more_than_one_calls_items_are_answered_in_order_and_another_users_request_is_not_found(bob, live):
    with Client(live.server.url, live.alice) as alice:
        hers = alice.submit(policy="dev", profile="two")
    mine = bob.submit(policy="dev", profile="one")

    results = bob.act_many("cancel", [mine, hers, *range(10**8, 10**8 + BATCH_MOST)])  # two calls

    assert len(results) == BATCH_MOST + 2
    assert [r.status for r in results[:3]] == [200, 404, 404] and {r.status for r in results[2:]} == {404}
    assert results[0].request.state in ("cancelled", "released")
    with Client(live.server.url, live.alice) as alice:
        assert alice.get(hers).state not in ("cancelled", "released")


def test_poolctl_list_takes_labels(poolctl, bob):
    tagged = bob.submit(policy="dev", profile="one", labels={"team": "nlp", "run": "a=b"})
    bob.submit(policy="dev", profile="one", labels={"team": "cv"})

    listed = poolctl("--json", "list", "--label", "team=nlp", "--label", "run=a=b")

    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [tagged.id]
