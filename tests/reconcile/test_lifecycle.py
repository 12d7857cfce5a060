"""Leases, release, cancel, heartbeat and eviction (R-44, R-46, R-50, R-51).

Two layers: ``reconcile.lifecycle`` (what one action decides for one request, carried out by
``transition.applied``) and the pass (what time does: expired leases, grace periods that ran out). Time is ``Snapshot.now``; nothing sleeps.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reconcile import Reason, Request, Snapshot, State, plan
from reconcile.lifecycle import NotLive, cancel, eviction, grace_over, heartbeat, lease_expired, release
from reconcile.transition import carry_out
from tests.reconcile.actions import acted
from tests.reconcile.builders import at, config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, outcome

MICROSECOND = timedelta(microseconds=1)
NOW = at(1000)

P = config(pool("p", gpu=1), policy("low", priority=1), policy("high", priority=5), policy("t"),
           profile("one", "p", ("t", "low", "high"), gpu=1))


def live(id: int, policy_name: str = "t", *, lease_at: float | None = None, **kwargs) -> Request:
    """An allocation on pool p; ``lease_at`` sets when its lease runs out (seconds after T0)."""
    request = req(id, policy_name, "one", state=State.ALLOCATED, pool="p", gpu=1, **kwargs)
    return request if lease_at is None else replace(request, lease_expires_at=at(lease_at))


def victim(id: int, by: int, since: float, *, retries: int = 0, reason: Reason = Reason.PREEMPTED_BY_PRIORITY) -> Request:
    """A ``low`` allocation on p chosen as a victim of request ``by`` at ``since`` seconds."""
    return replace(req(id, "low", "one", state=State.PREEMPTING, pool="p", gpu=1, retries=retries),
                   preempted_by=by, preempted_at=at(since), reason=reason)


def with_now(state: Snapshot, now) -> Snapshot:
    return replace(state, now=now)


# --- one action on one request ------------------------------------------------------------

PENDING = req(1, "t", "one", gpu=1)
ALLOCATED = live(1)
PREEMPTING_NO_RETRY = victim(1, by=2, since=990)
PREEMPTING_RETRY = victim(1, by=2, since=990, retries=1, reason=Reason.RECLAIMED)


def evict(request: Request) -> object:
    return eviction(request, "not released within the grace period")


def _summary(request: Request) -> tuple:
    return request.state.value, request.reason and request.reason.value, request.attempt


ACTIONS = [
    # (id, action, subject, expected (state, reason, attempt))
    ("R-51 cancel of a pending request cancels it", cancel, PENDING, ("cancelled", "CancelledByUser", 1)),
    ("R-51 cancel of an allocated request releases it", cancel, ALLOCATED, ("released", "CancelledByUser", 1)),
    ("R-51 release of an allocated request releases it", release, ALLOCATED, ("released", "Released", 1)),
    ("R-51 release of a pending request changes nothing", release, PENDING, ("pending", None, 1)),
    ("R-51 release of a request queued again after preemption keeps the new attempt", release,
     replace(PREEMPTING_RETRY, state=State.PENDING, attempt=2, pool=None), ("pending", "Reclaimed", 2)),
    ("R-51+R-46 release of a preempting request out of retries ends it preempted", release, PREEMPTING_NO_RETRY,
     ("preempted", "PreemptedByPriority", 1)),
    ("R-51+R-46 release of a preempting request with a retry queues it again", release, PREEMPTING_RETRY,
     ("pending", "Reclaimed", 2)),
    ("R-51+R-46 cancel of a preempting request takes the eviction path too", cancel, PREEMPTING_NO_RETRY,
     ("preempted", "PreemptedByPriority", 1)),
    ("R-51+R-46 cancel of a preempting request with a retry queues it again", cancel, PREEMPTING_RETRY,
     ("pending", "Reclaimed", 2)),
    ("R-46 eviction keeps the reason the victim was given", evict, PREEMPTING_NO_RETRY,
     ("preempted", "PreemptedByPriority", 1)),
    ("R-46 eviction of a request that is not preempting changes nothing", evict, ALLOCATED,
     ("allocated", None, 1)),
]


@pytest.mark.parametrize("name, action, subject, expected", ACTIONS, ids=[row[0] for row in ACTIONS])
def test_release_and_cancel_move_a_request_as_r51_says(name, action, subject, expected):
    assert _summary(acted(action, subject, NOW)) == expected


TERMINAL = [replace(PENDING, state=state, reason=reason) for state, reason in (
    (State.RELEASED, Reason.RELEASED), (State.PREEMPTED, Reason.RECLAIMED), (State.REJECTED, Reason.EXCEEDS_LIMIT),
    (State.CANCELLED, Reason.CANCELLED_BY_USER), (State.EXPIRED, Reason.LEASE_EXPIRED),
)]


@pytest.mark.parametrize("action", [release, cancel], ids=["R-51 release", "R-51 cancel"])
@pytest.mark.parametrize("subject", TERMINAL, ids=lambda r: f"of {r.state}")
def test_release_and_cancel_leave_a_terminal_request_unchanged(action, subject):
    assert action(subject) is None


@pytest.mark.parametrize("action", [release, cancel], ids=["R-51 release", "R-51 cancel"])
@pytest.mark.parametrize("subject", [PENDING, ALLOCATED, PREEMPTING_NO_RETRY], ids=["pending", "allocated", "preempting"])
def test_doing_the_same_action_twice_is_doing_it_once(action, subject):
    once = acted(action, subject, NOW)
    assert acted(action, once, NOW) == once


def test_eviction_with_a_retry_keeps_the_first_submission_time_and_frees_the_pool():
    queued = acted(evict, PREEMPTING_RETRY, NOW)
    assert (queued.state, queued.attempt, queued.submitted_at, queued.pool, queued.allocated_at,
            queued.lease_expires_at, queued.preempted_at) == (
        State.PENDING, 2, PREEMPTING_RETRY.submitted_at, None, None, None, None)


def test_a_second_eviction_after_the_last_retry_ends_the_request_preempted():
    first = replace(acted(evict, PREEMPTING_RETRY, NOW), state=State.PREEMPTING, pool="p")
    assert _summary(acted(evict, first, NOW)) == ("preempted", "Reclaimed", 2)


HEARTBEATS = [
    # (id, subject, now, expected lease end)
    ("R-50 a heartbeat renews an allocation's lease from now", replace(live(1), lease_seconds=10), NOW,
     NOW + timedelta(seconds=10)),
    ("R-50 a heartbeat renews a preempting request's lease too", replace(PREEMPTING_NO_RETRY, lease_seconds=300), NOW,
     NOW + timedelta(seconds=300)),
    ("R-50 a heartbeat can shorten a lease set longer", live(1), NOW, NOW + timedelta(seconds=300)),
]


@pytest.mark.parametrize("name, subject, now, lease_end", HEARTBEATS, ids=[row[0] for row in HEARTBEATS])
def test_a_heartbeat_renews_the_lease_for_another_lease_seconds(name, subject, now, lease_end):
    once = heartbeat(subject, now)
    assert (once.lease_expires_at, heartbeat(once, now)) == (lease_end, once)


@pytest.mark.parametrize("subject", [PENDING, *TERMINAL], ids=lambda r: f"R-50 heartbeat on {r.state}")
def test_a_heartbeat_for_a_request_that_holds_nothing_raises_not_live(subject):
    with pytest.raises(NotLive):
        heartbeat(subject, NOW)


LEASE_ENDS = at(500)
EXPIRY = [
    # (id, subject, now, expired?)
    ("R-50 a lease is expired at exactly lease_expires_at", live(1, lease_at=500), LEASE_ENDS, True),
    ("R-50 a lease is not expired a microsecond before", live(1, lease_at=500), LEASE_ENDS - MICROSECOND, False),
    ("R-50 a preempting request's lease expires too", replace(PREEMPTING_NO_RETRY, lease_expires_at=LEASE_ENDS),
     LEASE_ENDS, True),
    ("R-50 a pending request has no lease", replace(PENDING, lease_expires_at=LEASE_ENDS), LEASE_ENDS, False),
    ("R-50 a released request has no lease", replace(live(1, lease_at=500), state=State.RELEASED), LEASE_ENDS, False),
    ("R-50 a live request without a lease end never expires", replace(live(1), lease_expires_at=None), LEASE_ENDS, False),
]


@pytest.mark.parametrize("name, subject, now, expired", EXPIRY, ids=[row[0] for row in EXPIRY])
def test_a_lease_expires_at_its_end_and_not_before(name, subject, now, expired):
    assert lease_expired(subject, now) is expired


GRACE = [
    # (id, preempted at, now, grace, over?)
    ("R-44 the default grace ends after exactly 30 s", 970, at(1000), timedelta(seconds=30), True),
    ("R-44 a microsecond before the grace ends", 970, at(1000) - MICROSECOND, timedelta(seconds=30), False),
    ("R-44 a shorter grace ends sooner", 995, at(1000), timedelta(seconds=5), True),
    ("R-44 a longer grace is still running", 970, at(1000), timedelta(seconds=60), False),
]


@pytest.mark.parametrize("name, since, now, grace, over", GRACE, ids=[row[0] for row in GRACE])
def test_the_grace_period_runs_from_when_the_request_became_preempting(name, since, now, grace, over):
    assert grace_over(victim(1, by=2, since=since), now, grace) is over


# --- through the pass -------------------------------------------------------------------

PASSES = [
    Case("an expired lease frees its capacity for a pending request in the same pass", ("R-50",), snapshot(
        P, live(1, lease_at=1000), req(2, "t", "one", gpu=1)), {1: "expired LeaseExpired", 2: "allocated on p"}),
    Case("a lease a microsecond from its end still holds its capacity", ("R-50",), snapshot(
        P, live(1, lease_at=1000.000001), req(2, "t", "one", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("leases expire while management is disabled; nothing is granted", ("R-50", "R-58"), snapshot(
        P, live(1, lease_at=1000), req(2, "t", "one", gpu=1), enabled=False), {
        1: "expired LeaseExpired", 2: "pending ManagementDisabled #1"}),
    Case("an expired preempting request frees the capacity held for its preemptor", ("R-50", "R-45"), snapshot(
        P, replace(victim(1, by=2, since=999), lease_expires_at=at(1000)), req(2, "high", "one", gpu=1)), {
        1: "expired LeaseExpired", 2: "allocated on p"}),
    Case("within the grace the victim keeps its capacity and its preemptor waits", ("R-44", "R-45"), snapshot(
        P, victim(1, by=2, since=970.000001), req(2, "high", "one", gpu=1)), {
        1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("after exactly the default 30 s grace the victim is evicted and its preemptor granted", ("R-44", "R-46"),
         snapshot(P, victim(1, by=2, since=970), req(2, "high", "one", gpu=1)), {
        1: "preempted PreemptedByPriority", 2: "allocated on p"}),
    Case("an evicted victim with a retry left is queued again behind its preemptor", ("R-44", "R-46"), snapshot(
        P, victim(1, by=2, since=970, retries=1), req(2, "high", "one", gpu=1)), {
        1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("a grace period runs out while management is disabled; nothing is granted", ("R-44", "R-58"), snapshot(
        P, victim(1, by=2, since=970), req(2, "high", "one", gpu=1), enabled=False), {
        1: "preempted PreemptedByPriority", 2: "pending ManagementDisabled #1"}),
    Case("a reclaimed victim keeps its reason when it ends preempted", ("R-44", "R-46"), snapshot(
        P, victim(1, by=2, since=900, reason=Reason.RECLAIMED), req(2, "high", "one", gpu=1)), {
        1: "preempted Reclaimed", 2: "allocated on p"}),
    Case("a released request holds nothing", ("R-51",), snapshot(
        P, replace(live(1), state=State.RELEASED, reason=Reason.RELEASED), req(2, "t", "one", gpu=1)), {
        1: "released Released", 2: "allocated on p"}),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_a_pass_ends_expired_leases_and_finished_grace_periods(case):
    assert outcome(case.snapshot) == case.expected


GRACE_SETTINGS = [
    # (id, grace, seconds since the victim was chosen, expected victim line)
    ("R-44 a 60 s grace is still running after 30 s", timedelta(seconds=60), 30, "preempting PreemptedByPriority by 2"),
    ("R-44 a 60 s grace is over after 60 s", timedelta(seconds=60), 60, "preempted PreemptedByPriority"),
    ("R-44 a 5 s grace is over after 5 s", timedelta(seconds=5), 5, "preempted PreemptedByPriority"),
    ("R-44 a 5 s grace is running after 4.999999 s", timedelta(seconds=5), 4.999999,
     "preempting PreemptedByPriority by 2"),
]


@pytest.mark.parametrize("name, grace, elapsed, line", GRACE_SETTINGS, ids=[row[0] for row in GRACE_SETTINGS])
def test_the_pass_reads_the_grace_period_from_the_snapshot(name, grace, elapsed, line):
    state = replace(snapshot(P, victim(1, by=2, since=1000 - elapsed), req(2, "high", "one", gpu=1)),
                    eviction_grace=grace)
    assert outcome(state)[1] == line


def test_a_requeued_victim_keeps_its_first_submission_time_and_counts_an_attempt():
    state = snapshot(P, victim(1, by=2, since=970, retries=2), req(2, "high", "one", gpu=1))
    result = plan(state)
    after = {r.id: r for r in carry_out(state, result).requests}
    evictions = [(d.request_id, d.from_state, d.state, d.reason) for d in result.evictions]
    assert (evictions, after[1].state, after[1].attempt, after[1].submitted_at, after[1].pool, after[2].state) == (
        [(1, State.PREEMPTING, State.PENDING, Reason.PREEMPTED_BY_PRIORITY)], State.PENDING, 2, at(1), None,
        State.ALLOCATED)


def test_s14_a_heartbeating_holder_keeps_its_lease_and_a_silent_one_loses_it():  # R-50, S-14
    cfg = config(pool("p", gpu=1), policy("t"), profile("one", "p", "t", gpu=1))
    first = replace(req(1, "t", "one", gpu=1, at_s=0), lease_seconds=10)
    state = Snapshot(at(1), cfg, (first, req(2, "t", "one", gpu=1, at_s=1)))
    state = carry_out(state, plan(state))  # t=1: the first is granted, its lease runs to 11 s
    lines = [outcome(state)]
    for second in (9, 17, 25):  # a heartbeat every 8 s: the lease never runs out; the last one runs to 35 s
        state = replace(state, now=at(second), requests=tuple(
            heartbeat(r, at(second)) if r.state.live else r for r in state.requests))
        state = carry_out(state, plan(state))
        lines.append(outcome(state))
    lines.append(outcome(with_now(state, at(35) - MICROSECOND)))
    lines.append(outcome(with_now(state, at(35))))  # silence since 25 s
    holding = {1: "allocated on p", 2: "pending WaitingForCapacity #1"}
    assert lines == [holding] * 5 + [{1: "expired LeaseExpired", 2: "allocated on p"}]
