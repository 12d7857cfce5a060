"""Why a pending request waits, with the numbers, and its place in the queue (docs/scheduling.md §9, R-32).

Three tables. MESSAGES compares every pending request's whole ``Waiting`` (code, sentence,
position, queue pool). PRECEDENCE runs passes where several reasons hold at once and checks
the one shown: ManagementDisabled, then the policy's own WaitingForReservation (it outlasts
the limit) and WaitingForQuota, then WaitingForPreemption, BlockedByHigherPriority,
WaitingForCapacity. POSITIONS checks the 1-based place among pending requests in R-32 order
within the queue of each request's most preferred eligible pool. Rule ids: "sec9" is docs/scheduling.md §9.

Live allocations of other policies are non-preemptible (policy ``infra``) unless a case is
about preemption, so no victim search changes what is being looked at.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from reconcile import Reason, Request, Snapshot, State, plan
from reconcile.transition import carry_out
from tests.reconcile.builders import at, config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, outcome

DISABLED = "resource management is disabled: nothing is granted until it is enabled again"


def live(id: int, policy_name: str, profile_name: str, pool_name: str, **kwargs) -> Request:
    return req(id, policy_name, profile_name, state=State.ALLOCATED, pool=pool_name, **kwargs)


def victim(id: int, policy_name: str, profile_name: str, pool_name: str, *, by: int, reason: Reason,
           **resources) -> Request:
    """An allocation chosen as a victim of request ``by`` a second before the pass: its grace is running."""
    request = req(id, policy_name, profile_name, state=State.PREEMPTING, pool=pool_name, **resources)
    return replace(request, preempted_by=by, preempted_at=at(999), reason=reason)


def placed(state: Snapshot) -> dict[int, str]:
    """``outcome`` plus each pending request's queue pool: "pending WaitingForCapacity #1 in p"."""
    lines, result = outcome(state), plan(state)
    return {rid: f"{line} in {result.waiting[rid].pool}" if rid in result.waiting else line
            for rid, line in lines.items()}


@dataclass(frozen=True)
class Explained:
    """A snapshot and the whole ``Waiting`` expected for each pending request."""

    name: str
    rules: tuple[str, ...]
    snapshot: Snapshot
    expected: dict[int, tuple[str, str, int, str]]  # code, sentence, position, queue pool

    def __str__(self) -> str:
        return f"{'+'.join(self.rules)} {self.name}"


H100 = config(pool("h100", gpu=8), policy("t"), profile("job", "h100", "t", dynamic=True))
H100_BARE = config(pool("h100", gpu=8), pool("bare-metal", gpu=8), policy("t"), policy("infra", "bare-metal:gpu 8/8"),
                   profile("job", ("h100", "bare-metal"), ("t", "infra"), dynamic=True))
LICENSED = config(pool("p", gpu=8, lic=2), policy("t"), profile("job", "p", "t", dynamic=True))
LIMIT_P = config(pool("p", gpu=8), policy("t", "p:gpu 2/4"), profile("job", "p", "t", dynamic=True))
LIMIT_STAR = config(pool("p", gpu=8), policy("t", "*:gpu /4"), profile("job", "p", "t", dynamic=True))
SHARE = config(pool("p", gpu=2), policy("c", "p:gpu 1/2"), profile("job", "p", "c", dynamic=True))
QUOTA_OR_ROOM = config(pool("a", gpu=8), pool("b", gpu=8), policy("t", "a:gpu /2"), policy("infra", "b:gpu 8/8"),
                       profile("ab", ("a", "b"), "t", dynamic=True), profile("infra", "b", "infra", dynamic=True))
# Pool p: 4 gpu. owner reserves 2 and reclaims; guest has no reservation; infra holds 1 gpu for good.
RECLAIM = config(pool("p", gpu=4), policy("owner", "p:gpu 2/4"), policy("guest"), policy("infra", "p:gpu 1/1"),
                 profile("job", "p", ("owner", "guest", "infra"), dynamic=True))
