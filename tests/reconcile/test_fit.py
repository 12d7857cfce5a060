"""Fit: could a request run now? (R-20 pool room, R-21 limit, R-22 non-preemptible reserved share)

Each table puts a boundary on both sides: exactly at a bound fits, 0.001 over does not. The
first table runs one pass (``outcome``); live allocations belong to the same policy as the
waiting request, or are non-preemptible, so no preemption blurs the fit. The second asks
``Ledger.fits`` directly, together with the three checks the pass explains reasons with.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reconcile import Policy, Pool, State, Vector
from reconcile.ledger import Ledger
from reconcile.quota import pool_terms
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, outcome


def live(id: int, policy_name: str, profile_name: str, pool_name: str, **kwargs):
    """A request already allocated on ``pool_name``."""
    return req(id, policy_name, profile_name, state=State.ALLOCATED, pool=pool_name, **kwargs)


DC = config(pool("dc", gpu=8), policy("ml", "dc:gpu 4/8"), profile("job", "dc", "ml", dynamic=True))
ROOM = config(pool("dc", gpu=8), policy("ml", "dc:gpu 4/"), profile("job", "dc", "ml", dynamic=True))  # no limit row
A100 = config(pool("a100", gpu=1), policy("t"), profile("job", "a100", "t", dynamic=True))
LIMITED = config(pool("dc", gpu=8), policy("ml", "dc:gpu /4"), profile("job", "dc", "ml", dynamic=True))
STAR_LIMIT = config(pool("a", gpu=8), pool("b", gpu=8), policy("t", "*:gpu /4"),
                    profile("on-a", "a", "t", dynamic=True), profile("on-b", "b", "t", dynamic=True))
B_LIMIT = config(pool("a", gpu=8), pool("b", gpu=8), policy("t", "b:gpu /3"),
                 profile("on-a", "a", "t", dynamic=True), profile("on-b", "b", "t", dynamic=True))
# mcpu is metered on a only; usage across all pools still counts b's (docs/decisions.md §3).
STAR_CPU = config(pool("a", gpu=8, mcpu=16000), pool("b", gpu=8), policy("t", "*:mcpu /8000"),
                  profile("on-a", "a", "t", dynamic=True), profile("on-b", "b", "t", dynamic=True))
A_THEN_B = config(pool("a", gpu=8), pool("b", gpu=8), policy("t", "a:gpu /2"), profile("ab", ("a", "b"), "t", dynamic=True))
STAR_RESERVED = config(pool("a", gpu=8), pool("b", gpu=8), policy("t", "*:gpu 4/"),
                       profile("on-a", "a", "t", dynamic=True), profile("on-b", "b", "t", dynamic=True))
TRAIN = config(pool("train", gpu=4), policy("k8s", "train:gpu 2/4"), profile("job", "train", "k8s", dynamic=True))
TRAIN_CPU = config(pool("train", gpu=4, mcpu=8000), policy("k8s", "train:gpu 2/4"),
                   profile("job", "train", "k8s", dynamic=True))
BIG = config(pool("big", gpu=16, step_run=10), policy("t", "big:gpu 8/16", "big:step_run 4/4"),
             profile("job", "big", "t", dynamic=True))
# A pool shrunk to 4 gpu below 6 in use; lic is another metered key on it.
SHRUNK = config(pool("dc", gpu=4, lic=2), policy("ml", "dc:gpu 8/8", "dc:lic 2/2"), profile("job", "dc", "ml", dynamic=True))
LIMIT_LOWERED = config(pool("dc", gpu=8, lic=2), policy("ml", "dc:gpu /2"), profile("job", "dc", "ml", dynamic=True))

CASES = [
    # R-20 pool room
    Case("a request that exactly fills the pool fits", ("R-20",), snapshot(
        ROOM, live(1, "ml", "job", "dc", gpu=6), req(2, "ml", "job", gpu=2)), {
        1: "allocated on dc", 2: "allocated on dc"}),
    Case("0.001 over the pool's room does not fit", ("R-20",), snapshot(
        ROOM, live(1, "ml", "job", "dc", gpu=6), req(2, "ml", "job", gpu=2.001)), {
        1: "allocated on dc", 2: "pending WaitingForCapacity #1"}),
    Case("S-10: two halves fill one gpu, the third waits", ("R-20",), snapshot(
        A100, *(req(i, "t", "job", gpu=0.5) for i in (1, 2, 3))), {
        1: "allocated on a100", 2: "allocated on a100", 3: "pending WaitingForCapacity #1"}),
    Case("S-10: six MIG slices of 0.143 fit, the seventh (1.001) does not", ("R-20",), snapshot(
        A100, *(req(i, "t", "job", gpu=0.143) for i in range(1, 8))), {
        **{i: "allocated on a100" for i in range(1, 7)}, 7: "pending WaitingForCapacity #1"}),
    Case("fractions that add up to exactly the capacity all fit", ("R-20",), snapshot(
        A100, req(1, "t", "job", gpu=0.5), req(2, "t", "job", gpu=0.25), req(3, "t", "job", gpu=0.125),
        req(4, "t", "job", gpu=0.125)), {i: "allocated on a100" for i in (1, 2, 3, 4)}),
    # R-21 limit
    Case("up to exactly the pool-scope limit fits", ("R-21",), snapshot(
        LIMITED, live(1, "ml", "job", "dc", gpu=3), req(2, "ml", "job", gpu=1)), {
        1: "allocated on dc", 2: "allocated on dc"}),
    Case("0.001 over the pool-scope limit waits for quota", ("R-21",), snapshot(
        LIMITED, live(1, "ml", "job", "dc", gpu=3), req(2, "ml", "job", gpu=1.001)), {
        1: "allocated on dc", 2: "pending WaitingForQuota #1"}),
    Case("a star limit counts usage on other pools: at the limit fits", ("R-21",), snapshot(
        STAR_LIMIT, live(1, "t", "on-b", "b", gpu=3), req(2, "t", "on-a", gpu=1)), {
        1: "allocated on b", 2: "allocated on a"}),
    Case("a star limit counts usage on other pools: over it waits", ("R-21",), snapshot(
        STAR_LIMIT, live(1, "t", "on-b", "b", gpu=3), req(2, "t", "on-a", gpu=2)), {
        1: "allocated on b", 2: "pending WaitingForQuota #1"}),
    Case("a limit row of another pool does not apply here", ("R-21",), snapshot(
        B_LIMIT, live(1, "t", "on-b", "b", gpu=3), req(2, "t", "on-a", gpu=2), req(3, "t", "on-b", gpu=1)), {
        1: "allocated on b", 2: "allocated on a", 3: "pending WaitingForQuota #1"}),
    Case("a star limit does not count a key on pools that do not meter it", ("R-21", "sec1"), snapshot(
        STAR_CPU, live(1, "t", "on-b", "b", mcpu=6000), req(2, "t", "on-a", mcpu=6000), req(3, "t", "on-a", mcpu=2001)), {
        1: "allocated on b", 2: "allocated on a", 3: "pending WaitingForQuota #1"}),
    Case("a limit reached on the preferred pool sends the request to the next", ("R-21", "R-31"), snapshot(
        A_THEN_B, live(1, "t", "ab", "a", gpu=2), req(2, "t", "ab", gpu=1)), {
        1: "allocated on a", 2: "allocated on b"}),
    # R-22 non-preemptible usage within the reservation
    Case("non-preemptible up to exactly the reservation fits", ("R-22",), snapshot(
        DC, live(1, "ml", "job", "dc", preemptible=False, gpu=2), req(2, "ml", "job", preemptible=False, gpu=2)), {
        1: "allocated on dc", 2: "allocated on dc"}),
    Case("non-preemptible 0.5 over the reservation waits, though the limit has room", ("R-22",), snapshot(
        DC, live(1, "ml", "job", "dc", preemptible=False, gpu=2), req(2, "ml", "job", preemptible=False, gpu=2.5)), {
        1: "allocated on dc", 2: "pending WaitingForReservation #1"}),
    Case("preemptible usage does not count toward the reservation", ("R-22",), snapshot(
        DC, live(1, "ml", "job", "dc", gpu=6), req(2, "ml", "job", preemptible=False, gpu=2)), {
        1: "allocated on dc", 2: "allocated on dc"}),
    Case("a star reservation counts non-preemptible usage on other pools: within it", ("R-22",), snapshot(
        STAR_RESERVED, live(1, "t", "on-b", "b", preemptible=False, gpu=3),
        req(2, "t", "on-a", preemptible=False, gpu=1)), {
        1: "allocated on b", 2: "allocated on a"}),
    Case("a star reservation counts non-preemptible usage on other pools: over it", ("R-22",), snapshot(
        STAR_RESERVED, live(1, "t", "on-b", "b", preemptible=False, gpu=3),
        req(2, "t", "on-a", preemptible=False, gpu=2)), {
        1: "allocated on b", 2: "pending WaitingForReservation #1"}),
    Case("S-8: a preemptible request runs past a non-preemptible one waiting for its share", ("R-22", "R-33"), snapshot(
        config(pool("p", gpu=2), policy("c", "p:gpu 1/2"), profile("job", "p", "c", dynamic=True)),
        req(1, "c", "job", preemptible=False, gpu=1), req(2, "c", "job", preemptible=False, gpu=1),
        req(3, "c", "job", gpu=1)), {
        1: "allocated on p", 2: "pending WaitingForReservation #1", 3: "allocated on p"}),
    # unmetered and metered keys
    Case("S-4: unmetered keys do not count, however much is asked", ("R-20", "R-22"), snapshot(
        TRAIN, live(1, "k8s", "job", "train", gpu=1, mcpu=10**6),
        req(2, "k8s", "job", preemptible=False, gpu=1, mcpu=32000,
                                                                       memory_mb=68720)), {
        1: "allocated on train", 2: "allocated on train"}),
    Case("S-5: a metered key without a limit row is bounded by the pool: exactly fits", ("R-20", "R-21"), snapshot(
        TRAIN_CPU, live(1, "k8s", "job", "train", gpu=1, mcpu=4000), req(2, "k8s", "job", gpu=1, mcpu=4000)), {
        1: "allocated on train", 2: "allocated on train"}),
    Case("S-5: a metered key without a limit row is bounded by the pool: over waits for capacity", ("R-20", "R-21"),
         snapshot(TRAIN_CPU, live(1, "k8s", "job", "train", gpu=1, mcpu=4000), req(2, "k8s", "job", gpu=1, mcpu=4001)), {
        1: "allocated on train", 2: "pending WaitingForCapacity #1"}),
    Case("S-6: step_run listed in the pool caps concurrency by its limit", ("R-21",), snapshot(
        BIG, *(req(i, "t", "job", gpu=2) for i in range(1, 6))), {
        **{i: "allocated on big" for i in range(1, 5)}, 5: "pending WaitingForQuota #1"}),
    # R-57 over-commitment
    Case("a pool shrunk below its usage keeps its allocations and grants nothing on that key", ("R-57", "R-20"), snapshot(
        SHRUNK, live(1, "ml", "job", "dc", preemptible=False, gpu=3),
        live(2, "ml", "job", "dc", preemptible=False, gpu=3),
        req(3, "ml", "job", gpu=0.001), req(4, "ml", "job", lic=1)), {
        1: "allocated on dc", 2: "allocated on dc", 3: "pending WaitingForCapacity #1", 4: "allocated on dc"}),
    Case("once usage is back within the shrunk capacity, a fitting request is granted", ("R-57", "R-20"), snapshot(
        SHRUNK, live(1, "ml", "job", "dc", preemptible=False, gpu=3), req(3, "ml", "job", gpu=1)), {
        1: "allocated on dc", 3: "allocated on dc"}),
    Case("a limit lowered below usage grants nothing on that key", ("R-57", "R-21"), snapshot(
        LIMIT_LOWERED, live(1, "ml", "job", "dc", gpu=3), req(2, "ml", "job", gpu=0.5), req(3, "ml", "job", lic=1)), {
        1: "allocated on dc", 2: "pending WaitingForQuota #1", 3: "allocated on dc"}),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_request_is_granted_only_when_it_fits_now(case):
    assert outcome(case.snapshot) == case.expected


# --- Ledger.fits ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    """``resources`` asked by ``pol`` on ``where`` after ``charges`` (policy, pool, vector, preemptible)."""

    name: str
    rules: tuple[str, ...]
    pol: Policy
    where: Pool
    charges: tuple[tuple[str, str, dict, bool], ...]
    resources: dict
    preemptible: bool
    expected: tuple  # fits, room short, over limit, over reserved

    def __str__(self) -> str:
        return f"{'+'.join(self.rules)} {self.name}"


ML = policy("ml", "dc:gpu 4/8", "*:gpu 6/12")
DC_POOL = pool("dc", gpu=8, mcpu=8000)

FITS = [
    Fit("an empty pool takes exactly its capacity", ("R-20",), policy("t"), pool("p", gpu=8), (), {"gpu": 8}, True,
        (True, {}, None, None)),
    Fit("0.001 over the room is short by 0.001", ("R-20",), policy("t"), pool("p", gpu=8),
        (("t", "p", {"gpu": 6}, True),), {"gpu": 2.001}, True, (False, {"gpu": 1}, None, None)),
    Fit("others' usage takes room too", ("R-20",), policy("t"), pool("p", gpu=8),
        (("u", "p", {"gpu": 7.5}, False),), {"gpu": 0.5}, True, (True, {}, None, None)),
    Fit("usage on another pool takes no room here", ("R-20",), policy("t"), pool("p", gpu=8),
        (("t", "q", {"gpu": 8}, True),), {"gpu": 8}, True, (True, {}, None, None)),
    Fit("an unmetered key is never short", ("R-20",), policy("t"), pool("p", gpu=8),
        (("t", "p", {"mcpu": 10**9}, True),), {"gpu": 1, "mcpu": 10**9, "memory_mb": 10**9}, True,
        (True, {}, None, None)),
    Fit("a metered mcpu is short like gpu", ("R-20",), policy("t"), DC_POOL,
        (("t", "dc", {"mcpu": 7000}, True),), {"mcpu": 1001}, True, (False, {"mcpu": 1000}, None, None)),
    Fit("usage at the pool limit plus more is over it", ("R-21",), ML, DC_POOL,
        (("ml", "dc", {"gpu": 7}, True),), {"gpu": 1.5}, True, (False, {"gpu": 500}, ("gpu", "dc", 7000, 8000), None)),
    Fit("usage on another pool counts toward the star limit", ("R-21",), ML, DC_POOL,
        (("ml", "other", {"gpu": 11}, True),), {"gpu": 1.001}, True, (False, {}, ("gpu", "*", 11000, 12000), None)),
    Fit("exactly the star limit fits", ("R-21",), ML, DC_POOL,
        (("ml", "other", {"gpu": 11}, True),), {"gpu": 1}, True, (True, {}, None, None)),
    Fit("another policy's usage is not this policy's", ("R-21",), ML, DC_POOL,
        (("ops", "other", {"gpu": 12}, True),), {"gpu": 8}, True, (True, {}, None, None)),
    Fit("non-preemptible at exactly the reservation", ("R-22",), ML, DC_POOL,
        (("ml", "dc", {"gpu": 3}, False),), {"gpu": 1}, False, (True, {}, None, None)),
    Fit("non-preemptible over the pool reservation", ("R-22",), ML, DC_POOL,
        (("ml", "dc", {"gpu": 3}, False),), {"gpu": 1.001}, False, (False, {}, None, ("gpu", "dc", 3000, 4000))),
    Fit("non-preemptible usage elsewhere counts toward the star reservation", ("R-22",), ML, DC_POOL,
        (("ml", "other", {"gpu": 5}, False),), {"gpu": 2}, False, (False, {}, None, ("gpu", "*", 5000, 6000))),
    Fit("preemptible usage does not count toward the reservation", ("R-22",), ML, DC_POOL,
        (("ml", "dc", {"gpu": 4}, True),), {"gpu": 4}, False, (True, {}, None, None)),
    Fit("a preemptible request ignores the reservation", ("R-22",), ML, DC_POOL,
        (("ml", "dc", {"gpu": 4}, False),), {"gpu": 4}, True, (True, {}, None, None)),
    Fit("a metered key without a reservation row has reserved 0", ("R-22",), ML, DC_POOL,
        (), {"gpu": 1, "mcpu": 1}, False, (False, {}, None, ("mcpu", "dc", 0, 0))),
    Fit("a capacity below usage is short of any amount of that key", ("R-57", "R-20"), policy("t"), pool("p", gpu=4),
        (("t", "p", {"gpu": 6}, True),), {"gpu": 0.001}, True, (False, {"gpu": 2001}, None, None)),
    Fit("a capacity below usage on one key leaves the others free", ("R-57", "R-20"), policy("t"),
        pool("p", gpu=4, lic=2), (("t", "p", {"gpu": 6}, True),), {"lic": 2}, True, (True, {}, None, None)),
]


@pytest.mark.parametrize("fit", FITS, ids=case_id)
def test_ledger_fits_exactly_when_room_limit_and_reservation_all_hold(fit):
    ledger = Ledger()
    for policy_name, pool_name, vector, preemptible in fit.charges:
        ledger.charge(policy_name, pool_name, Vector.parse(vector), preemptible)
    terms, asked = pool_terms(fit.pol, fit.where), Vector.parse(fit.resources)
    assert (
        ledger.fits(terms, asked, fit.preemptible),
        ledger.room_short(terms, asked),
        ledger.over_limit(terms, asked),
        ledger.over_reserved(terms, asked, fit.preemptible),
    ) == fit.expected


HELD = [
    # (id, victims in flight, request id asking, expected fits): 4 of 8 gpu in use by policy u,
    # 4 gpu held for request 9 of policy h; the asker wants 4 gpu.
    ("R-45 held capacity is in use for every other request", {}, None, False),
    ("R-45 held capacity is in use for another waiting request", {}, 5, False),
    ("R-45 the preemptor itself may use what is held for it", {}, 9, True),
    ("R-45 a hold takes no room its victims already occupy", {"gpu": 4000}, None, True),
    ("R-45 a hold takes what its victims do not cover", {"gpu": 1000}, None, False),
]


@pytest.mark.parametrize("name, victims, asker, fits", HELD, ids=[row[0] for row in HELD])
def test_capacity_held_for_a_preemptor_counts_as_in_use_for_everyone_else(name, victims, asker, fits):
    ledger = Ledger()
    ledger.charge("u", "p", Vector.of(gpu=4), True)
    ledger.hold(9, "h", "p", Vector.of(gpu=4), True, victims=victims)
    terms = pool_terms(policy("t"), pool("p", gpu=8))
    assert ledger.fits(terms, Vector.of(gpu=4), True, request_id=asker) is fits


def test_a_hold_counts_as_usage_of_its_own_policy_for_everyone_else():  # R-45 with R-21
    ledger = Ledger()
    ledger.hold(9, "h", "p", Vector.of(gpu=4), True, victims={})
    terms = pool_terms(policy("h", "*:gpu /4"), pool("p", gpu=8))
    assert (ledger.fits(terms, Vector.of(gpu=1), True), ledger.fits(terms, Vector.of(gpu=4), True, request_id=9)) == (
        False, True)


def test_a_pass_does_not_change_its_snapshot():
    state = snapshot(DC, live(1, "ml", "job", "dc", gpu=6), req(2, "ml", "job", gpu=2))
    before = (state.now, state.config, state.requests)
    outcome(state)
    assert (state.now, state.config, state.requests) == before
