"""Preemption and reclaim (R-40…R-46) and which units of a policy are borrowed.

Each case is a snapshot and the whole outcome of one pass. A request that went round again shows
its attempt and first submission time ("pending WaitingForCapacity #1, attempt 2 submitted at 5s").
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconcile import Reason, Request, Snapshot, State, plan
from reconcile.lifecycle import release
from reconcile.transition import carry_out
from tests.reconcile.actions import acted
from tests.reconcile.builders import T0, at, config, policy, pool, preempting, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, describe

ALLOCATED = State.ALLOCATED


def released(request: Request) -> Request:
    """What the holder's call to release leaves behind (R-51)."""
    return acted(release, request, at(995))


def outcome_with_attempts(s: Snapshot) -> dict[int, str]:
    """``cases.outcome`` plus, for a request past its first attempt, the attempt and first submission."""
    result = plan(s)
    lines = describe(s, result)
    for request in carry_out(s, result).requests:
        if request.attempt > 1:
            submitted = (request.submitted_at - T0).total_seconds()
            lines[request.id] += f", attempt {request.attempt} submitted at {submitted:g}s"
    return lines


# --- configurations ---------------------------------------------------------------------------

def one_pool(*policies, gpu=2, **capacity):
    names = tuple(p.name for p in policies)
    return config(pool("p", gpu=gpu, **capacity), *policies, profile("job", "p", names, dynamic=True))


LOW, MID, HIGH = policy("lo", priority=1), policy("mid", priority=3), policy("hi", priority=5)
PRIORITIES = one_pool(HIGH, MID, LOW)


def hi_with(*quotas: str, gpu=4):
    return one_pool(policy("hi", *quotas, priority=5), LOW, gpu=gpu)


def two_pools(*lo_quotas: str, hi_quotas: tuple[str, ...] = ()):
    return config(
        pool("p1", gpu=2), pool("p2", gpu=2), policy("lo", *lo_quotas, priority=1),
        policy("hi", *hi_quotas, priority=5), profile("job", ("p1", "p2"), ("hi", "lo"), dynamic=True),
    )


def reclaim(a_priority=0, b_priority=0, b_quota: str | None = "p:gpu 2/"):
    """Pool p of 4 gpu; a reserves 2 there; b's reservation varies."""
    b = policy("b", *([b_quota] if b_quota else []), priority=b_priority)
    return one_pool(policy("a", "p:gpu 2/", priority=a_priority), b, gpu=4)


def b_fills_p(first_s=10, second_s=20):
    """b's two allocations of 2 gpu, allocated at ``first_s`` and ``second_s``."""
    return (req(1, "b", "job", gpu=2, state=ALLOCATED, pool="p", allocated_s=first_s),
            req(2, "b", "job", gpu=2, state=ALLOCATED, pool="p", allocated_s=second_s))


# b reserves mcpu nowhere, so its mcpu is borrowed while its gpu is in share.
MCPU_BORROWER = one_pool(policy("a", "p:gpu 2/", "p:mcpu 1000/"), policy("b", "p:gpu 4/"), gpu=4, mcpu=8000)


def all_pools_share(first_s: float, second_s: float):
    """b reserves 2 gpu over p and q; it holds 2 on q and 2 on p; a is in share on p."""
    cfg = config(
        pool("p", gpu=2), pool("q", gpu=2), policy("a", "p:gpu 2/"), policy("b", "*:gpu 2/"),
        profile("job", ("p", "q"), ("a", "b"), dynamic=True), profile("on_p", "p", "a", dynamic=True),
    )
    return snapshot(cfg, req(1, "b", "job", gpu=2, state=ALLOCATED, pool="q", allocated_s=first_s),
                    req(2, "b", "job", gpu=2, state=ALLOCATED, pool="p", allocated_s=second_s),
                    req(3, "a", "on_p", gpu=2))


def preemptor_share_across_pools(a_on_q: str):
    """a reserves 2 gpu over all pools; ``a_on_q`` ("a" or "c") fills q; b borrows all of p."""
    cfg = config(
        pool("p", gpu=2), pool("q", gpu=2), policy("a", "*:gpu 2/"), policy("b"), policy("c"),
        profile("job", ("p", "q"), ("a", "b", "c"), dynamic=True), profile("on_p", "p", "a", dynamic=True),
    )
    return snapshot(cfg, req(1, a_on_q, "job", gpu=2, state=ALLOCATED, pool="q"),
                    req(2, "b", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "a", "on_p", gpu=2))


