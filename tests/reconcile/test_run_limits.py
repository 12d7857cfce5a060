"""Run limits (docs/scheduling.md R-52, R-53): a grant sets when the run ends; a grace before,
the holder is warned; at the limit the run ends, or is queued again where the policy says so."""

from __future__ import annotations

from dataclasses import replace

from reconcile import Reason, State, plan
from reconcile.transition import carry_out
from tests.reconcile.builders import at, config, policy, pool, preempting, profile, req, snapshot
from tests.reconcile.cases import describe

ALLOCATED = State.ALLOCATED


def one_pool(**terms):
    return config(pool("p", gpu=2), policy("t", **terms), policy("hi", priority=5),
                  profile("job", "p", ("t", "hi"), dynamic=True))


def running(ends_s: float, **kw):
    """Request 1 of policy t, 1 gpu, granted at 100 s, its run ending at ``ends_s``."""
    return replace(req(1, "t", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=100, **kw), time_limit_at=at(ends_s))


def test_r52_a_grant_sets_the_end_of_the_run_from_the_declared_limit():
    s = snapshot(one_pool(), replace(req(1, "t", "job", gpu=1), max_runtime_seconds=600))
    (grant,) = plan(s).grants
    assert grant.time_limit_at == at(1600)
    assert carry_out(s, plan(s)).requests[0].time_limit_at == at(1600)


def test_r52_the_policy_caps_a_declared_limit_and_gives_its_cap_to_a_request_without_one():
    capped = one_pool(max_runtime_seconds=300)
    s = snapshot(capped, replace(req(1, "t", "job", gpu=1), max_runtime_seconds=600), req(2, "t", "job", gpu=1))
    assert [g.time_limit_at for g in plan(s).grants] == [at(1300), at(1300)]
    shorter = snapshot(capped, replace(req(1, "t", "job", gpu=1), max_runtime_seconds=60))
    assert plan(shorter).grants[0].time_limit_at == at(1060)


def test_r52_without_a_limit_a_run_has_no_end():
    s = snapshot(one_pool(), req(1, "t", "job", gpu=1))
    assert plan(s).grants[0].time_limit_at is None


def test_r52_a_grace_before_the_limit_the_holder_is_warned_once_and_keeps_running():
    s = snapshot(one_pool(), running(ends_s=1020))  # the grace is 30 s; the pass runs at 1000 s
    result = plan(s)
    (warning,) = result.warnings
    assert (warning.state, warning.reason) == (ALLOCATED, Reason.TIME_LIMIT_NEAR)
    assert warning.message == ("its run limit comes at 2026-01-01 00:17:00 UTC: checkpoint and release before, "
                               "or it is ended")
    after = carry_out(s, result)
    assert (after.requests[0].state, after.requests[0].reason) == (ALLOCATED, Reason.TIME_LIMIT_NEAR)
    assert plan(after).empty  # I-8: warned once
    assert plan(snapshot(one_pool(), running(ends_s=1031))).warnings == ()


def test_r52_at_its_limit_a_run_ends_and_its_capacity_is_free():
    s = snapshot(one_pool(), running(ends_s=1000), req(2, "t", "job", gpu=2))
    assert describe(s, plan(s)) == {1: "expired TimeLimit", 2: "allocated on p"}
    assert plan(s).expiries[0].message == "its run limit came at 2026-01-01 00:16:40 UTC"


def test_r53_where_the_policy_says_so_a_run_at_its_limit_is_queued_anew_behind_those_waiting():
    s = snapshot(one_pool(on_time_limit="requeue"), running(ends_s=999, at_s=5),
                 req(2, "t", "job", gpu=2, at_s=50))
    result = plan(s)
    assert describe(s, result) == {1: "pending WaitingForCapacity #1", 2: "allocated on p"}
    (ended,) = result.expiries
    assert (ended.state, ended.reason) == (State.PENDING, Reason.TIME_LIMIT)
    requeued = carry_out(s, result).requests[0]
    assert (requeued.attempt, requeued.submitted_at, requeued.time_limit_at) == (2, at(1000), None)


def test_r53_with_nobody_waiting_a_run_queued_again_is_granted_again_in_the_same_pass():
    s = snapshot(one_pool(on_time_limit="requeue", max_runtime_seconds=60), running(ends_s=999))
    assert describe(s, plan(s)) == {1: "allocated on p"}
    assert plan(s).grants[0].time_limit_at == at(1060)


def test_r52_a_preempting_request_at_its_limit_ends_as_well():
    victim = preempting(running(ends_s=1000), by=2)
    s = snapshot(one_pool(), victim, req(2, "hi", "job", gpu=2, held="p"))
    assert describe(s, plan(s)) == {1: "expired TimeLimit", 2: "allocated on p"}


def test_r52_a_run_no_longer_than_the_grace_is_not_warned_apart_from_its_grant():
    s = snapshot(one_pool(max_runtime_seconds=20), req(1, "t", "job", gpu=1))
    granted = carry_out(s, plan(s))
    assert granted.requests[0].time_limit_at == at(1020) and plan(granted).empty
