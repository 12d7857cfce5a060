"""A pass reads and plans without the write lock and writes in one short transaction (decision 47),
so on both databases a submission, release, cancel or heartbeat can commit between its read and
its write. Each test commits one there and checks the stored state with the §10 checker, that
nothing is granted twice, and that no event goes out for a decision that did not commit. Passes
stay one at a time: the pass lock is not the write lock, but it excludes other passes."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.utils import timezone

from poolweb.models import Event, UnannouncedChange, Request as RequestRow
from poolweb.selectors.snapshot import load_snapshot
from poolweb.services import reconciler, requests as services
from poolweb.services.reconciler import reconcile_pass
from reconcile import Vector
from reconcile.invariants import check_state
from tests.poolweb.conftest import request_row, run_together
from .test_interleavings import (  # noqa: F401 (one_gpu is a fixture)
    between_plan_and_apply, holding_a_day_lease_with_ten_minutes_left, one_gpu)

pytestmark = pytest.mark.django_db(transaction=True)

ONE = services.Submission("low", "one", Vector.of(gpu=1, step_run=1))


@pytest.fixture(autouse=True)
def passes_by_worker(settings):
    """Changes ask for a pass but do not run one: the pass under test is the only one."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


def states(*rows) -> list[str]:
    return [RequestRow.objects.get(pk=row.pk).state for row in rows]


def announced(since: int) -> dict[int, list[str]]:
    """request.updated events after ``since``: request id → the states they announced."""
    found: dict[int, list[str]] = {}
    for text in Event.objects.filter(seq__gt=since, type="request.updated").values_list("data", flat=True):
        data = json.loads(text)
        found.setdefault(data["id"], []).append(data["state"])
    return found


def newest_seq() -> int:
    return Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0


def assert_consistent() -> None:
    assert check_state(load_snapshot(timezone.now())) == []  # I-1…: nothing granted twice


def test_a_submission_committed_between_read_and_write_waits_for_the_next_pass(one_gpu, bob):
    waiting = request_row(bob, "low", "one", 1)
    late: list[int] = []
    with between_plan_and_apply(lambda: late.append(services.request_submit(user=bob, submission=ONE)[0].pk)):
        result = reconcile_pass()
    assert (result.counts["grants"], states(waiting)) == (1, ["allocated"])
    assert RequestRow.objects.get(pk=late[0]).state == "pending"  # the plan never saw it
    assert_consistent()
    reconcile_pass()
    assert RequestRow.objects.get(pk=late[0]).reason == "WaitingForCapacity"


def test_a_release_committed_between_read_and_write_is_a_conflict_and_nothing_is_granted_twice(one_gpu, bob):
    holder = request_row(bob, "low", "one", 1, state="allocated", pool="p")
    waiting = request_row(bob, "high", "one", 1)
    since = newest_seq()
    with between_plan_and_apply(lambda: services.request_release(user=bob, request_id=holder.pk)):
        result = reconcile_pass()  # planned: preempt the holder for the waiting one
    assert states(holder, waiting) == ["released", "pending"]
    assert result.conflicts >= 1
    assert "preempting" not in announced(since).get(holder.pk, [])  # the eviction did not commit
    assert_consistent()
    reconcile_pass()
    assert states(waiting) == ["allocated"]
    assert_consistent()


def test_a_cancel_of_a_request_the_plan_grants_drops_the_grant_and_its_event(one_gpu, bob):
    waiting = request_row(bob, "low", "one", 1)
    since = newest_seq()
    with between_plan_and_apply(lambda: services.request_cancel(user=bob, request_id=waiting.pk)):
        result = reconcile_pass()
    assert (states(waiting), result.conflicts) == (["cancelled"], 1)
    assert announced(since) == {waiting.pk: ["cancelled"]}  # the cancel's own event, no grant
    assert_consistent()


def test_a_heartbeat_committed_between_read_and_write_keeps_its_lease(one_gpu, bob):
    holder = holding_a_day_lease_with_ten_minutes_left(bob)
    preemptor = request_row(bob, "high", "one", 1)
    with between_plan_and_apply(lambda: services.request_heartbeat(user=bob, request_id=holder.pk)):
        reconcile_pass()  # preempts the holder; the renewed lease must survive the pass's write
    holder.refresh_from_db()
    assert (holder.state, holder.preempted_by) == ("preempting", preemptor.pk)
    assert holder.lease_expires_at > timezone.now() + timedelta(hours=23)  # renewed for a day
    assert_consistent()


def test_a_release_leaves_the_pools_and_the_policys_news_to_the_next_pass(one_gpu, bob):
    holder = request_row(bob, "low", "one", 1, state="allocated", pool="p")
    services.request_release(user=bob, request_id=holder.pk)
    assert list(UnannouncedChange.objects.values_list("pool", "policy")) == [("p", "low")]
    since = newest_seq()
    reconcile_pass()
    sent = [(t, json.loads(d)) for t, d in Event.objects.filter(seq__gt=since).values_list("type", "data")]
    assert [(t, d["name"]) for t, d in sent] == [("pool.updated", "p"), ("policy.updated", "low")]
    assert sent[0][1]["free"] == {"gpu": 1} and not UnannouncedChange.objects.exists()


def test_passes_run_one_at_a_time_across_connections(one_gpu, bob):
    for _ in range(3):
        request_row(bob, "low", "one", 1)
    inside, overlaps = [], []
    real = reconciler.plan

    def slow_plan(snapshot, *terms):
        inside.append(1)
        overlaps.append(len(inside))
        time.sleep(0.2)
        try:
            return real(snapshot, *terms)
        finally:
            inside.pop()

    def passing() -> None:
        try:
            reconcile_pass()
        finally:
            connection.close()

    with mock.patch.object(reconciler, "plan", slow_plan):
        run_together(passing, passing, passing)
    assert overlaps == [1, 1, 1]
    assert RequestRow.objects.filter(state="allocated").count() == 1
    assert_consistent()
