"""Order of service (R-30…R-33): who is granted what, and in which order, in one pass.

Each case is a snapshot and the whole outcome of one pass. Most come in pairs that differ in the
one thing a rule looks at, so the test fails if the rule were broken in either direction.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconcile import Reason, Request, State
from reconcile.ordering import service_key, victim_key
from tests.reconcile.builders import at, config, policy, pool, preempting, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, outcome

ALLOCATED = State.ALLOCATED


def lease_ran_out(request: Request, at_s: float) -> Request:
    return replace(request, lease_expires_at=at(at_s))


# --- configurations ---------------------------------------------------------------------------

ONE_POOL = config(pool("p", gpu=4), policy("t"), profile("job", "p", "t", dynamic=True))

LOW_HIGH = config(
    pool("p", gpu=4), policy("lo"), policy("hi", priority=5), profile("job", "p", ("lo", "hi"), dynamic=True),
)

TWO_POOLS = config(
    pool("p1", gpu=2), pool("p2", gpu=2),
    policy("t", "p1:gpu /1"), policy("o"), policy("hi", priority=5),
    profile("job", ("p1", "p2"), ("t", "o", "hi"), dynamic=True),
)

# A preemptor holds capacity on p1; "narrow" only reaches p1.
HELD_ON_P1 = config(
    pool("p1", gpu=2), pool("p2", gpu=2), policy("lo"), policy("hi", priority=5),
    profile("wide", ("p1", "p2"), ("lo", "hi"), dynamic=True), profile("narrow", "p1", "lo", dynamic=True),
)


def one_slot(*policies, profiles=None):
    """Pool p with one gpu, for whoever is served first."""
    names = tuple(p.name for p in policies)
    profiles = profiles or (profile("job", "p", names, dynamic=True),)
    return config(pool("p", gpu=1), *policies, *profiles)


def shares_over_two_pools(reservation_of_b: str):
    return config(
        pool("p", gpu=1), pool("q", gpu=1), policy("a"), policy("b", reservation_of_b), policy("c"),
        profile("job", ("p", "q"), ("a", "b", "c"), dynamic=True),
    )


def metered_mcpu(*quotas_of_b: str):
    return config(
        pool("p", gpu=1, mcpu=4000), policy("a"), policy("b", *quotas_of_b),
        profile("job", "p", ("a", "b"), dynamic=True),
    )


def two_profiles(order, first_policies=("t",), second_policies=("t",), *policies):
    return config(
        pool("p", order=order, gpu=1), *(policies or (policy("t"),)),
        profile("small", "p", first_policies, gpu=1), profile("big", "p", second_policies, gpu=1),
    )


# Execution order differs per pool: x is served first on p1, y first on p2.
EXECUTION_PER_POOL = config(
    pool("p1", order=("x", "y"), gpu=1), pool("p2", order=("y", "x"), gpu=1), policy("t"),
    profile("x", ("p1", "p2"), "t", gpu=1), profile("y", "p2", "t", gpu=1),
)

# a is in share on p1 only, b on p2 only; c fills p1 with non-preemptible work.
SHARE_PER_POOL = config(
    pool("p1", gpu=1), pool("p2", gpu=1),
    policy("a", "p1:gpu 1/"), policy("b", "p2:gpu 1/"), policy("c", "p1:gpu 1/"),
    profile("job", ("p1", "p2"), ("a", "b", "c"), dynamic=True),
)

# x is served after y on p1 but first on p2; y fills p1 first in the pass, z waits on p2.
FILLED_DURING_PASS = config(
    pool("p1", order=("y", "x"), gpu=1), pool("p2", order=("x", "z"), gpu=1), policy("t"),
    profile("x", ("p1", "p2"), "t", gpu=1), profile("y", "p1", "t", gpu=1), profile("z", "p2", "t", gpu=1),
)

# c fills p1 first in the pass; a is in share on p2 only; b borrows on p2, served before a there otherwise.
SHARE_AFTER_FILL = config(
    pool("p1", gpu=1), pool("p2", order=("only_p2", "job"), gpu=1),
    policy("a", "p2:gpu 1/"), policy("b"), policy("c", "p1:gpu 1/"),
    profile("job", ("p1", "p2"), ("c", "a"), dynamic=True), profile("only_p2", "p2", "b", dynamic=True),
)

# Two pools with opposite execution orders and three policies, one reserving across all pools.
FLEET = config(
    pool("h100", order=("train", "infer"), gpu=4), pool("a100", order=("infer", "train"), gpu=2),
    policy("prod", "*:gpu 2/4", priority=10), policy("research", "h100:gpu 2/4"), policy("adhoc"),
    profile("train", ("h100", "a100"), ("research", "prod", "adhoc"), dynamic=True),
    profile("infer", ("a100", "h100"), ("prod", "adhoc", "research"), dynamic=True),
)

FLEET_QUEUE = (
    req(1, "research", "train", gpu=2), req(2, "adhoc", "infer", gpu=1), req(3, "prod", "train", gpu=2),
    req(4, "prod", "infer", gpu=1), req(5, "research", "train", gpu=2), req(6, "adhoc", "train", gpu=1),
)


# --- R-30 management switch --------------------------------------------------------------------

MANAGEMENT = [
    Case("nothing is granted while management is disabled", ("R-30",),
         snapshot(ONE_POOL, req(1, "t", "job", gpu=1), req(2, "t", "job", gpu=1), enabled=False),
         {1: "pending ManagementDisabled #1", 2: "pending ManagementDisabled #2"}),
    Case("the same queue is granted once management is enabled", ("R-30",),
         snapshot(ONE_POOL, req(1, "t", "job", gpu=1), req(2, "t", "job", gpu=1), enabled=True),
         {1: "allocated on p", 2: "allocated on p"}),
    Case("nothing is preempted while management is disabled", ("R-30",),
         snapshot(LOW_HIGH, req(1, "lo", "job", gpu=4, state=ALLOCATED, pool="p"), req(2, "hi", "job", gpu=4),
                  enabled=False),
         {1: "allocated on p", 2: "pending ManagementDisabled #1"}),
    Case("the same higher priority request preempts once management is enabled", ("R-30", "R-41"),
         snapshot(LOW_HIGH, req(1, "lo", "job", gpu=4, state=ALLOCATED, pool="p"), req(2, "hi", "job", gpu=4)),
         {1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("while disabled leases still expire and impossible requests are still rejected", ("R-30", "R-58"),
         snapshot(ONE_POOL, lease_ran_out(req(1, "t", "job", gpu=4, state=ALLOCATED, pool="p"), at_s=900),
                  req(2, "t", "job", gpu=1), req(3, "t", "job", gpu=5), enabled=False),
         {1: "expired LeaseExpired", 2: "pending ManagementDisabled #1", 3: "rejected ExceedsPoolCapacity"}),
    Case("while disabled an eviction whose grace is over still finishes", ("R-30", "R-44"),
         snapshot(LOW_HIGH, preempting(req(1, "lo", "job", gpu=4, state=ALLOCATED, pool="p"), by=2, since_s=960),
                  req(2, "hi", "job", gpu=4), enabled=False),
         {1: "preempted PreemptedByPriority", 2: "pending ManagementDisabled #1"}),
    # Positions are the grants of "all of at once" below, in order (4, 3, 1, 2), then
    # the rest as that case leaves them (5, 6): one order over both pools (decision 120).
    Case("while disabled the positions are the order an enabled pass serves", ("R-30", "R-32"),
         snapshot(FLEET, *FLEET_QUEUE, enabled=False),
         {1: "pending ManagementDisabled #3", 2: "pending ManagementDisabled #4",
          3: "pending ManagementDisabled #2", 4: "pending ManagementDisabled #1",
          5: "pending ManagementDisabled #5", 6: "pending ManagementDisabled #6"}),
]


# --- R-31 pool precedence ----------------------------------------------------------------------

PRECEDENCE = [
    Case("it is granted on the preferred pool when it fits there", ("R-31",),
         snapshot(TWO_POOLS, req(1, "o", "job", gpu=2)),
         {1: "allocated on p1"}),
    Case("it is granted on the next pool when the preferred pool is full", ("R-31",),
         snapshot(TWO_POOLS, req(1, "o", "job", gpu=2, state=ALLOCATED, pool="p1"), req(2, "o", "job", gpu=1)),
         {1: "allocated on p1", 2: "allocated on p2"}),
    Case("it is granted on the next pool when its own limit is reached on the preferred one", ("R-31", "R-21"),
         snapshot(TWO_POOLS, req(1, "t", "job", gpu=1, state=ALLOCATED, pool="p1"), req(2, "t", "job", gpu=1)),
         {1: "allocated on p1", 2: "allocated on p2"}),
    Case("a higher priority request takes a later pool with room instead of preempting", ("R-31", "R-40"),
         snapshot(TWO_POOLS, req(1, "o", "job", gpu=2, state=ALLOCATED, pool="p1"), req(2, "hi", "job", gpu=2)),
         {1: "allocated on p1", 2: "allocated on p2"}),
    Case("it preempts on the preferred pool only when the later one is full too", ("R-31", "R-40"),
         snapshot(TWO_POOLS, req(1, "o", "job", gpu=2, state=ALLOCATED, pool="p1"),
                  req(2, "hi", "job", gpu=2, state=ALLOCATED, pool="p2"), req(3, "hi", "job", gpu=2)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p2", 3: "pending WaitingForPreemption #1"}),
    Case("a preemptor that finds room elsewhere is granted there and its hold ends", ("R-31", "R-45"),
         snapshot(HELD_ON_P1, preempting(req(1, "lo", "wide", gpu=1, state=ALLOCATED, pool="p1"), by=3),
                  req(3, "hi", "wide", gpu=2), req(4, "lo", "narrow", gpu=1)),
         {1: "preempting PreemptedByPriority by 3", 3: "allocated on p2", 4: "allocated on p1"}),
    Case("while the preemptor still waits its hold keeps the freed room", ("R-31", "R-45"),
         snapshot(HELD_ON_P1, preempting(req(1, "lo", "wide", gpu=1, state=ALLOCATED, pool="p1"), by=3),
                  req(2, "hi", "wide", gpu=2, state=ALLOCATED, pool="p2"),
                  req(3, "hi", "wide", gpu=2), req(4, "lo", "narrow", gpu=1)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p2", 3: "pending WaitingForPreemption #1",
          4: "pending BlockedByHigherPriority #2"}),
]


# --- R-32 order of service, one criterion at a time ---------------------------------------------

CRITERIA = [
    Case("the higher priority is served first though ranked and submitted later", ("R-32.1",),
         snapshot(one_slot(policy("lo"), policy("hi", priority=5)), req(1, "lo", "job", gpu=1),
                  req(2, "hi", "job", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("at equal priority the same two are served by rank", ("R-32.1", "R-32.4"),
         snapshot(one_slot(policy("lo"), policy("hi")), req(1, "lo", "job", gpu=1), req(2, "hi", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("a request in share at its pool goes before one that borrows", ("R-32.2",),
         snapshot(one_slot(policy("a"), policy("b", "p:gpu 1/")), req(1, "a", "job", gpu=1),
                  req(2, "b", "job", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("a request just above its pool reservation borrows and loses its place", ("R-32.2",),
         snapshot(one_slot(policy("a"), policy("b", "p:gpu 0.5/")), req(1, "a", "job", gpu=1),
                  req(2, "b", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("usage on another pool makes it borrow at the all-pools scope", ("R-32.2",),
         snapshot(shares_over_two_pools("*:gpu 1/"), req(1, "b", "job", gpu=1, state=ALLOCATED, pool="q"),
                  req(2, "a", "job", gpu=1), req(3, "b", "job", gpu=1)),
         {1: "allocated on q", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("without that usage it is in share at the all-pools scope and goes first", ("R-32.2",),
         snapshot(shares_over_two_pools("*:gpu 1/"), req(1, "c", "job", gpu=1, state=ALLOCATED, pool="q"),
                  req(2, "a", "job", gpu=1), req(3, "b", "job", gpu=1)),
         {1: "allocated on q", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("a metered key without a reservation makes it borrow", ("R-32.2",),
         snapshot(metered_mcpu("p:gpu 1/"), req(1, "a", "job", gpu=1, mcpu=1000), req(2, "b", "job", gpu=1, mcpu=1000)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("reserving every metered key keeps it in share", ("R-32.2",),
         snapshot(metered_mcpu("p:gpu 1/", "p:mcpu 1000/"), req(1, "a", "job", gpu=1, mcpu=1000),
                  req(2, "b", "job", gpu=1, mcpu=1000)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("the profile first in the pool's execution order goes first though submitted later", ("R-32.3",),
         snapshot(two_profiles(("small", "big")), req(1, "t", "big", gpu=1), req(2, "t", "small", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("reversing the pool's execution order reverses who goes first", ("R-32.3",),
         snapshot(two_profiles(("big", "small")), req(1, "t", "big", gpu=1), req(2, "t", "small", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
    Case("the policy ranked first on the profile goes first though submitted later", ("R-32.4",),
         snapshot(one_slot(policy("a"), policy("b"), profiles=(profile("job", "p", ("b", "a"), dynamic=True),)),
                  req(1, "a", "job", gpu=1), req(2, "b", "job", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("the earlier submission goes first whatever the id", ("R-32.5",),
         snapshot(ONE_POOL, req(1, "t", "job", gpu=4, at_s=20), req(2, "t", "job", gpu=3, at_s=10)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("at the same submission time the lower id goes first", ("R-32.5",),
         snapshot(ONE_POOL, req(2, "t", "job", gpu=4, at_s=10), req(1, "t", "job", gpu=3, at_s=10)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1"}),
]


# --- R-32 criteria in combination ---------------------------------------------------------------

# hi already uses its whole reservation on p, so its non-preemptible request borrows; lo is in share.
def priority_against_share(hi_priority: int):
    return snapshot(
        config(pool("p", gpu=2), policy("hi", "p:gpu 1/", priority=hi_priority), policy("lo", "p:gpu 1/"),
               profile("job", "p", ("lo", "hi"), dynamic=True)),
        req(1, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(2, "lo", "job", gpu=1),
        req(3, "hi", "job", gpu=1, preemptible=False),
    )


COMBINED = [
    Case("priority comes before staying in share", ("R-32.1", "R-32.2"),
         priority_against_share(hi_priority=5),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("at equal priority staying in share decides", ("R-32.1", "R-32.2"),
         priority_against_share(hi_priority=0),
         {1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("staying in share comes before the execution order", ("R-32.2", "R-32.3"),
         snapshot(two_profiles(("small", "big"), ("a",), ("b",), policy("a"), policy("b", "p:gpu 1/")),
                  req(1, "a", "small", gpu=1), req(2, "b", "big", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("the execution order comes before the policy rank", ("R-32.3", "R-32.4"),
         snapshot(two_profiles(("small", "big"), ("b", "a"), ("b",), policy("a"), policy("b")),
                  req(1, "b", "big", gpu=1), req(2, "a", "small", gpu=1)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p"}),
    Case("a queued request keeps its first submission after eviction and goes first", ("R-32.5", "R-46"),
         snapshot(LOW_HIGH,
                  preempting(req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=500, retries=1, at_s=1),
                             by=3, since_s=900),
                  req(2, "hi", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1),
                  req(4, "lo", "job", gpu=0.5, at_s=50)),
         {1: "allocated on p", 2: "allocated on p", 3: "allocated on p", 4: "pending WaitingForCapacity #1"}),
    Case("a later first submission after eviction goes after the older one", ("R-32.5", "R-46"),
         snapshot(LOW_HIGH,
                  preempting(req(1, "lo", "job", gpu=1, state=ALLOCATED, pool="p", allocated_s=500, retries=1, at_s=60),
                             by=3, since_s=900),
                  req(2, "hi", "job", gpu=2, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=1),
                  req(4, "lo", "job", gpu=0.5, at_s=50)),
         {1: "pending WaitingForCapacity #1", 2: "allocated on p", 3: "allocated on p", 4: "allocated on p"}),
]


# --- R-32 re-evaluated after every grant --------------------------------------------------------

REEVALUATED = [
    Case("a policy's earlier grant ends its share and lets another policy's in-share request go first",
         ("R-32", "R-32.2"),
         snapshot(config(pool("p", gpu=2), policy("a", "p:gpu 1/"), policy("b", "p:gpu 1/"),
                         profile("job", "p", ("a", "b"), dynamic=True)),
                  req(1, "a", "job", gpu=1), req(2, "a", "job", gpu=1), req(3, "b", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("the grant ends the share of the policy's other requests too, whatever their size", ("R-32", "R-32.2"),
         snapshot(config(pool("p", gpu=2), policy("a", "p:gpu 1/"), policy("b", "p:gpu 1/"),
                         profile("job", "p", ("a", "b"), dynamic=True)),
                  req(1, "a", "job", gpu=1), req(2, "a", "job", gpu=0.5), req(3, "b", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("a grant on one pool ends the share across all pools for the next", ("R-32", "R-32.2"),
         snapshot(config(pool("p", gpu=1), pool("q", gpu=1), policy("a", "*:gpu 1/"), policy("b", "*:gpu 1/"),
                         profile("job", ("p", "q"), ("a", "b"), dynamic=True)),
                  req(1, "a", "job", gpu=1), req(2, "a", "job", gpu=0.5), req(3, "b", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on q"}),
    Case("with its first pool full it is ordered by the execution order of the later pool", ("R-32", "R-32.3"),
         snapshot(EXECUTION_PER_POOL, req(1, "t", "x", gpu=1, state=ALLOCATED, pool="p1"),
                  req(2, "t", "x", gpu=1), req(3, "t", "y", gpu=1)),
         {1: "allocated on p1", 2: "pending WaitingForCapacity #1", 3: "allocated on p2"}),
    Case("with its first pool free each request takes its own pool", ("R-32", "R-31"),
         snapshot(EXECUTION_PER_POOL, req(2, "t", "x", gpu=1), req(3, "t", "y", gpu=1)),
         {2: "allocated on p1", 3: "allocated on p2"}),
    Case("a request whose preferred pool fills during the pass moves up at its later pool", ("R-32", "R-32.3"),
         snapshot(FILLED_DURING_PASS, req(1, "t", "y", gpu=1), req(2, "t", "z", gpu=1, at_s=1.5),
                  req(3, "t", "x", gpu=1, at_s=2)),
         {1: "allocated on p1", 2: "pending WaitingForCapacity #1", 3: "allocated on p2"}),
    Case("a request whose preferred pool fills during the pass is in share at its later pool", ("R-32", "R-32.2"),
         snapshot(SHARE_AFTER_FILL, req(1, "c", "job", gpu=1), req(2, "b", "only_p2", gpu=1),
                  req(3, "a", "job", gpu=1)),
         {1: "allocated on p1", 2: "pending WaitingForCapacity #1", 3: "allocated on p2"}),
    Case("with its first pool full it is judged in share or borrowing at the later pool", ("R-32", "R-32.2"),
         snapshot(SHARE_PER_POOL, req(1, "c", "job", gpu=1, preemptible=False, state=ALLOCATED, pool="p1"),
                  req(2, "a", "job", gpu=1), req(3, "b", "job", gpu=1)),
         {1: "allocated on p1", 2: "pending WaitingForCapacity #1", 3: "allocated on p2"}),
    Case("two pools, three policies and both profiles are served in one pass", ("R-31", "R-32", "R-33"),
         snapshot(FLEET, *FLEET_QUEUE),
         {1: "allocated on h100", 2: "allocated on a100", 3: "allocated on h100", 4: "allocated on a100",
          5: "pending WaitingForCapacity #1", 6: "pending WaitingForCapacity #2"}),
    Case("with part of the fleet in use the share across all pools orders the rest", ("R-31", "R-32"),
         snapshot(FLEET, req(1, "research", "train", gpu=2, state=ALLOCATED, pool="h100"),
                  req(2, "prod", "infer", gpu=1, state=ALLOCATED, pool="h100"),
                  req(3, "prod", "infer", gpu=1), req(4, "prod", "infer", gpu=1),
                  req(5, "adhoc", "infer", gpu=1), req(6, "research", "train", gpu=1)),
         {1: "allocated on h100", 2: "allocated on h100", 3: "allocated on a100", 4: "allocated on a100",
          5: "pending WaitingForCapacity #1", 6: "allocated on h100"}),
]


# --- R-33 no head-of-line blocking --------------------------------------------------------------

NO_BLOCKING = [
    Case("a big request that does not fit does not stop a smaller later one", ("R-33",),
         snapshot(ONE_POOL, req(1, "t", "job", gpu=2, state=ALLOCATED, pool="p"), req(2, "t", "job", gpu=4),
                  req(3, "t", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("a higher priority request that fits nowhere does not stop a lower one that fits", ("R-33", "R-43"),
         snapshot(config(pool("p", gpu=4), policy("lo", "p:gpu 2/"), policy("hi", priority=5),
                         profile("job", "p", ("lo", "hi"), dynamic=True)),
                  req(1, "lo", "job", gpu=2, preemptible=False, state=ALLOCATED, pool="p"), req(2, "hi", "job", gpu=4),
                  req(3, "lo", "job", gpu=1)),
         {1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "allocated on p"}),
    Case("a request arriving after a preemption cannot take the held capacity", ("R-33", "R-45"),
         snapshot(LOW_HIGH, preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=3),
                  req(2, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=3),
                  req(4, "lo", "job", gpu=1, at_s=995)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1",
          4: "pending BlockedByHigherPriority #2"}),
    Case("a lower ranked request queued before the preemption cannot take it either", ("R-33", "R-45"),
         snapshot(LOW_HIGH, preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=3),
                  req(2, "hi", "job", gpu=1, state=ALLOCATED, pool="p"), req(3, "hi", "job", gpu=3),
                  req(4, "lo", "job", gpu=1, at_s=0)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1",
          4: "pending BlockedByHigherPriority #2"}),
    Case("once the preemptor has left the queue nothing is held", ("R-33", "R-45"),
         snapshot(LOW_HIGH, preempting(req(1, "lo", "job", gpu=2, state=ALLOCATED, pool="p"), by=3),
                  req(2, "hi", "job", gpu=1, state=ALLOCATED, pool="p"),
                  replace(req(3, "hi", "job", gpu=3), state=State.CANCELLED, reason=Reason.CANCELLED_BY_USER),
                  req(4, "lo", "job", gpu=1, at_s=995)),
         {1: "preempting PreemptedByPriority by 3", 2: "allocated on p", 3: "cancelled CancelledByUser",
          4: "allocated on p"}),
]


CASES = MANAGEMENT + PRECEDENCE + CRITERIA + COMBINED + REEVALUATED + NO_BLOCKING


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_requests_are_served_in_the_order_of_the_rules(case: Case):
    assert outcome(case.snapshot) == case.expected


# --- the keys themselves: each criterion decides only where the ones before it tie ----------------

# (name, key served or taken first, key after it); the first differs in one criterion, and is
# worse in every later one, so a criterion out of place puts the pair the wrong way round.
KEY_PAIRS = [
    ("higher priority first", service_key(5, False, 9, 9, 9, 9), service_key(4, True, 0, 0, 0, 0)),
    ("then in share before borrowing", service_key(5, True, 9, 9, 9, 9), service_key(5, False, 0, 0, 0, 0)),
    ("then the pool's execution order", service_key(5, True, 0, 9, 9, 9), service_key(5, True, 1, 0, 0, 0)),
    ("then the policy rank", service_key(5, True, 0, 0, 9, 9), service_key(5, True, 0, 1, 0, 0)),
    ("then earlier submission", service_key(5, True, 0, 0, 0, 9), service_key(5, True, 0, 0, 1, 0)),
    ("then the lower id", service_key(5, True, 0, 0, 0, 0), service_key(5, True, 0, 0, 0, 1)),
    ("victims: lowest priority first", victim_key(1, False, 9, 9), victim_key(2, True, 10, 10)),
    ("victims: then borrowed before in share", victim_key(1, True, 0, 0), victim_key(1, False, 10, 10)),
    ("victims: then the newest allocation", victim_key(1, True, 10, 0), victim_key(1, True, 9, 10)),
    ("victims: then the highest id", victim_key(1, True, 10, 10), victim_key(1, True, 10, 9)),
]


@pytest.mark.parametrize("name, first, second", KEY_PAIRS, ids=[pair[0] for pair in KEY_PAIRS])
def test_each_criterion_of_a_key_counts_in_its_place(name, first, second):
    assert first < second
