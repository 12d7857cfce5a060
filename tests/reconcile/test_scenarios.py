"""The acceptance scenarios S-1…S-14 (docs/scheduling.md §11 works the main ones through) at engine
level, rounds that must settle, and configuration changes (R-56, R-57).

A story is a configuration and a list of steps. Each step applies actions (submit, release,
cancel, time passing, the management switch, a provision), then runs passes until one changes
nothing, and compares the state of every request with what the step expects. Step n starts 10 s
after step n-1, plus any wait it asks for. After every step the last pass must be empty (I-8),
terminal requests unchanged (I-6) and I-1…I-4 hold, usage above a lowered bound being allowed
only as R-57 over-commitment that has not grown during the step.

S-10 step 2 releases the two allocated halves; the third half, still queued, would take the freed
room before any mig, so the step cancels it to reach the six migs the scenario expects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest

from reconcile import Config, Snapshot, Vector, lifecycle, plan
from reconcile.invariants import check_state, check_transition
from reconcile.quantity import format_quantity
from reconcile.report import usage_report
from tests.reconcile.actions import acted
from tests.reconcile.builders import T0, config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import case_id, describe, settle

Action = Callable[[Snapshot], Snapshot]


# --- actions --------------------------------------------------------------------------------------

def submit(id: int, policy: str, profile: str, *, preemptible: bool = True, retries: int = 0,
           **amounts) -> Action:
    """A new pending request, submitted now: the profile's allotment overridden by ``amounts``."""
    def act(s: Snapshot) -> Snapshot:
        request = req(id, policy, profile, preemptible=preemptible, retries=retries,
                      at_s=(s.now - T0).total_seconds(), **amounts)
        allotment = s.config.profile[profile].resources
        resources = Vector({**allotment, **request.resources})
        return replace(s, requests=s.requests + (replace(request, resources=resources),))
    return act


def _user(change, id: int) -> Action:
    def act(s: Snapshot) -> Snapshot:
        return replace(s, requests=tuple(acted(change, r, s.now) if r.id == id else r for r in s.requests))
    return act


def release(id: int) -> Action:
    return _user(lifecycle.release, id)


def cancel(id: int) -> Action:
    return _user(lifecycle.cancel, id)


def wait(seconds: float) -> Action:
    return lambda s: replace(s, now=s.now + timedelta(seconds=seconds))


def management(enabled: bool) -> Action:
    return lambda s: replace(s, management_enabled=enabled)


def provision(cfg: Config) -> Action:
    return lambda s: replace(s, config=cfg)


# --- stories --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    actions: tuple[Action, ...]
    expected: dict[int, str]


def step(*actions: Action, expect: dict[int, str]) -> Step:
    return Step(actions, expect)


@dataclass(frozen=True)
class Story:
    name: str
    rules: tuple[str, ...]
    config: Config
    steps: tuple[Step, ...]
    enabled: bool = True

    def __str__(self) -> str:  # the shape of cases.Case, so cases.case_id names it
        return f"{'+'.join(self.rules)} {self.name}"


def run(story: Story) -> list[dict[int, str]]:
    """Every step's outcome, each once passes have settled; invariants checked on the way."""
    s = snapshot(story.config, now=0, enabled=story.enabled)
    seen = []
    for number, current in enumerate(story.steps, 1):
        s = wait(10)(s)  # step n starts 10 s after step n-1 ended: at 10 s, 20 s, … plus any wait
        for act in current.actions:
            s = act(s)
        before, s = s, settle(s)
        last = plan(s)
        assert last.empty, f"step {number}: the last pass still changed something"
        check_invariants(before, s, number)
        seen.append(describe(s, last))
    return seen


def check_invariants(before: Snapshot, after: Snapshot, number: int) -> None:
    """I-1…I-4 (usage above a bound only as R-57 over-commitment since ``before``) and I-6."""
    violations = check_state(after, baseline=before) + check_transition(before, after)
    assert not violations, f"step {number}: {violations}"


# --- configurations -------------------------------------------------------------------------------

