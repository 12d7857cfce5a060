"""The invariant checker of docs/scheduling.md §10 (reconcile.invariants): each check accepts a clean state and
catches a hand-made violation, so none of them can pass by accident.

Each row: the case, the check's findings as ``"I-n: words the message contains"`` (empty: clean).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from reconcile import Plan, Reason, State, plan
from reconcile.invariants import (
    Violation, check_idempotent, check_preemptions, check_state, check_transition, check_usage,
)
from reconcile.ledger import Ledger
from reconcile.plan import Decision, Waiting
from reconcile.quantity import Vector
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot

A, P = State.ALLOCATED, State.PREEMPTING


def live(id, policy_name, pool_name="dc", state=A, **kw):
    return req(id, policy_name, "job", state=state, pool=pool_name, **kw)


def matches(found: list[Violation], expected: list[str]) -> bool:
    """Each expected "I-n: fragment" is one finding, in order, of that invariant with that fragment."""
    if len(found) != len(expected):
        return False
    for violation, want in zip(found, expected):
        invariant, fragment = want.split(": ", 1)
        if violation.invariant != invariant or fragment not in violation.message:
            return False
    return True


# --- I-1 … I-4: check_state ------------------------------------------------------------------

TWO = config(pool("dc", gpu=2, step_run=3), pool("b", gpu=2), profile("job", ("dc", "b"), ("ml", "cv"), dynamic=True),
             policy("ml", "dc:gpu /1", "*:gpu /3"), policy("cv", "dc:gpu 1/2", "dc:step_run 3/"))
SHRUNK = replace(TWO, pools=(pool("dc", gpu=1, step_run=3), pool("b", gpu=2)))
LOWERED = replace(TWO, policies=(policy("ml", "dc:gpu /0.5", "*:gpu /3"), TWO.policy["cv"]))

STATE_CASES = [  # (name, state, baseline or None, findings)
    ("clean: full but not over",
     snapshot(TWO, live(1, "cv", gpu=1.5), live(2, "ml", "b", gpu=2)), None, []),
    ("I-1 gpu over capacity",
     snapshot(TWO, live(1, "cv", gpu=1.5), live(2, "ml", gpu=0.5), live(3, "ml", gpu=0.125)), None,
     ["I-1: pool dc: 2.125 gpu in use, above its capacity of 2"]),
    ("I-1 metered step_run",
     snapshot(TWO, *(live(i, "cv", "dc") for i in (1, 2, 3, 4))), None, ["I-1: 4 step_run in use, above its capacity of 3"]),
    ("unmetered step_run and mcpu are never over",
     snapshot(TWO, *(live(i, "cv", "b", mcpu=9000) for i in (1, 2, 3))), None, []),
    ("I-1 a custom key the pool lacks has capacity 0",
     snapshot(TWO, live(1, "cv", "b", licence=1)), None, ["I-1: pool b: 1 licence in use, above its capacity of 0"]),
    ("preempting still holds capacity",
     snapshot(TWO, live(1, "cv", gpu=2), live(2, "ml", state=P, gpu=0.5)), None, ["I-1: 2.5 gpu in use"]),
    ("terminal and pending hold nothing",
     snapshot(TWO, live(1, "cv", gpu=2), req(2, "cv", "job", gpu=2), live(3, "cv", gpu=2, state=State.RELEASED)), None, []),
    ("I-2 pool-scope limit",
     snapshot(TWO, live(1, "ml", gpu=0.5), live(2, "ml", gpu=0.75)), None,
     ["I-2: policy ml uses 1.25 gpu on pool dc, above its limit of 1"]),
    ("I-2 limit across all pools",
     snapshot(TWO, live(1, "ml", gpu=1), live(2, "ml", "b", gpu=2), live(3, "ml", "b", gpu=0.5)), None,
     ["I-1: pool b: 2.5 gpu", "I-2: policy ml uses 3.5 gpu across all pools, above its limit of 3"]),
    ("I-3 non-preemptible above its reservation",
     snapshot(TWO, live(1, "cv", preemptible=False, gpu=1), live(2, "cv", preemptible=False, gpu=0.5)), None,
     ["I-3: non-preemptible requests of policy cv use 1.5 gpu on pool dc, above its reservation of 1"]),
    ("I-3 no reservation row means 0",
     snapshot(TWO, live(1, "ml", "b", preemptible=False, gpu=0.5)), None,
     ["I-3: policy ml use 0.5 gpu on pool b, above its reservation of 0"]),
    ("I-3 counts metered step_run too",
     snapshot(TWO, live(1, "ml", preemptible=False)),
     None, ["I-3: policy ml use 1 step_run on pool dc, above its reservation of 0"]),
    ("preemptible usage may borrow past the reservation",
     snapshot(TWO, live(1, "cv", preemptible=False, gpu=1), live(2, "cv", gpu=1)), None, []),
    ("I-4 a duplicate id",
     snapshot(TWO, live(1, "cv", gpu=1), req(1, "cv", "job")), None, ["I-4: request id 1 appears 2 times"]),
    ("I-4 live without a pool",
     snapshot(TWO, live(1, "cv", None)), None, ["I-4: request 1 is allocated on unknown pool None"]),
    ("I-4 live on an unknown pool",
     snapshot(TWO, live(1, "cv", "gone")), None, ["I-4: on unknown pool 'gone'"]),
    # a provision shrank dc to 1 gpu under 1.5 in use.
    ("over-commitment after a shrink is allowed",
     snapshot(SHRUNK, live(1, "cv", gpu=1.5)), snapshot(TWO, live(1, "cv", gpu=1.5)), []),
    ("and stays allowed while it shrinks",
     snapshot(SHRUNK, live(1, "cv", gpu=1.5)), snapshot(SHRUNK, live(1, "cv", gpu=1.5), live(2, "ml", gpu=0.5)), []),
    ("but nothing new may be granted on it",
     snapshot(SHRUNK, live(1, "cv", gpu=1.5), live(3, "ml", gpu=0.125)),
     snapshot(SHRUNK, live(1, "cv", gpu=1.5), live(2, "ml", gpu=0.5)), ["I-1: pool dc: 1.625 gpu in use"]),
    ("and usage may not grow",
     snapshot(SHRUNK, live(1, "cv", gpu=1.5), live(2, "ml", gpu=0.5)), snapshot(SHRUNK, live(1, "cv", gpu=1.5)),
     ["I-1: pool dc: 2 gpu in use"]),
    ("a limit lowered under usage is over-commitment too",
     snapshot(LOWERED, live(1, "ml", gpu=1)), snapshot(TWO, live(1, "ml", gpu=1)), []),
    ("without the baseline it is a violation",
     snapshot(LOWERED, live(1, "ml", gpu=1)), None, ["I-2: policy ml uses 1 gpu on pool dc, above its limit of 0.5"]),
    ("a re-grant after eviction is new",
     snapshot(SHRUNK, live(1, "cv", gpu=1.5, allocated_s=50)), snapshot(SHRUNK, live(1, "cv", gpu=1.5, allocated_s=1)),
     ["I-1: pool dc: 1.5 gpu in use"]),
]


@pytest.mark.parametrize("name, state, baseline, expected", STATE_CASES, ids=[c[0] for c in STATE_CASES])
def test_check_state(name, state, baseline, expected):  # I-1, I-2, I-3, I-4, R-57
    found = check_state(state, baseline=baseline)
    assert matches(found, expected), found


# --- I-5: check_usage -------------------------------------------------------------------------

USAGE = snapshot(TWO, live(1, "cv", gpu=1), live(2, "ml", "b", preemptible=False, gpu=0.5, mcpu=500),
req(3, "cv", "job", gpu=1),
                 live(4, "cv", gpu=1, state=State.RELEASED))


def _ledger(*charges, config=TWO) -> Ledger:
    ledger = Ledger(config)
    for policy_name, pool_name, preemptible, amounts in charges:
        ledger.charge(policy_name, pool_name, Vector.parse(amounts), preemptible)
    return ledger


# Pool b meters only gpu: request 2's mcpu and step_run there use up nothing (docs/decisions.md §3).
CV_ON_DC = ("cv", "dc", True, {"gpu": 1, "step_run": 1})
ML_ON_B = ("ml", "b", False, {"gpu": 0.5, "mcpu": 500, "step_run": 1})
USAGE_CASES = [
    ("a ledger of the live allocations", Ledger.of_live(USAGE.requests, TWO), []),
    ("charged one by one", _ledger(CV_ON_DC, ML_ON_B), []),
    ("zero entries are ignored", _ledger(CV_ON_DC, ("cv", "b", True, {}), ML_ON_B), []),
    ("a release not discharged", _ledger(("cv", "dc", True, {"gpu": 2, "step_run": 2}), ML_ON_B),
     ["I-5: pool_used[dc] is gpu=2, step_run=2, live allocations sum to gpu=1, step_run=1",
      "I-5: policy_used[('cv', '*')]", "I-5: policy_used[('cv', 'dc')]"]),
    ("non-preemptible usage missing", _ledger(CV_ON_DC, ("ml", "b", True, ML_ON_B[3])),
     ["I-5: nonpreemptible_used[('ml', '*')] is , live allocations sum to gpu=0.5",
      "I-5: nonpreemptible_used[('ml', 'b')]"]),
    ("unmetered keys counted", _ledger(CV_ON_DC, ML_ON_B, config=None),
     ["I-5: pool_used[b] is gpu=0.5, mcpu=500, step_run=1, live allocations sum to gpu=0.5",
      "I-5: policy_used[('ml', '*')]", "I-5: policy_used[('ml', 'b')]", "I-5: nonpreemptible_used[('ml', '*')]",
      "I-5: nonpreemptible_used[('ml', 'b')]"]),
]


@pytest.mark.parametrize("name, cached, expected", USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_check_usage(name, cached, expected):  # I-5
    found = check_usage(USAGE, cached)
    assert matches(found, expected), found


# --- I-6: check_transition --------------------------------------------------------------------

DONE = replace(live(1, "cv", gpu=1), state=State.RELEASED, reason=Reason.RELEASED)
BEFORE = snapshot(TWO, DONE, req(2, "cv", "job", gpu=1), req(3, "ml", "job", state=State.REJECTED))

TRANSITION_CASES = [
    ("pending may move, terminal stays",
     snapshot(TWO, DONE, live(2, "cv", gpu=1), req(3, "ml", "job", state=State.REJECTED)), []),
    ("released back to allocated",
     snapshot(TWO, replace(DONE, state=A), req(2, "cv", "job", gpu=1), req(3, "ml", "job", state=State.REJECTED)),
     ["I-6: request 1 was released, then"]),
    ("a terminal request's reason rewritten",
     snapshot(TWO, replace(DONE, reason=Reason.LEASE_EXPIRED), req(2, "cv", "job", gpu=1),
              req(3, "ml", "job", state=State.REJECTED)),
     ["I-6: request 1 was released"]),
    ("a terminal request gone",
     snapshot(TWO, DONE, req(2, "cv", "job", gpu=1)), ["I-6: request 3 was rejected, then gone"]),
]


@pytest.mark.parametrize("name, after, expected", TRANSITION_CASES, ids=[c[0] for c in TRANSITION_CASES])
def test_check_transition(name, after, expected):  # I-6
    found = check_transition(BEFORE, after)
    assert matches(found, expected), found


# --- I-7: check_preemptions -------------------------------------------------------------------

# low and peer may lose capacity; high outranks them; owner has 2 gpu in share over all pools.
RANKS = config(
    pool("dc", gpu=2, mcpu=4000), pool("b", gpu=2), profile("job", "dc", ("low", "high", "peer", "owner"), dynamic=True),
    profile("far", "b", ("low", "high"), dynamic=True),
    policy("low", priority=1), policy("high", "dc:gpu /1", priority=5), policy("peer", "dc:gpu 2/", priority=1),
    policy("owner", "*:gpu 2/", priority=1),
)


def preempt(victim: int, by: int, reason=Reason.PREEMPTED_BY_PRIORITY, pool_name="dc") -> Decision:
    return Decision(victim, P, reason, "chosen", from_state=A, pool=pool_name, preempted_by=by)


def with_plan(state, *preemptions: Decision):
    return state, Plan(state.now, preemptions=preemptions)


def engine(state):
    result = plan(state)
    assert result.preemptions, "the engine should preempt here; the clean case would test nothing"
    return state, result


BY_PRIORITY = snapshot(RANKS, live(1, "low", gpu=2), req(2, "high", "job", gpu=1))
RECLAIM = snapshot(RANKS, live(1, "low", gpu=2), req(2, "peer", "job", gpu=1))

PREEMPTION_CASES = [  # (name, snapshot, plan, findings)
    ("the engine by priority", *engine(BY_PRIORITY), []),
    ("the engine reclaiming borrowed units", *engine(RECLAIM), []),
    ("reclaim named as such", *with_plan(RECLAIM, preempt(1, 2, Reason.RECLAIMED)), []),
    ("R-30 while management is disabled",
     *with_plan(replace(BY_PRIORITY, management_enabled=False), preempt(1, 2)), ["I-7: management is disabled"]),
    ("R-41 a victim of the preemptor's own policy",
     *with_plan(snapshot(RANKS, live(1, "low", gpu=2), req(2, "low", "job", gpu=1)), preempt(1, 2)),
     ["I-7: request 1 preempted for request 2 on pool dc: the victim is allocated, preemptible=True, of policy low"]),
    ("R-41 a non-preemptible victim",
     *with_plan(snapshot(RANKS, live(1, "low", preemptible=False, gpu=2), req(2, "high", "job", gpu=1)), preempt(1, 2)),
     ["I-7: preemptible=False"]),
    ("R-41 a victim already preempting",
     *with_plan(snapshot(RANKS, live(1, "low", state=P, gpu=2), req(2, "high", "job", gpu=1)), preempt(1, 2)),
     ["I-7: the victim is preempting"]),
    ("R-41 a victim on another pool",
     *with_plan(snapshot(RANKS, live(1, "low", "b", gpu=2), live(3, "low", gpu=2), req(2, "high", "job", gpu=1)),
                preempt(1, 2)),
     ["I-7: on pool b"]),
    ("R-41 a victim holding none of what is short",
     *with_plan(snapshot(RANKS, live(1, "low", mcpu=1000), live(3, "low", preemptible=False, gpu=2),
     req(2, "high", "job", gpu=1)),
                preempt(1, 2)),
     ["I-7: the victim holds none of the keys the preemptor is short of (gpu)"]),
    ("R-41 equal priority, the preemptor would borrow",
     *with_plan(snapshot(RANKS, live(1, "owner", gpu=2), req(2, "low", "job", gpu=1)), preempt(1, 2, Reason.RECLAIMED)),
     ["I-7: priority 1 is not below 1 and the preemptor would borrow"]),
    ("R-41 reclaim from a victim in share",
     *with_plan(snapshot(RANKS, live(1, "owner", gpu=2), req(2, "peer", "job", gpu=1)), preempt(1, 2, Reason.RECLAIMED)),
     ["I-7: priority 1 is not below 1 and the victim holds no borrowed gpu"]),
    ("R-41 the borrowed units are the newest",
     *with_plan(snapshot(RANKS, live(1, "owner", gpu=1, allocated_s=5), live(3, "owner", gpu=1, allocated_s=9),
                         live(4, "owner", "b", gpu=1, allocated_s=1), req(2, "peer", "job", gpu=1)),
                preempt(3, 2, Reason.RECLAIMED)),
     []),
    ("R-41 the oldest of them is in share",
     *with_plan(snapshot(RANKS, live(1, "owner", gpu=1, allocated_s=5), live(3, "owner", gpu=1, allocated_s=9),
                         live(4, "owner", gpu=0.5, allocated_s=10), req(2, "peer", "job", gpu=1)),
                preempt(1, 2, Reason.RECLAIMED)),
     ["I-7: the victim holds no borrowed gpu"]),
    ("R-44 a priority eviction called a reclaim",
     *with_plan(BY_PRIORITY, preempt(1, 2, Reason.RECLAIMED)),
     ["I-7: reason Reclaimed, where the rule that applies gives PreemptedByPriority"]),
    ("R-40 a preemptor with victims in flight",
     *with_plan(snapshot(RANKS, live(1, "low", gpu=1), replace(live(3, "low", gpu=1), state=P, preempted_by=2),
                         req(2, "high", "job", gpu=2)),
                preempt(1, 2)),
     ["I-7: already has victims in flight"]),
    ("R-40 a preemptor not pending",
     *with_plan(snapshot(RANKS, live(1, "low", gpu=1), live(2, "high", gpu=1)), preempt(1, 2)),
     ["I-7: the preemptor is allocated"]),
    ("R-40 a victim claimed twice",
     *with_plan(snapshot(RANKS, live(1, "low", gpu=2), req(2, "high", "job", gpu=1), req(3, "high", "job", gpu=1)),
                preempt(1, 2), preempt(1, 3)),
     ["I-7: request 1 preempted for request 3 on pool dc: the victim is claimed twice"]),
    ("R-40 a pool the preemptor's profile does not use",
     *with_plan(snapshot(RANKS, live(1, "low", "b", gpu=2), req(2, "high", "job", gpu=1)), preempt(1, 2, pool_name="b")),
     ["I-7: pool b is not connected to profile job"]),
    ("R-48 a victim that has not run its policy's min_runtime_seconds",
     *with_plan(snapshot(replace(RANKS, policies=tuple(replace(p, min_runtime_seconds=600) if p.name == "low" else p
                                                       for p in RANKS.policies)),
                         live(1, "low", gpu=2, allocated_s=900), req(2, "high", "job", gpu=1)), preempt(1, 2)),
     ["I-7: the victim has run less than the 600 s of its policy's min_runtime_seconds (R-48)"]),
]


@pytest.mark.parametrize("name, state, result, expected", PREEMPTION_CASES, ids=[c[0] for c in PREEMPTION_CASES])
def test_check_preemptions(name, state, result, expected):  # I-7, R-40, R-41, R-44
    found = check_preemptions(state, result)
    assert matches(found, expected), found


def test_preemption_is_judged_after_the_grants_of_the_same_pass():  # I-7
    """Granted in this pass, request 3 is live at preemption time: it makes the room short."""
    state = snapshot(RANKS, live(1, "low", gpu=1), req(3, "low", "job", gpu=1), req(2, "high", "job", gpu=1))
    grant = Decision(3, A, Reason.GRANTED, "granted", pool="dc")
    assert check_preemptions(state, Plan(state.now, grants=(grant,), preemptions=(preempt(1, 2),))) == []
    found = check_preemptions(state, Plan(state.now, preemptions=(preempt(1, 2),)))
    assert matches(found, ["I-7: the victim holds none of the keys the preemptor is short of ()"]), found


# --- I-8: check_idempotent --------------------------------------------------------------------


def test_a_settled_pass_changes_nothing_the_second_time():  # I-8
    assert check_idempotent(BY_PRIORITY) == [] and check_idempotent(RECLAIM) == []
    first = plan(BY_PRIORITY)
    assert check_idempotent(BY_PRIORITY, first=first) == []


def test_a_second_pass_that_decides_again_is_caught():  # I-8
    """With no grace at all the eviction chosen in the first pass is finished by the second."""
    no_grace = replace(BY_PRIORITY, eviction_grace=timedelta(0))
    found = check_idempotent(no_grace)
    assert matches(found, ["I-8: the second pass decides again: request 1 preempting → preempted",
                           "I-8: the second pass decides again: request 2 pending → allocated"]), found


def test_a_stale_first_plan_is_caught():  # I-8
    """Passing a plan that left work undone: the second pass grants what the first should have."""
    state = snapshot(RANKS, req(1, "low", "job", gpu=1))
    found = check_idempotent(state, first=Plan(state.now))
    assert matches(found, ["I-8: the second pass decides again: request 1 pending → allocated"]), found


def test_a_second_pass_that_rewrites_a_reason_is_caught():  # I-8, §9
    """The first plan said quota; the state says capacity: the second pass rewrites the reason."""
    state = snapshot(RANKS, live(1, "low", gpu=2), req(2, "low", "job", gpu=1))
    said = Plan(state.now, waiting={2: Waiting(Reason.WAITING_FOR_QUOTA, "limit reached", 1, "dc")})
    found = check_idempotent(state, first=said)
    assert matches(found, ["I-8: the second pass rewrites a reason: request 2 WaitingForQuota → WaitingForCapacity"]), \
        found
    assert check_idempotent(state) == []