# Pool p: 4 gpu, 3 held for good by infra; high outranks low.
RANKED = config(pool("p", gpu=4), policy("low"), policy("high", priority=5), policy("infra", "p:gpu 3/3"),
                profile("job", "p", ("low", "high", "infra"), dynamic=True))
PRIORITY = config(pool("p", gpu=1), policy("low", "p:gpu 0/1", priority=1), policy("high", "p:gpu 0/1", priority=2),
                  profile("job", "p", ("low", "high"), dynamic=True))

MESSAGES = [
    Explained("a pool short of room says by how much and how much is in use", ("sec9",), snapshot(
        H100, live(1, "t", "job", "h100", gpu=6), req(2, "t", "job", gpu=4)), {
        2: ("WaitingForCapacity", "pool h100 is short of 2 gpu (6 of 8 in use)", 1, "h100")}),
    Explained("several pools short of room are all listed, in precedence order", ("sec9", "R-31"), snapshot(
        H100_BARE, live(1, "t", "job", "h100", gpu=6), live(2, "infra", "job", "bare-metal", preemptible=False, gpu=8),
        req(3, "t", "job", gpu=4)), {
        3: ("WaitingForCapacity",
            "pool h100 is short of 2 gpu (6 of 8 in use); pool bare-metal is short of 4 gpu (8 of 8 in use)", 1, "h100")}),
    Explained("every short key is listed, in name order", ("sec9",), snapshot(
        LICENSED, live(1, "t", "job", "p", gpu=7, lic=2), req(2, "t", "job", lic=1, gpu=2)), {
        2: ("WaitingForCapacity", "pool p is short of 1 gpu (7 of 8 in use), 1 lic (2 of 2 in use)", 1, "p")}),
    Explained("the own limit on the pool", ("sec9", "R-21"), snapshot(
        LIMIT_P, live(1, "t", "job", "p", gpu=4), req(2, "t", "job", gpu=1)), {
        2: ("WaitingForQuota", "policy t has 4 of its limit of 4 gpu in use on pool p", 1, "p")}),
    Explained("the own limit across all pools", ("sec9", "R-21"), snapshot(
        LIMIT_STAR, live(1, "t", "job", "p", gpu=3.5), req(2, "t", "job", gpu=1)), {
        2: ("WaitingForQuota", "policy t has 3.5 of its limit of 4 gpu in use across all pools", 1, "p")}),
    Explained("the non-preemptible share in use", ("sec9", "R-22"), snapshot(
        SHARE, live(1, "c", "job", "p", preemptible=False, gpu=1), req(2, "c", "job", preemptible=False, gpu=1)), {
        2: ("WaitingForReservation", "non-preemptible requests of policy c use 1 of its reservation of 1 gpu on pool p",
            1, "p")}),
    Explained("management disabled", ("sec9", "R-30", "R-58"), snapshot(
        H100, req(1, "t", "job", gpu=1), req(2, "t", "job", gpu=1), enabled=False), {
        1: ("ManagementDisabled", DISABLED, 1, "h100"), 2: ("ManagementDisabled", DISABLED, 2, "h100")}),
    Explained("victims being evicted for it", ("sec9", "R-44", "R-45"), snapshot(
        PRIORITY, victim(1, "low", "job", "p", by=2, reason=Reason.PREEMPTED_BY_PRIORITY, gpu=1),
        req(2, "high", "job", gpu=1)), {
        2: ("WaitingForPreemption", "waiting for request(s) 1 to leave pool p; their capacity is held for it", 1, "p")}),
    Explained("victims chosen in this very pass", ("sec9", "R-40", "R-44"), snapshot(
        PRIORITY, live(1, "low", "job", "p", gpu=1), req(2, "high", "job", gpu=1), req(3, "high", "job", gpu=1)), {
        2: ("WaitingForPreemption", "waiting for request(s) 1 to leave pool p; their capacity is held for it", 1, "p"),
        # The hold is usage of policy high for everyone else, so its own limit stops 3.
        3: ("WaitingForQuota", "policy high has 1 of its limit of 1 gpu in use on pool p", 2, "p")}),
    Explained("short of room only because it is held for a preemptor", ("sec9", "R-45"), snapshot(
        # 3 needs 2 gpu: the free one and the one its victim frees; both are held for it.
        RECLAIM, victim(1, "guest", "job", "p", by=3, reason=Reason.RECLAIMED, gpu=1),
        live(2, "infra", "job", "p", preemptible=False, gpu=2), req(3, "owner", "job", gpu=2),
        req(4, "guest", "job", gpu=1)), {
        3: ("WaitingForPreemption", "waiting for request(s) 1 to leave pool p; their capacity is held for it", 1, "p"),
        4: ("BlockedByHigherPriority", "pool p is short of 1 gpu (3 of 4 in use, 1 held for preemptors): the capacity "
            "is held for request(s) 3, served first", 2, "p")}),
    Explained("a hold takes no room its victims already occupy", ("sec9", "R-45"), snapshot(
        RECLAIM, victim(1, "guest", "job", "p", by=3, reason=Reason.RECLAIMED, gpu=2),
        live(2, "infra", "job", "p", preemptible=False, gpu=1), req(3, "owner", "job", gpu=2),
        req(4, "guest", "job", gpu=2)), {
        3: ("WaitingForPreemption", "waiting for request(s) 1 to leave pool p; their capacity is held for it", 1, "p"),
        4: ("WaitingForCapacity", "pool p is short of 1 gpu (3 of 4 in use)", 2, "p")}),
    Explained("a request of higher priority waits first for room", ("sec9", "R-32"), snapshot(
        RANKED, live(1, "infra", "job", "p", preemptible=False, gpu=3), req(2, "high", "job", gpu=2),
        req(3, "low", "job", gpu=2)), {
        2: ("WaitingForCapacity", "pool p is short of 1 gpu (3 of 4 in use)", 1, "p"),
        3: ("BlockedByHigherPriority",
            "pool p is short of 1 gpu (3 of 4 in use); request 2 of policy high (priority 5) is served first", 2, "p")}),
    Explained("across pools the most curable code is shown and every pool is listed", ("sec9", "R-31"), snapshot(
        QUOTA_OR_ROOM, live(1, "t", "ab", "a", gpu=2), live(2, "infra", "infra", "b", preemptible=False, gpu=8),
        req(3, "t", "ab", gpu=1)), {
        3: ("WaitingForCapacity",
            "policy t has 2 of its limit of 2 gpu in use on pool a; pool b is short of 1 gpu (8 of 8 in use)", 1, "a")}),
]