DC = config(pool("dc", gpu=8), policy("ml", "dc:gpu 4/8", priority=10), profile("job", "dc", "ml", dynamic=True))
TRAIN = config(pool("train", gpu=4), policy("k8s", "train:gpu 2/4"), profile("job", "train", "k8s", dynamic=True))
TRAIN_MCPU = config(pool("train", gpu=4, mcpu=8000), policy("k8s", "train:gpu 2/4"),
                    profile("job", "train", "k8s", dynamic=True))
BIG = config(pool("big", gpu=16, step_run=10), policy("t", "big:gpu 8/16", "big:step_run 4/4"),
             profile("job", "big", "t", dynamic=True))
SMALL = config(pool("small", gpu=8), policy("a", "small:gpu 2/4"), profile("job", "small", "a", dynamic=True))
P2 = config(pool("p", gpu=2), policy("c", "p:gpu 1/2"), profile("job", "p", "c", dynamic=True))


def low_high(low_quota: str):
    return config(pool("p", gpu=1), policy("low", low_quota, priority=1), policy("high", "p:gpu 0/1", priority=2),
                  profile("job", "p", ("low", "high"), dynamic=True))


A100 = config(pool("a100", gpu=1), policy("t"), profile("half", "a100", "t", gpu=0.5),
              profile("mig", "a100", "t", gpu=0.143))
ORDERED = config(pool("p", order=("small", "big"), gpu=4), policy("t"), profile("small", "p", "t", gpu=1),
                 profile("big", "p", "t", gpu=2))


# --- the acceptance scenarios ---------------------------------------------------------------------

