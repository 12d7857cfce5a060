"""R-49, no starvation: a request waiting longer than its policy's ``max_wait_seconds`` reserves
what frees on its first pool; only runs that end before it can start may use that room."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from reconcile import Reason, State, plan
from reconcile.invariants import check_idempotent
from reconcile.transition import carry_out
from tests.reconcile.builders import at, config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import describe

ALLOCATED = State.ALLOCATED

# Pool p has 8 gpu; "big" (8 gpu jobs) may wait 600 s before it reserves; "small" streams 2 gpu jobs.
WORLD = config(pool("p", gpu=8), pool("q", gpu=8),
               profile("job", ("p", "q"), ("big", "small"), dynamic=True, gpu=1),
               policy("big", max_wait_seconds=600), policy("small"))


def running(id: int, pol: str, gpu: float, ends_s: float | None, where: str = "p"):
    """A run on ``where`` since 0 s whose run limit ends at ``ends_s`` (None: no limit)."""
    found = req(id, pol, "job", state=ALLOCATED, pool=where, allocated_s=0, gpu=gpu)
    return replace(found, time_limit_at=None if ends_s is None else at(ends_s))


def limited(request, seconds: int):
    return replace(request, max_runtime_seconds=seconds)


def test_r49_before_its_max_wait_a_request_reserves_nothing_and_smaller_work_overtakes_it():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=500, gpu=8), req(4, "small", "job", at_s=900, gpu=2), now=1000)
    assert describe(s, plan(s))[4] == "allocated on p"  # waited 500 s: not yet 600


def test_r49_once_overdue_it_holds_what_is_free_on_its_first_pool_and_says_what_it_still_needs():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=300, gpu=8), req(4, "small", "job", at_s=900, gpu=2), now=1000)
    result = plan(s)
    assert describe(s, result) == {1: "allocated on p", 2: "allocated on q",
                                   3: "pending ReservingCapacity #1", 4: "pending WaitingForCapacity #2"}
    assert result.waiting[3].pool == "p"
    assert result.waiting[3].message == (
        "it has waited longer than policy big's max_wait_seconds (600 s): what frees on pool p is held for it; "
        "it still needs 6 gpu; the run limits there free it by 2026-01-01 01:23:20 UTC")
    assert result.waiting[4].message == (
        "pool p is short of 2 gpu (6 of 8 in use, 2 held for requests past their policy's max wait): the capacity "
        "is held for request(s) 3, served first; pool q is short of 2 gpu (8 of 8 in use)")


def test_r49_waiting_exactly_its_max_wait_is_not_overdue():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=400, gpu=8), req(4, "small", "job", at_s=900, gpu=2), now=1000)
    assert plan(s).waiting[3].reason is Reason.WAITING_FOR_CAPACITY
    assert plan(replace(s, now=at(1001))).waiting[3].reason is Reason.RESERVING_CAPACITY


def test_r49_a_run_that_ends_before_the_reservation_can_start_backfills_its_room_and_one_that_does_not_waits():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=300, gpu=8),
                 limited(req(4, "small", "job", at_s=900, gpu=2), 5000),  # would end at 6000: after 5000
                 limited(req(5, "small", "job", at_s=950, gpu=2), 4000), now=1000)  # ends at 5000: in time
    result = plan(s)
    assert [g.request_id for g in result.grants] == [5]
    assert result.waiting[3].message.endswith("it still needs 8 gpu; the run limits there free it by "
                                              "2026-01-01 01:23:20 UTC")
    assert check_idempotent(s, first=result) == []


def test_r49_without_run_limits_there_no_start_is_known_and_nothing_backfills():
    s = snapshot(WORLD, running(1, "small", 6, None), running(2, "small", 8, None, "q"),
                 req(3, "big", "job", at_s=300, gpu=8), limited(req(5, "small", "job", at_s=950, gpu=2), 60),
                 now=1000)
    result = plan(s)
    assert result.grants == ()
    assert result.waiting[3].message.endswith("it still needs 6 gpu")


def test_r49_the_reservation_is_granted_when_enough_has_freed():
    s = snapshot(WORLD, running(2, "small", 8, 5000, "q"), req(3, "big", "job", at_s=300, gpu=8),
                 req(4, "small", "job", at_s=900, gpu=2), now=1000)
    assert describe(s, plan(s))[3] == "allocated on p"


def test_r49_overdue_requests_on_one_pool_are_served_senior_first():
    world = config(pool("p", gpu=8), profile("job", "p", ("big", "urgent", "small"), dynamic=True, gpu=1),
                   policy("big", max_wait_seconds=600), policy("urgent", priority=5, max_wait_seconds=600),
                   policy("small"))
    s = snapshot(world, running(1, "small", 4, 5000), req(2, "big", "job", at_s=100, gpu=4),
                 req(3, "urgent", "job", at_s=200, gpu=6), req(4, "big", "job", at_s=150, gpu=2), now=1000)
    result = plan(s)
    # urgent's 6 gpu come first (priority): they hold the 4 free; the two big ones wait behind it.
    assert result.waiting[3].message.endswith("it still needs 2 gpu; the run limits there free it by "
                                              "2026-01-01 01:23:20 UTC")
    for behind in (2, 4):
        assert result.waiting[behind].reason is Reason.BLOCKED_BY_HIGHER_PRIORITY
        assert result.waiting[behind].message.endswith("the capacity is held for request(s) 3, served first")
    assert result.grants == ()


def test_r49_a_request_its_own_policy_stops_on_its_first_pool_reserves_on_the_next():
    world = config(pool("p", gpu=8), pool("q", gpu=8),
                   profile("job", ("p", "q"), ("big", "small"), dynamic=True, gpu=1),
                   policy("big", "p:gpu /4", max_wait_seconds=600), policy("small"))
    s = snapshot(world, running(1, "big", 4, 5000), running(2, "small", 6, 5000, "q"),
                 req(3, "big", "job", at_s=300, gpu=4), req(4, "small", "job", at_s=900, gpu=2), now=1000)
    result = plan(s)
    assert result.waiting[3].pool == "q"
    assert [g.request_id for g in result.grants] == [4]  # p is free for others: big may use no more there


def test_r49_a_second_pass_holds_the_same_room_and_grants_nothing_more():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=300, gpu=8), limited(req(4, "small", "job", at_s=900, gpu=1), 1000),
                 limited(req(5, "small", "job", at_s=950, gpu=1), 9000), now=1000)
    first = plan(s)
    assert [g.request_id for g in first.grants] == [4]
    second = plan(carry_out(s, first))
    assert second.grants == () and second.waiting[3] == first.waiting[3]._replace(position=second.waiting[3].position)


def test_r49_without_max_wait_seconds_the_pass_is_todays():
    quiet = config(pool("p", gpu=8), pool("q", gpu=8), profile("job", ("p", "q"), ("big", "small"), dynamic=True,
                                                                gpu=1), policy("big"), policy("small"))
    s = snapshot(quiet, running(1, "small", 6, None), running(2, "small", 8, None, "q"),
                 req(3, "big", "job", at_s=0, gpu=8), req(4, "small", "job", at_s=900, gpu=2), now=50000)
    assert describe(s, plan(s)) == {1: "allocated on p", 2: "allocated on q", 3: "pending WaitingForCapacity #1",
                                    4: "allocated on p"}


def test_r49_the_pass_loop_wakes_when_the_first_waiting_request_becomes_overdue():
    s = snapshot(WORLD, running(1, "small", 6, 5000), running(2, "small", 8, 5000, "q"),
                 req(3, "big", "job", at_s=700, gpu=8), req(4, "small", "job", at_s=800, gpu=8), now=1000)
    woken = plan(s).wake_at
    assert woken == at(1300) + timedelta(microseconds=1)
    assert plan(replace(s, now=woken)).waiting[3].reason is Reason.RESERVING_CAPACITY