@pytest.mark.parametrize("case", MESSAGES, ids=case_id)
def test_every_pending_request_says_why_it_waits_with_the_numbers(case):
    result = plan(case.snapshot)
    assert {rid: (w.reason.value, w.message, w.position, w.pool) for rid, w in result.waiting.items()} == case.expected


# --- precedence -----------------------------------------------------------------------------

# Pool p: 4 gpu, 2 held for good by infra; t may use 2 (or 3) of it.
QUOTA_2 = config(pool("p", gpu=4), policy("t", "p:gpu /2"), policy("infra", "p:gpu 2/2"),
                 profile("job", "p", ("t", "infra"), dynamic=True))
QUOTA_3 = config(pool("p", gpu=4), policy("t", "p:gpu /3"), policy("infra", "p:gpu 2/2"),
                 profile("job", "p", ("t", "infra"), dynamic=True))
SHARE_AND_LIMIT = config(pool("p", gpu=8), policy("c", "p:gpu 2/2"), profile("job", "p", "c", dynamic=True))
SHARE_AND_ROOM = config(pool("p", gpu=2), policy("c", "p:gpu 1/2"), policy("infra", "p:gpu 1/1"),
                        profile("job", "p", ("c", "infra"), dynamic=True))
# a reaches its limit (2 across all pools) on p2 while its request 4 waits for a victim on p1.
LIMIT_IN_FLIGHT = config(pool("p1", gpu=1), pool("p2", gpu=2), policy("a", "*:gpu /2", priority=10), policy("b"),
                         profile("one", "p1", ("a", "b"), gpu=1), profile("two", "p2", "a", gpu=1))