SCENARIOS = [
    Story("a preemptible request borrows past its reservation", ("S-2", "R-21"), DC, (
        step(submit(1, "ml", "job", gpu=6), expect={1: "allocated on dc"}),
    )),
    Story("non-preemptible requests live inside the reservation", ("S-3", "R-13", "R-22"), DC, (
        step(submit(1, "ml", "job", preemptible=False, gpu=2), expect={1: "allocated on dc"}),
        step(submit(2, "ml", "job", preemptible=False, gpu=6),
        expect={1: "allocated on dc", 2: "rejected ExceedsReserved"}),
    )),
    Story("unmetered keys are not checked", ("S-4", "R-11"), TRAIN, (
        step(submit(1, "k8s", "job", preemptible=False, gpu=1, mcpu=32000, memory_mb=68720),
        expect={1: "allocated on train"}),
    )),
    Story("a metered key the policy does not mention", ("S-5", "R-12", "R-13"), TRAIN_MCPU, (
        step(submit(1, "k8s", "job", gpu=1, mcpu=4000), expect={1: "allocated on train"}),
        step(submit(2, "k8s", "job", preemptible=False, gpu=1, mcpu=1000),
             expect={1: "allocated on train", 2: "rejected ExceedsReserved"}),
    )),
    Story("capping concurrency with step_run", ("S-6", "R-21"), BIG, (
        step(*(submit(i, "t", "job", gpu=2) for i in (1, 2, 3, 4)),
             expect={i: "allocated on big" for i in (1, 2, 3, 4)}),
        step(submit(5, "t", "job", gpu=2),
             expect={**{i: "allocated on big" for i in (1, 2, 3, 4)}, 5: "pending WaitingForQuota #1"}),
        step(release(2),
             expect={1: "allocated on big", 2: "released Released", 3: "allocated on big", 4: "allocated on big",
                     5: "allocated on big"}),
    )),
    Story("never-satisfiable requests are rejected at once", ("S-7", "R-14"), SMALL, (
        step(submit(1, "a", "job", gpu=10), expect={1: "rejected ExceedsPoolCapacity"}),
        step(submit(2, "a", "job", gpu=6), expect={1: "rejected ExceedsPoolCapacity", 2: "rejected ExceedsLimit"}),
        step(submit(3, "a", "job", gpu=1, disk=1),
             expect={1: "rejected ExceedsPoolCapacity", 2: "rejected ExceedsLimit", 3: "rejected ResourceNotInPool"}),
    )),
    Story("no head-of-line blocking", ("S-8", "R-22", "R-33"), P2, (
        step(submit(1, "c", "job", preemptible=False, gpu=1), expect={1: "allocated on p"}),
        step(submit(2, "c", "job", preemptible=False, gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForReservation #1"}),
        step(submit(3, "c", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForReservation #1", 3: "allocated on p"}),
    )),
    Story("non-preemptible work is never evicted", ("S-9", "R-41"), low_high("p:gpu 1/1"), (
        step(submit(1, "low", "job", preemptible=False, gpu=1), expect={1: "allocated on p"}),
        step(submit(2, "high", "job", gpu=1), expect={1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    )),
    Story("strictly higher priority preempts", ("S-9", "R-41", "R-44", "R-46"), low_high("p:gpu 0/1"), (
        step(submit(1, "low", "job", gpu=1), expect={1: "allocated on p"}),
        step(submit(2, "high", "job", gpu=1),
             expect={1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
        step(release(1), expect={1: "preempted PreemptedByPriority", 2: "allocated on p"}),
    )),
    Story("fractional GPUs add up exactly", ("S-10", "R-20"), A100, (
        step(*(submit(i, "t", "half") for i in (1, 2, 3)),
             expect={1: "allocated on a100", 2: "allocated on a100", 3: "pending WaitingForCapacity #1"}),
        # The third half would take the freed room first, so it is withdrawn (module docstring).
        step(release(1), release(2), cancel(3), *(submit(i, "t", "mig") for i in range(4, 11)),
             expect={1: "released Released", 2: "released Released", 3: "cancelled CancelledByUser",
                     **{i: "allocated on a100" for i in range(4, 10)}, 10: "pending WaitingForCapacity #1"}),
    )),
    Story("execution order inside a pool", ("S-13", "R-30", "R-32.3"), ORDERED, (
        step(submit(1, "t", "big"), submit(2, "t", "big"), submit(3, "t", "small"), submit(4, "t", "small"),
             expect={1: "pending ManagementDisabled #3", 2: "pending ManagementDisabled #4",
                     3: "pending ManagementDisabled #1", 4: "pending ManagementDisabled #2"}),
        step(management(True),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p",
                     4: "allocated on p"}),
    ), enabled=False),
]


# --- rounds: several submissions, releases and time passing --------------------------------------

RECLAIM = config(pool("p", gpu=4), policy("a", "p:gpu 2/"), policy("b"), profile("job", "p", ("a", "b"), dynamic=True))

FLEET = config(pool("p", gpu=2), pool("q", gpu=1), policy("lo"), policy("hi", priority=5),
               profile("job", ("p", "q"), ("hi", "lo"), dynamic=True))

ROUNDS = [
    Story("a reservation is reclaimed from a borrower who comes back", ("R-41", "R-44", "R-46", "R-32.5"), RECLAIM, (
        step(submit(1, "b", "job", gpu=1, retries=1), submit(2, "b", "job", gpu=1, retries=1),
             expect={1: "allocated on p", 2: "allocated on p"}),
        step(submit(3, "b", "job", gpu=1, retries=1), submit(4, "b", "job", gpu=1, retries=1),
             expect={i: "allocated on p" for i in (1, 2, 3, 4)}),
        step(submit(5, "a", "job", gpu=2),
             expect={1: "allocated on p", 2: "allocated on p", 3: "preempting Reclaimed by 5",
                     4: "preempting Reclaimed by 5", 5: "pending WaitingForPreemption #1"}),
        step(wait(21),  # 31 s after the preemption: the grace is over
             expect={1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1",
                     4: "pending WaitingForCapacity #2", 5: "allocated on p"}),
        step(release(1),
             expect={1: "released Released", 2: "allocated on p", 3: "allocated on p",
                     4: "pending WaitingForCapacity #1", 5: "allocated on p"}),
        step(release(5),
             expect={1: "released Released", 2: "allocated on p", 3: "allocated on p", 4: "allocated on p",
                     5: "released Released"}),
    )),
    Story("preemption across two pools, the switch and expiring leases", ("R-30", "R-31", "R-40", "R-45", "R-46",
                                                                          "R-50"), FLEET, (
        step(submit(1, "lo", "job", gpu=2, retries=1), submit(2, "lo", "job", gpu=1, retries=1),
             expect={1: "allocated on p", 2: "allocated on q"}),
        step(submit(3, "hi", "job", gpu=1),
             expect={1: "preempting PreemptedByPriority by 3", 2: "allocated on q",
                     3: "pending WaitingForPreemption #1"}),
        # p is held for 3 and its victim is already leaving, so 4 finds its victim on q.
        step(submit(4, "hi", "job", gpu=1),
             expect={1: "preempting PreemptedByPriority by 3", 2: "preempting PreemptedByPriority by 4",
                     3: "pending WaitingForPreemption #1", 4: "pending WaitingForPreemption #2"}),
        # Both graces end: 3 and 4 both fit on p, their preferred pool; 2 comes back on q.
        step(wait(21),
             expect={1: "pending WaitingForCapacity #1", 2: "allocated on q", 3: "allocated on p",
                     4: "allocated on p"}),
        step(management(False), release(3), release(4),
             expect={1: "pending ManagementDisabled #1", 2: "allocated on q", 3: "released Released",
                     4: "released Released"}),
        step(management(True),
             expect={1: "allocated on p", 2: "allocated on q", 3: "released Released", 4: "released Released"}),
        # 2 was granted again at 61 s, 1 at 81 s; at 372 s only 2's lease of 300 s has run out.
        step(wait(281),
             expect={1: "allocated on p", 2: "expired LeaseExpired", 3: "released Released",
                     4: "released Released"}),
    )),
]


# --- configuration changes ------------------------------------------------------------------------

TWO_QUEUES = config(pool("p", gpu=2), policy("a"), policy("b"), profile("job", "p", ("a", "b"), dynamic=True),
                    profile("other", "p", ("a", "b"), dynamic=True))
B_DROPPED_FROM_JOB = config(pool("p", gpu=2), policy("a"), policy("b"), profile("job", "p", "a", dynamic=True),
                            profile("other", "p", ("a", "b"), dynamic=True))
ONLY_A_JOB = config(pool("p", gpu=2), policy("a"), profile("job", "p", "a", dynamic=True))
SHRUNK = config(pool("p", gpu=1), policy("a"), profile("job", "p", "a", dynamic=True))

METERED = config(pool("p", gpu=4, mcpu=8000), policy("t"), profile("job", "p", "t", dynamic=True))
METERED_SHRUNK = config(pool("p", gpu=2, mcpu=8000), policy("t"), profile("job", "p", "t", dynamic=True))


def limited(limit: int):
    return config(pool("p", gpu=8), pool("q", gpu=8), policy("t", f"*:gpu /{limit}"), policy("u"),
                  profile("job", ("p", "q"), ("t", "u"), dynamic=True))


PROVISIONS = [
    Story("a queue removed from its profile cancels its pending requests only", ("R-56", "R-57"), TWO_QUEUES, (
        step(submit(1, "b", "job", gpu=2), expect={1: "allocated on p"}),
        step(submit(2, "b", "job", gpu=1), submit(3, "b", "other", gpu=1), submit(4, "a", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #2", 3: "pending WaitingForCapacity #3",
                     4: "pending WaitingForCapacity #1"}),
        step(provision(B_DROPPED_FROM_JOB),
             expect={1: "allocated on p", 2: "cancelled QueueRemoved", 3: "pending WaitingForCapacity #2",
                     4: "pending WaitingForCapacity #1"}),
        step(release(1),
             expect={1: "released Released", 2: "cancelled QueueRemoved", 3: "allocated on p", 4: "allocated on p"}),
    )),
    Story("removing a profile and a policy cancels their pending requests", ("R-56",), TWO_QUEUES, (
        step(submit(1, "a", "job", gpu=2), submit(2, "a", "other", gpu=1), submit(3, "b", "job", gpu=1),
             submit(4, "a", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #3", 3: "pending WaitingForCapacity #2",
                     4: "pending WaitingForCapacity #1"}),
        step(provision(ONLY_A_JOB),
             expect={1: "allocated on p", 2: "cancelled QueueRemoved", 3: "cancelled QueueRemoved",
                     4: "pending WaitingForCapacity #1"}),
    )),
    Story("a pending request no longer eligible after a provision is rejected", ("R-56", "R-15"), TWO_QUEUES, (
        step(submit(1, "a", "job", gpu=2), submit(2, "a", "job", gpu=1), submit(3, "a", "job", gpu=2),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "pending WaitingForCapacity #2"}),
        step(release(1), provision(SHRUNK),
             expect={1: "released Released", 2: "allocated on p", 3: "rejected ExceedsPoolCapacity"}),
    )),
    Story("a pool shrunk below its usage keeps its allocations and grants no more of that key",
          ("R-57", "R-20"), METERED, (
        step(*(submit(i, "t", "job", gpu=1) for i in (1, 2, 3)), expect={i: "allocated on p" for i in (1, 2, 3)}),
        step(provision(METERED_SHRUNK), submit(4, "t", "job", gpu=1), submit(5, "t", "job", mcpu=1000),
             expect={1: "allocated on p", 2: "allocated on p", 3: "allocated on p",
                     4: "pending WaitingForCapacity #1", 5: "allocated on p"}),
        step(release(1),
             expect={1: "released Released", 2: "allocated on p", 3: "allocated on p",
                     4: "pending WaitingForCapacity #1", 5: "allocated on p"}),
        step(release(2),
             expect={1: "released Released", 2: "released Released", 3: "allocated on p", 4: "allocated on p",
                     5: "allocated on p"}),
    )),
    Story("a limit lowered below usage keeps the allocations and grants the policy no more",
          ("R-57", "R-21"), limited(10), (
        step(submit(1, "t", "job", gpu=1), submit(2, "t", "job", gpu=1), submit(3, "t", "job", gpu=7),
             expect={1: "allocated on p", 2: "allocated on p", 3: "allocated on q"}),
        step(provision(limited(2)), submit(4, "t", "job", gpu=1), submit(5, "u", "job", gpu=1),
             expect={1: "allocated on p", 2: "allocated on p", 3: "allocated on q", 4: "pending WaitingForQuota #1",
                     5: "allocated on p"}),
        step(release(3),
             expect={1: "allocated on p", 2: "allocated on p", 3: "released Released",
                     4: "pending WaitingForQuota #1", 5: "allocated on p"}),
        step(release(1),
             expect={1: "released Released", 2: "allocated on p", 3: "released Released", 4: "allocated on p",
                     5: "allocated on p"}),
    )),
]


# --- the time rules (issue 23) ---------------------------------------------------------------------

PROTECTED = config(pool("p", gpu=1), policy("low", priority=1, min_runtime_seconds=60), policy("high", priority=5),
                   profile("job", "p", ("low", "high"), dynamic=True))


def limited_runs(on_time_limit: str):
    return config(pool("p", gpu=1), policy("t", max_runtime_seconds=60, on_time_limit=on_time_limit),
                  profile("job", "p", "t", dynamic=True))


# a reserves the pool, b reserves nothing; b runs 1 gpu, a asks 2 while b asks 1 more.
RESERVED = config(pool("p", gpu=2), policy("a", "p:gpu 2/"), policy("b"), profile("job", "p", ("a", "b"), dynamic=True))



def big_behind_small(**big_rules) -> Config:
    """Pool p {gpu: 4}; small runs of 2 gpu, at most 50 s each, overlap, so 4 gpu are never free at
    once; a big job of 4 gpu waits behind them."""
    return config(pool("p", gpu=4), policy("big", **big_rules), policy("small", max_runtime_seconds=50),
                  profile("job", "p", ("big", "small"), dynamic=True))


def small_stream(at_111: dict[int, str], at_121: dict[int, str]) -> tuple[Step, ...]:
    return (
        step(submit(1, "small", "job", gpu=2), expect={1: "allocated on p"}),  # 10 s → 60 s
        step(submit(2, "small", "job", gpu=2), submit(3, "big", "job", gpu=4), submit(4, "small", "job", gpu=2),
             submit(5, "small", "job", gpu=2),  # 2: 20 s → 70 s
             expect={1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1",
                     4: "pending WaitingForCapacity #2", 5: "pending WaitingForCapacity #3"}),
        step(wait(31),  # 61 s: 1 ended; the 2 free gpu go to 4 (→ 111 s), big waited only 41 s
             expect={1: "expired TimeLimit", 2: "allocated on p", 3: "pending WaitingForCapacity #1",
                     4: "allocated on p", 5: "pending WaitingForCapacity #2"}),
        step(submit(6, "small", "job", gpu=2),  # 71 s: 2 ended; 5 runs to 121 s
             expect={1: "expired TimeLimit", 2: "expired TimeLimit", 3: "pending WaitingForCapacity #1",
                     4: "allocated on p", 5: "allocated on p", 6: "pending WaitingForCapacity #2"}),
        step(wait(30), expect=at_111),  # 111 s: 4 ended; big has waited 91 s
        step(expect=at_121),  # 121 s: 5 ended
    )


TIME_RULES = [
    Story("a fresh job is not preempted inside its protection, and is once it has run that long", ("R-48", "R-44"),
          PROTECTED, (
        step(submit(1, "low", "job", gpu=1), expect={1: "allocated on p"}),  # granted at 10 s: protected to 70 s
        step(submit(2, "high", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForProtectedVictims #1"}),
        step(wait(45),  # 75 s
             expect={1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
        step(wait(25),  # 110 s: the grace (30 s) is over
             expect={1: "preempted PreemptedByPriority", 2: "allocated on p"}),
    )),
    Story("a run ends at its policy's limit and the next one starts", ("R-52",), limited_runs("end"), (
        step(submit(1, "t", "job", gpu=1), submit(2, "t", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #1"}),  # 1 runs from 10 s to 70 s
        step(wait(35), expect={1: "allocated on p", 2: "pending WaitingForCapacity #1"}),  # 55 s: warned
        step(wait(10), expect={1: "expired TimeLimit", 2: "allocated on p"}),  # 75 s
    )),
    Story("runs at their limit queue anew and take turns", ("R-53", "R-32.5"), limited_runs("requeue"), (
        step(submit(1, "t", "job", gpu=1), submit(2, "t", "job", gpu=1),
             expect={1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
        step(wait(50), expect={1: "pending WaitingForCapacity #1", 2: "allocated on p"}),  # 70 s: 1's limit
        step(wait(60), expect={1: "allocated on p", 2: "pending WaitingForCapacity #1"}),  # 140 s: 2's limit
    )),
    Story("what a waiting request would reclaim is not granted, and the reclaim holds the room", ("R-47", "R-45"),
          RESERVED, (
        step(submit(1, "b", "job", gpu=1), expect={1: "allocated on p"}),
        step(submit(2, "a", "job", gpu=2), submit(3, "b", "job", gpu=1),
             expect={1: "preempting Reclaimed by 2", 2: "pending WaitingForPreemption #1",
                     3: "pending BlockedByHigherPriority #2"}),
        step(wait(30), expect={1: "preempted Reclaimed", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    )),
    Story("without a max wait a big job starves behind a stream of small ones", ("R-32",), big_behind_small(),
          small_stream(
              at_111={1: "expired TimeLimit", 2: "expired TimeLimit", 3: "pending WaitingForCapacity #1",
                      4: "expired TimeLimit", 5: "allocated on p", 6: "allocated on p"},
              at_121={1: "expired TimeLimit", 2: "expired TimeLimit", 3: "pending WaitingForCapacity #1",
                      4: "expired TimeLimit", 5: "expired TimeLimit", 6: "allocated on p"})),
    Story("past its max wait the big job reserves what frees and starts within max wait + run limit",
          ("R-49",), big_behind_small(max_wait_seconds=60), small_stream(
              at_111={1: "expired TimeLimit", 2: "expired TimeLimit", 3: "pending ReservingCapacity #1",
                      4: "expired TimeLimit", 5: "allocated on p", 6: "pending BlockedByHigherPriority #2"},
              at_121={1: "expired TimeLimit", 2: "expired TimeLimit", 3: "allocated on p",
                      4: "expired TimeLimit", 5: "expired TimeLimit", 6: "pending WaitingForCapacity #1"})),
]


STORIES = SCENARIOS + ROUNDS + PROVISIONS + TIME_RULES


@pytest.mark.parametrize("story", STORIES, ids=case_id)
def test_each_step_ends_in_the_expected_states(story: Story):
    assert run(story) == [current.expected for current in story.steps]


def test_s2_the_policy_shows_6_gpu_in_use_of_which_2_borrowed():
    s = settle(submit(1, "ml", "job", gpu=6)(snapshot(DC, now=10)))
    rows = {(row.scope, format_quantity(row.usage), format_quantity(row.borrowed))
            for row in usage_report(s.config, s.requests) if row.policy == "ml" and row.key == "gpu"}
    assert rows == {("dc", 6, 2), ("*", 6, 2)}