# --- R-40 which requests preempt, on which pool --------------------------------------------------

WHO_PREEMPTS = [
    Case("its own limit is never cured by evicting others", ("R-40", "R-21"),
         snapshot(hi_with("p:gpu /2"), req(1, "hi", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForQuota #1"}),
    Case("below its own limit it preempts for pool room", ("R-40", "R-21"),
         snapshot(hi_with("p:gpu /3"), req(1, "hi", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
    Case("its own non-preemptible share is never cured by evicting others", ("R-40", "R-22"),
         snapshot(hi_with("p:gpu 2/4"), req(1, "hi", "job", gpu=2, preemptible=False, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1, preemptible=False)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForReservation #1"}),
    Case("with its share free a non-preemptible request preempts for pool room", ("R-40", "R-22"),
         snapshot(hi_with("p:gpu 2/4"), req(1, "hi", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1, preemptible=False)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
    Case("a pool where its own limit is reached is passed over for the next", ("R-40", "R-21"),
         snapshot(two_pools(hi_quotas=("p1:gpu /1",)), req(1, "hi", "job", gpu=1, state=ALLOCATED, pool="p1"),
                  req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p1"),
                  req(3, "lo", "job", gpu=2, state=ALLOCATED, pool="p2"), req(4, "hi", "job", gpu=1)),
         {1: "allocated on p1", 2: "allocated on p1", 3: "preempting PreemptedByPriority by 4",
          4: "pending WaitingForPreemption #1"}),
    Case("victims are looked for on the preferred pool first", ("R-40",),
         snapshot(two_pools(hi_quotas=("p1:gpu /2",)), req(1, "hi", "job", gpu=1, state=ALLOCATED, pool="p1"),
                  req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p1"),
                  req(3, "lo", "job", gpu=2, state=ALLOCATED, pool="p2"), req(4, "hi", "job", gpu=1)),
         {1: "allocated on p1", 2: "preempting PreemptedByPriority by 4", 3: "allocated on p2",
          4: "pending WaitingForPreemption #1"}),
    Case("a pool where no victim set works is passed over for the next", ("R-40", "R-41"),
         snapshot(two_pools("p1:gpu 2/"), req(1, "lo", "job", gpu=2, preemptible=False, state=ALLOCATED, pool="p1"),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p2"), req(3, "hi", "job", gpu=2)),
         {1: "allocated on p1", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
    Case("a victim is claimed by one preemptor only", ("R-40",),
         snapshot(PRIORITIES, req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(2, "hi", "job", gpu=1),
                  req(3, "hi", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1",
          3: "pending WaitingForCapacity #2"}),
    Case("two preemptors each claim their own victims in one pass", ("R-40", "R-42"),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=3, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1),
                  req(4, "hi", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 4", 2: "preempting PreemptedByPriority by 3",
          3: "pending WaitingForPreemption #1", 4: "pending WaitingForPreemption #2"}),
    Case("preemptors choose in the order of service, not of submission", ("R-40", "R-32.1"),
         snapshot(PRIORITIES, req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), req(2, "mid", "job", gpu=2),
                  req(3, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 3", 2: "pending BlockedByHigherPriority #2",
          3: "pending WaitingForPreemption #1"}),
    Case("a preemptor with victims in flight does not preempt again", ("R-40", "R-45"),
         snapshot(one_pool(HIGH, LOW, gpu=5), preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=4),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(3, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(4, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 4", 2: "allocated on p", 3: "allocated on p",
          4: "pending WaitingForPreemption #1"}),
    Case("a request whose victims were chosen by another preempts for itself", ("R-40", "R-45"),
         snapshot(one_pool(HIGH, LOW, gpu=5), preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=9),
                  req(2, "lo", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(3, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(4, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 9", 2: "preempting PreemptedByPriority by 4", 3: "allocated on p",
          4: "pending WaitingForPreemption #1"}),
]


# --- R-41 who may be a victim --------------------------------------------------------------------

VICTIMS = [
    Case("at equal priority without a reservation nobody is preempted", ("R-41",),
         snapshot(one_pool(policy("a"), policy("b")), req(1, "a", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "b", "job", gpu=2)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("a strictly lower priority is preempted", ("R-41", "R-44"),
         snapshot(one_pool(policy("a"), policy("b", priority=1)), req(1, "a", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "b", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("non-preemptible work is never evicted", ("R-41",),
         snapshot(one_pool(HIGH, policy("lo", "p:gpu 2/", priority=1)),
                  req(1, "lo", "job", gpu=2, preemptible=False, state=ALLOCATED, pool="p"), req(2, "hi", "job", gpu=2)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("an in-share request reclaims the newest borrowed allocation at equal priority", ("R-41", "R-44"),
         snapshot(reclaim(), *b_fills_p(), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
    Case("a preemptor that would borrow reclaims nothing", ("R-41",),
         snapshot(reclaim(), *b_fills_p(), req(3, "a", "job", gpu=3)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("allocations within the victim's reservation are not reclaimed", ("R-41",),
         snapshot(reclaim(b_quota="p:gpu 4/"), *b_fills_p(), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("reclaim takes borrowed units from a higher priority policy", ("R-41", "R-44"),
         snapshot(reclaim(b_priority=5), *b_fills_p(), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
    Case("when the priority rule applies too the reason is the priority", ("R-41", "R-44"),
         snapshot(reclaim(a_priority=5), *b_fills_p(), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
    Case("a victim borrowing only a key the preemptor is not short on is kept", ("R-41",),
         snapshot(MCPU_BORROWER, req(1, "b", "job", gpu=2, mcpu=4000, state=ALLOCATED, pool="p"),
                  req(2, "b", "job", gpu=2, mcpu=4000, state=ALLOCATED, pool="p"), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("the same victim is reclaimed once the preemptor is short on the borrowed key", ("R-41",),
         snapshot(MCPU_BORROWER, req(1, "b", "job", gpu=2, mcpu=4000, state=ALLOCATED, pool="p"),
                  req(2, "b", "job", gpu=2, mcpu=4000, state=ALLOCATED, pool="p"),
                  req(3, "a", "job", gpu=2, mcpu=1000)),
         {1: "allocated on p", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
]


# --- which victims ------------------------------------------------------------------

CHOICE = [
    Case("the lowest priority goes first though allocated earlier", ("R-42",),
         snapshot(PRIORITIES, req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p"),
                  req(2, "mid", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("a borrowed allocation goes before an in-share one though allocated earlier", ("R-42",),
         snapshot(one_pool(HIGH, policy("a", "p:gpu 1/"), policy("b")),
                  req(1, "b", "job", gpu=1, state=ALLOCATED, pool="p"),
                  req(2, "a", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("between two in-share allocations the newest goes first", ("R-42",),
         snapshot(one_pool(HIGH, policy("a", "p:gpu 1/"), policy("b", "p:gpu 1/")),
                  req(1, "b", "job", gpu=1, state=ALLOCATED, pool="p"),
                  req(2, "a", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
    Case("victims are taken only until the preemptor fits", ("R-43",),
         snapshot(one_pool(HIGH, LOW, gpu=3),
                  *(req(i, "lo", "job", gpu=1, state=ALLOCATED, pool="p") for i in (1, 2, 3)),
                  req(4, "hi", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 4", 3: "preempting PreemptedByPriority by 4",
          4: "pending WaitingForPreemption #1"}),
    Case("the reverse walk spares an earlier victim the later ones make unneeded", ("R-43",),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=3, state=ALLOCATED, pool="p"),
                  req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=3)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("when all candidates together are not enough nobody is preempted", ("R-43",),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p"),
                  req(2, "hi", "job", gpu=3, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=2)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("when the candidates are just enough they are preempted", ("R-43",),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "hi", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("a request granted in this pass can be preempted in the same pass", ("R-40", "R-43"),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"),
                  req(2, "hi", "job", gpu=3), req(3, "lo", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1",
          3: "preempting PreemptedByPriority by 2"}),
    Case("a request granted in this pass is spared when an older victim is enough", ("R-40", "R-43"),
         snapshot(one_pool(HIGH, LOW, gpu=4), req(1, "lo", "job", gpu=3, state=ALLOCATED, pool="p"),
                  req(2, "hi", "job", gpu=2), req(3, "lo", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1", 3: "allocated on p"}),
]


# --- R-45 held capacity, R-46 the end of an eviction ----------------------------------------------

def half_evicted(*, second_victim_left: bool):
    """hi (3) preempted two requests of 1 gpu on a full pool of 2; the first has left."""
    second = preempting(req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p"), by=3)
    return snapshot(
        one_pool(HIGH, LOW), released(preempting(req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p"), by=3)),
        released(second) if second_victim_left else second, req(3, "hi", "job", gpu=2),
        req(4, "lo", "job", gpu=1, at_s=996),
    )


def evicted_after(seconds: float, *, retries: int = 1, attempt: int = 1, reason=Reason.PREEMPTED_BY_PRIORITY):
    victim = req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p", at_s=5, allocated_s=100, retries=retries)
    victim = preempting(replace(victim, attempt=attempt), by=2, since_s=1000 - seconds, reason=reason)
    return snapshot(PRIORITIES, victim, req(2, "hi", "job", gpu=2))


def outlived_hold(*, lo_running: bool = False):
    """hi (2) holds 2 gpu on p for its victims, who have left; meanwhile a provision cut p to 2
    gpu, of which a non-preemptible request of mid (1) holds one: 2 fits no more, and lo (3) waits
    for the free gpu. Or (``lo_running``) p has 3 gpu and lo (4) runs on one: a victim again."""
    cut = one_pool(HIGH, MID, LOW, gpu=3 if lo_running else 2)
    mid = req(1, "mid", "job", gpu=1, state=ALLOCATED, pool="p", preemptible=False)
    waiting = req(4, "lo", "job", gpu=1, state=ALLOCATED, pool="p") if lo_running else req(3, "lo", "job", gpu=1)
    return snapshot(cut, mid, req(2, "hi", "job", gpu=2, held="p"), waiting)


EVICTION = [
    Case("what the first victim freed is held while the second is still leaving", ("R-45",),
         half_evicted(second_victim_left=False),
         {1: "preempted PreemptedByPriority", 2: "preempting PreemptedByPriority by 3",
          3: "pending WaitingForPreemption #1", 4: "pending BlockedByHigherPriority #2"}),
    Case("the preemptor gets the capacity once all its victims have left", ("R-45",),
         half_evicted(second_victim_left=True),
         {1: "preempted PreemptedByPriority", 2: "preempted PreemptedByPriority", 3: "allocated on p",
          4: "pending WaitingForCapacity #1"}),
    Case("within the grace period the victim keeps its capacity", ("R-44",),
         evicted_after(29),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("after the grace period a victim with retries left is queued again", ("R-44", "R-46"),
         evicted_after(31),
         {1: "pending WaitingForCapacity #1, attempt 2 submitted at 5s", 2: "allocated on p"}),
    Case("after the grace period a victim without retries ends preempted", ("R-44", "R-46"),
         evicted_after(31, retries=0),
         {1: "preempted PreemptedByPriority", 2: "allocated on p"}),
    Case("a victim on its last retry ends preempted", ("R-46",),
         evicted_after(31, retries=1, attempt=2),
         {1: "preempted PreemptedByPriority, attempt 2 submitted at 5s", 2: "allocated on p"}),
    Case("a reclaimed victim keeps its reason when it ends", ("R-44", "R-46"),
         evicted_after(31, retries=0, reason=Reason.RECLAIMED),
         {1: "preempted Reclaimed", 2: "allocated on p"}),
    Case("a hold whose victims left while a provision cut the pool keeps nobody else out", ("R-40", "R-45"),
         outlived_hold(),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("a preemptor whose victims left looks for victims again", ("R-40", "R-45"),
         outlived_hold(lo_running=True),
         {1: "allocated on p", 2: "pending WaitingForPreemption #1", 4: "preempting PreemptedByPriority by 2"}),
]


# --- borrowed units: a policy's newest allocations are the borrowed ones ---------------------------

BORROWED = [
    Case("of two allocations over a pool reservation the newer is borrowed", ("R-41", "sec1-reserved"),
         snapshot(reclaim(), *b_fills_p(first_s=10, second_s=20), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
    Case("borrowed follows the allocation time, not the id", ("R-41", "sec1-reserved"),
         snapshot(reclaim(), *b_fills_p(first_s=20, second_s=10), req(3, "a", "job", gpu=2)),
         {1: "preempting Reclaimed by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("an allocation with one borrowed unit can be reclaimed whole", ("R-41", "sec1-reserved"),
         snapshot(reclaim(b_quota="p:gpu 3/"), *b_fills_p(), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
    Case("usage on another pool consumes an all-pools reservation first", ("R-41", "sec1-reserved"),
         all_pools_share(first_s=10, second_s=20),
         {1: "allocated on q", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
    Case("an older allocation consumes an all-pools reservation wherever it runs", ("R-41", "sec1-reserved"),
         all_pools_share(first_s=20, second_s=10),
         {1: "allocated on q", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("a preemptor past its all-pools reservation reclaims nothing", ("R-41", "R-32.2"),
         preemptor_share_across_pools(a_on_q="a"),
         {1: "allocated on q", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("a preemptor within its all-pools reservation reclaims", ("R-41", "R-32.2"),
         preemptor_share_across_pools(a_on_q="c"),
         {1: "allocated on q", 2: "preempting Reclaimed by 3", 3: "pending WaitingForPreemption #1"}),
]


# --- what the victims free stays held for their preemptor until it is granted --------------------

# n is ranked before a on the profile, at the same priority. a (2) preempted lo's request (1) at
# 980 s; n's request (3) came at 985 s, while the victim was still leaving, and the victim's holder
# released it at 995 s. R-45 holds the capacity for 2 until 2 is granted; nothing that arrived
# meanwhile may take it, and 3 cannot preempt 2 afterwards (equal priority, no reservation).
ARRIVED_MEANWHILE = snapshot(
    one_pool(policy("n", priority=3), policy("a", priority=3), policy("lo", priority=1)),
    released(preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=2, since_s=980)),
    req(2, "a", "job", gpu=2, at_s=970, held="p"), req(3, "n", "job", gpu=2, at_s=985),
)

HELD_UNTIL_GRANTED = [
    Case("a request that arrived while the victim was leaving does not take what it freed", ("R-45",),
         ARRIVED_MEANWHILE,
         {1: "preempted PreemptedByPriority", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
]


# --- R-47 no grant is taken back at once ---------------------------------------------------------

# a reserves the pool; b reserves nothing, so all it holds is borrowed. a's request (2) is short of
# 1 gpu, b's (3) fits: until R-47 it was granted and at once reclaimed with request 1.
TAKEN_BACK_AT_ONCE = snapshot(
    one_pool(policy("a", "p:gpu 2/"), policy("b"), gpu=2),
    req(1, "b", "job", gpu=1, state=ALLOCATED, pool="p"), req(2, "a", "job", gpu=2), req(3, "b", "job", gpu=1))

NO_GRANT_TAKEN_BACK = [
    Case("a grant that a waiting request would reclaim at once is not made", ("R-47", "R-41", "R-45"),
         TAKEN_BACK_AT_ONCE,
         {1: "preempting Reclaimed by 2", 2: "pending WaitingForPreemption #1", 3: "pending BlockedByHigherPriority #2"}),
    Case("a grant nobody waiting would reclaim is made", ("R-47", "R-33"),
         replace(TAKEN_BACK_AT_ONCE, requests=TAKEN_BACK_AT_ONCE.requests[::2]),
         {1: "allocated on p", 3: "allocated on p"}),
    Case("a grant whose room a reclaim does not need is made", ("R-47", "R-43"),
         snapshot(one_pool(policy("a", "p:gpu 2/"), policy("b"), gpu=3),
                  req(1, "b", "job", gpu=2, state=ALLOCATED, pool="p"), req(2, "a", "job", gpu=2),
                  req(3, "b", "job", gpu=1)),
         {1: "preempting Reclaimed by 2", 2: "pending WaitingForPreemption #1", 3: "allocated on p"}),
    # b (priority 5) is served first and a reclaims from it, while b may preempt a by priority: the
    # grant a would reclaim is not made, and a's own grant is then preempted by priority
    # (decision 6; R-47 speaks of reclaim only).
    Case("against a higher priority the reclaimer's grant may still be preempted by priority", ("R-47", "R-41"),
         snapshot(one_pool(policy("a", "p:gpu 2/"), policy("b", priority=5), gpu=2),
                  req(1, "b", "job", gpu=1), req(2, "a", "job", gpu=1), req(3, "b", "job", gpu=1)),
         {1: "allocated on p", 2: "preempting PreemptedByPriority by 3", 3: "pending WaitingForPreemption #1"}),
]


def test_r47_the_grants_of_one_pass_are_oldest_in_the_order_they_were_made():
    """a's request 2 is served before 1 (its profile comes first on p) and is in share; 1, granted
    after it in the same pass and with the same time, borrows. b's later reclaim takes 1, not 2."""
    cfg = config(pool("p", order=("first", "second"), gpu=4), policy("a", "p:gpu 2/"), policy("b", "p:gpu 2/"),
                 profile("first", "p", ("a", "b"), dynamic=True), profile("second", "p", ("a", "b"), dynamic=True))
    s = snapshot(cfg, req(1, "a", "second", gpu=2), req(2, "a", "first", gpu=2))
    first = plan(s)
    assert [(g.request_id, g.grant_order) for g in first.grants] == [(2, 0), (1, 1)]
    granted = carry_out(s, first)
    assert {r.id: r.grant_order for r in granted.requests} == {1: 1, 2: 0}
    later = replace(granted, now=at(1010), requests=granted.requests + (req(3, "b", "first", gpu=2, at_s=1005),))
    assert describe(later, plan(later)) == {
        1: "preempting Reclaimed by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}


# --- R-48 protection from churn ----------------------------------------------------------------

# lo's running requests are protected for 600 s from their grant; the pass runs at 1000 s.
PROTECTING = one_pool(HIGH, policy("lo", priority=1, min_runtime_seconds=600))

PROTECTED = [
    Case("a request that has not run its policy's min_runtime_seconds is no victim", ("R-48", "R-41"),
         snapshot(PROTECTING, req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p", allocated_s=900),
                  req(2, "hi", "job", gpu=2)),
         {1: "allocated on p", 2: "pending WaitingForProtectedVictims #1"}),
    Case("once it has run that long it is a victim", ("R-48", "R-41"),
         snapshot(PROTECTING, req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p", allocated_s=400),
                  req(2, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("an unprotected victim goes before a newer protected one", ("R-48", "R-42"),
         snapshot(PROTECTING, req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=100),
                  req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=900), req(3, "hi", "job", gpu=1)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1"}),
    Case("a grant of the pass is protected in it", ("R-48", "R-40"),
         snapshot(PROTECTING, req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=100),
                  req(2, "hi", "job", gpu=2), req(3, "lo", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForProtectedVictims #1", 3: "allocated on p"}),
    Case("a request that protected victims would not make fit waits for capacity", ("R-48", "R-43"),
         snapshot(PROTECTING, req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=900),
                  req(2, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=2)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("reclaim waits for protection too", ("R-48", "R-41"),
         snapshot(one_pool(policy("a", "p:gpu 2/"), policy("b", "p:gpu 2/", min_runtime_seconds=60), gpu=4),
                  *b_fills_p(first_s=10, second_s=990), req(3, "a", "job", gpu=2)),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForProtectedVictims #1"}),
]


def test_r48_a_request_waiting_for_protected_victims_says_until_when_and_the_pass_wakes_then():
    s = snapshot(PROTECTING, req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=900),
                 req(2, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=950), req(3, "hi", "job", gpu=2))
    result = plan(s)
    assert result.waiting[3].message == (
        "request(s) 2, 1 on pool p would make room but are protected from preemption until 2026-01-01 00:25:50 UTC")
    assert result.wake_at == at(1550)
    assert plan(replace(s, now=at(1549))).waiting[3].reason is Reason.WAITING_FOR_PROTECTED_VICTIMS
    assert describe(replace(s, now=at(1550)), plan(replace(s, now=at(1550)))) == {
        1: "preempting PreemptedByPriority by 3", 2: "preempting PreemptedByPriority by 3",
        3: "pending WaitingForPreemption #1"}


def test_r48_without_min_runtime_seconds_there_is_no_moment_to_wake_for():
    assert all(plan(case.snapshot).wake_at is None for case in CASES if "R-48" not in case.rules)


CASES = (WHO_PREEMPTS + VICTIMS + CHOICE + EVICTION + BORROWED + HELD_UNTIL_GRANTED + NO_GRANT_TAKEN_BACK
         + PROTECTED)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_victims_are_chosen_by_the_rules(case: Case):
    assert outcome_with_attempts(case.snapshot) == case.expected