SHARE_IN_FLIGHT = config(pool("p1", gpu=1), pool("p2", gpu=2), policy("a", "*:gpu 2/", priority=10), policy("b"),
                         profile("one", "p1", ("a", "b"), gpu=1), profile("two", "p2", "a", gpu=1))

PRECEDENCE = [
    Case("management disabled beats the own limit", ("sec9", "R-30"), snapshot(
        LIMIT_P, live(1, "t", "job", "p", gpu=4), req(2, "t", "job", gpu=1), enabled=False), {
        1: "allocated on p", 2: "pending ManagementDisabled #1"}),
    Case("management disabled beats capacity", ("sec9", "R-30"), snapshot(
        H100, live(1, "t", "job", "h100", gpu=8), req(2, "t", "job", gpu=1), enabled=False), {
        1: "allocated on h100", 2: "pending ManagementDisabled #1"}),
    Case("the own limit beats capacity when both hold", ("sec9",), snapshot(
        QUOTA_2, live(1, "t", "job", "p", gpu=2), live(2, "infra", "job", "p", preemptible=False, gpu=2),
        req(3, "t", "job", gpu=1)), {
        1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForQuota #1"}),
    Case("capacity alone when the limit has room", ("sec9",), snapshot(
        QUOTA_3, live(1, "t", "job", "p", gpu=2), live(2, "infra", "job", "p", preemptible=False, gpu=2),
        req(3, "t", "job", gpu=1)), {
        1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForCapacity #1"}),
    Case("the non-preemptible share beats the own limit when both hold", ("sec9", "R-22"), snapshot(
        SHARE_AND_LIMIT, live(1, "c", "job", "p", preemptible=False, gpu=2),
        req(2, "c", "job", preemptible=False, gpu=1),
        req(3, "c", "job", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForReservation #1", 3: "pending WaitingForQuota #2"}),
    Case("the non-preemptible share beats capacity when both hold", ("sec9", "R-22"), snapshot(
        SHARE_AND_ROOM, live(1, "c", "job", "p", preemptible=False, gpu=1),
        live(2, "infra", "job", "p", preemptible=False, gpu=1),
        req(3, "c", "job", preemptible=False, gpu=1), req(4, "c", "job", gpu=1)), {
        1: "allocated on p", 2: "allocated on p", 3: "pending WaitingForReservation #1", 4: "pending WaitingForCapacity #2"}),
    Case("victims in flight beat capacity for the preemptor itself", ("sec9", "R-45"), snapshot(
        PRIORITY, victim(1, "low", "job", "p", by=2, reason=Reason.PREEMPTED_BY_PRIORITY, gpu=1),
        req(2, "high", "job", gpu=1)), {
        1: "preempting PreemptedByPriority by 2", 2: "pending WaitingForPreemption #1"}),
    Case("a held capacity blocks; a request short of more than is held waits for capacity", ("sec9", "R-45"), snapshot(
        RECLAIM, victim(1, "guest", "job", "p", by=3, reason=Reason.RECLAIMED, gpu=1),
        live(2, "infra", "job", "p", preemptible=False, gpu=2), req(3, "owner", "job", gpu=2),
        req(4, "guest", "job", gpu=1),
        req(5, "guest", "job", gpu=2)), {
        1: "preempting Reclaimed by 3", 2: "allocated on p", 3: "pending WaitingForPreemption #1",
        4: "pending BlockedByHigherPriority #2", 5: "pending WaitingForCapacity #3"}),
    Case("strictly higher priority waiting first blocks; a request that fits still runs", ("sec9", "R-33"), snapshot(
        RANKED, live(1, "infra", "job", "p", preemptible=False, gpu=3), req(2, "high", "job", gpu=2),
        req(3, "low", "job", gpu=2),
        req(4, "low", "job", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "pending BlockedByHigherPriority #2",
        4: "allocated on p"}),
    Case("equal priority waiting first does not block", ("sec9",), snapshot(
        RANKED, live(1, "infra", "job", "p", preemptible=False, gpu=3), req(2, "low", "job", gpu=2),
        req(3, "low", "job", gpu=2)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #1", 3: "pending WaitingForCapacity #2"}),
    Case("the own limit beats victims in flight", ("sec9", "R-45"), snapshot(
        LIMIT_IN_FLIGHT, victim(1, "b", "one", "p1", by=4, reason=Reason.PREEMPTED_BY_PRIORITY, gpu=1),
        live(2, "a", "two", "p2", gpu=1), live(3, "a", "two", "p2", gpu=1), req(4, "a", "one", gpu=1)), {
        1: "preempting PreemptedByPriority by 4", 2: "allocated on p2", 3: "allocated on p2",
        4: "pending WaitingForQuota #1"}),
    Case("the non-preemptible share beats victims in flight", ("sec9", "R-45"), snapshot(
        SHARE_IN_FLIGHT, victim(1, "b", "one", "p1", by=4, reason=Reason.PREEMPTED_BY_PRIORITY, gpu=1),
        live(2, "a", "two", "p2", preemptible=False, gpu=1), live(3, "a", "two", "p2", preemptible=False, gpu=1),
        req(4, "a", "one", preemptible=False, gpu=1)), {
        1: "preempting PreemptedByPriority by 4", 2: "allocated on p2", 3: "allocated on p2",
        4: "pending WaitingForReservation #1"}),
]


@pytest.mark.parametrize("case", PRECEDENCE, ids=case_id)
def test_when_several_reasons_hold_the_one_others_finishing_cannot_cure_is_shown(case):
    assert outcome(case.snapshot) == case.expected


# --- positions --------------------------------------------------------------------------------

FULL = dict(gpu=1)  # what infra holds on a one-gpu pool
ONE_GPU = config(pool("p", gpu=1), policy("low"), policy("high", priority=5), policy("owner", "p:gpu 1/1"),
                 policy("guest"), policy("infra", "p:gpu 1/1"),
                 profile("job", "p", ("guest", "owner", "low", "high", "infra"), dynamic=True))
S13 = config(pool("p", ("small", "big"), gpu=4), policy("t"), profile("small", "p", "t", gpu=1),
             profile("big", "p", "t", gpu=2))
ORDERED = config(pool("p", ("second", "first"), gpu=1), policy("t"), policy("infra", "p:gpu 1/1"),
                 profile("first", "p", ("t", "infra"), dynamic=True), profile("second", "p", "t", dynamic=True))
TWO_QUEUES = config(pool("a", gpu=1), pool("b", ("on-b", "on-a"), gpu=4), policy("t"), policy("infra", "a:gpu 1/1", "b:gpu 4/4"),
                    profile("on-a", ("a", "b"), ("t", "infra"), dynamic=True), profile("on-b", "b", ("t", "infra"), dynamic=True))

POSITIONS = [
    Case("S-13: the pool's execution order serves small before big", ("R-32", "sec9"), snapshot(
        S13, req(1, "t", "big", gpu=2), req(2, "t", "big", gpu=2), req(3, "t", "small", gpu=1),
        req(4, "t", "small", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #1 in p", 3: "allocated on p", 4: "allocated on p"}),
    Case("higher priority first, whatever the submission time", ("R-32", "sec9"), snapshot(
        ONE_GPU, live(1, "infra", "job", "p", preemptible=False, **FULL), req(2, "low", "job", gpu=1),
        req(3, "high", "job", gpu=1)), {
        1: "allocated on p", 2: "pending BlockedByHigherPriority #2 in p", 3: "pending WaitingForCapacity #1 in p"}),
    Case("at equal priority a request in share before one that would borrow", ("R-32", "sec9"), snapshot(
        ONE_GPU, live(1, "infra", "job", "p", preemptible=False, **FULL), req(2, "guest", "job", gpu=1),
        req(3, "owner", "job", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #2 in p", 3: "pending WaitingForCapacity #1 in p"}),
    Case("then the pool's execution order of the profile", ("R-32", "sec9"), snapshot(
        ORDERED, live(1, "infra", "first", "p", preemptible=False, **FULL), req(2, "t", "first", gpu=1),
        req(3, "t", "second", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #2 in p", 3: "pending WaitingForCapacity #1 in p"}),
    Case("then the profile's policy rank", ("R-32", "sec9"), snapshot(
        ONE_GPU, live(1, "infra", "job", "p", preemptible=False, **FULL), req(2, "low", "job", gpu=1),
        req(3, "guest", "job", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #2 in p", 3: "pending WaitingForCapacity #1 in p"}),
    Case("then the earlier submission, then the id", ("R-32", "sec9"), snapshot(
        ONE_GPU, live(1, "infra", "job", "p", preemptible=False, **FULL), req(4, "low", "job", gpu=1, at_s=5),
        req(3, "low", "job", gpu=1, at_s=5), req(2, "low", "job", gpu=1, at_s=6)), {
        1: "allocated on p", 2: "pending WaitingForCapacity #3 in p", 3: "pending WaitingForCapacity #1 in p",
        4: "pending WaitingForCapacity #2 in p"}),
    Case("requests of one queue with different shapes are counted in submission order", ("R-32", "sec9"), snapshot(
        ONE_GPU, live(1, "infra", "job", "p", preemptible=False, **FULL), req(2, "low", "job", gpu=1),
        req(3, "low", "job", gpu=0.5),
        req(4, "low", "job", gpu=0.25), req(5, "low", "job", gpu=0.5), req(6, "low", "job", gpu=1, mcpu=100)), {
        1: "allocated on p", **{i: f"pending WaitingForCapacity #{i - 1} in p" for i in (2, 3, 4, 5, 6)}}),
    # One pass serves every pool from one order, so positions count across pools (decision 120):
    # on-b goes first on b, then the on-a requests by submission.
    Case("positions count the waiting requests of every pool in one order", ("R-32", "sec9"), snapshot(
        TWO_QUEUES, live(1, "infra", "on-a", "a", preemptible=False, gpu=1),
        live(2, "infra", "on-b", "b", preemptible=False, gpu=4),
        req(3, "t", "on-b", gpu=1), req(4, "t", "on-a", gpu=1), req(5, "t", "on-a", gpu=1)), {
        1: "allocated on a", 2: "allocated on b", 3: "pending WaitingForCapacity #1 in b",
        4: "pending WaitingForCapacity #2 in a", 5: "pending WaitingForCapacity #3 in a"}),
    Case("a request too big for its preferred pool queues at the next eligible one", ("R-32", "R-10", "sec9"), snapshot(
        TWO_QUEUES, live(1, "infra", "on-a", "a", preemptible=False, gpu=1),
        live(2, "infra", "on-b", "b", preemptible=False, gpu=4),
        req(3, "t", "on-b", gpu=1), req(4, "t", "on-a", gpu=2), req(5, "t", "on-a", gpu=1)), {
        1: "allocated on a", 2: "allocated on b", 3: "pending WaitingForCapacity #1 in b",
        4: "pending WaitingForCapacity #3 in b", 5: "pending WaitingForCapacity #2 in a"}),
]


@pytest.mark.parametrize("case", POSITIONS, ids=case_id)
def test_position_is_the_place_in_the_order_the_next_pass_serves(case):
    assert placed(case.snapshot) == case.expected


def test_a_second_pass_on_the_first_one_s_result_changes_nothing_and_gives_the_same_reasons():  # I-8
    state = snapshot(RANKED, live(1, "infra", "job", "p", preemptible=False, gpu=3), req(2, "high", "job", gpu=2),
                     req(3, "low", "job", gpu=2), req(4, "low", "job", gpu=1))
    first = plan(state)
    second = plan(carry_out(state, first))
    assert (len(first.grants), second.empty, second.waiting) == (1, True, first.waiting)
