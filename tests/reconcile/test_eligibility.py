"""Eligibility: could a request ever run? (R-10…R-15, reconcile/quota.py and the pass)

Two tables. The first asks ``reconcile.quota.eligibility`` directly and compares the eligible
pools, the rejection code and its sentence. The second runs a pass (``outcome``) and compares
every request's state: impossible requests are rejected at once (R-14), and pending requests
that a new configuration made impossible are rejected by the next pass (R-15).

Keys a pool does not meter (mcpu, memory_mb, step_run absent from its capacity) are never
checked there; listed in the capacity they are enforced like any other key.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconcile import Config, State, Vector, plan
from reconcile.model import Policy, Pool, Quota
from reconcile.quota import TermsCache, eligibility, eligible, ineligibility, pool_terms
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import Case, case_id, outcome


@dataclass(frozen=True)
class Ask:
    """One eligibility question: may ``policy`` submit ``resources`` to ``profile`` under ``cfg``?"""

    name: str
    rules: tuple[str, ...]
    cfg: Config
    policy: str
    profile: str
    resources: dict
    expected: tuple[tuple[str, ...], str | None, str | None]  # eligible pools, code, sentence
    preemptible: bool = True

    def __str__(self) -> str:
        return f"{'+'.join(self.rules)} {self.name}"


def judge(ask: Ask) -> tuple[tuple[str, ...], str | None, str | None]:
    resources = Vector.parse({**ask.resources, "step_run": 1})  # the server adds step_run: 1
    pools, failure = eligibility(TermsCache(ask.cfg), ask.policy, ask.profile, resources, ask.preemptible)
    return pools, (failure.reason.value if failure else None), (failure.message if failure else None)


SMALL = config(pool("small", gpu=8), policy("a", "small:gpu 2/4"), profile("job", "small", "a", dynamic=True))
DC = config(pool("dc", gpu=8), policy("ml", "dc:gpu 4/8", priority=10), profile("job", "dc", "ml", dynamic=True))
TRAIN = config(pool("train", gpu=4), policy("k8s", "train:gpu 2/4"), profile("job", "train", "k8s", dynamic=True))
TRAIN_CPU = config(pool("train", gpu=4, mcpu=8000), policy("k8s", "train:gpu 2/4"),
                   profile("job", "train", "k8s", dynamic=True))
TWO_POOLS = config(pool("a", gpu=2), pool("b", gpu=8), policy("t", "b:gpu /2"),
                   profile("ab", ("a", "b"), "t", dynamic=True), profile("ba", ("b", "a"), "t", dynamic=True))

ASKS = [
    # pool capacity, and keys the pool does not have.
    Ask("exactly the pool's capacity is eligible", ("R-10", "R-11"), config(
        pool("small", gpu=8), policy("a"), profile("job", "small", "a", dynamic=True)),
        "a", "job", {"gpu": 8}, (("small",), None, None)),
    Ask("0.001 over the pool's capacity is not", ("R-11", "R-14"), config(
        pool("small", gpu=8), policy("a"), profile("job", "small", "a", dynamic=True)),
        "a", "job", {"gpu": 8.001},
        ((), "ExceedsPoolCapacity", "8.001 gpu exceeds the capacity of pool small (8)")),
    Ask("a custom key the pool lacks", ("R-11", "R-14"), SMALL, "a", "job", {"gpu": 1, "disk": 1},
        ((), "ResourceNotInPool", "pool small has no disk")),
    Ask("unmetered keys absent from the capacity are never checked", ("R-11", "R-13"), TRAIN,
        "k8s", "job", {"gpu": 1, "mcpu": 32000, "memory_mb": 68720}, (("train",), None, None), preemptible=False),
    Ask("mcpu listed in the capacity is enforced", ("R-11", "R-14"), TRAIN_CPU, "k8s", "job",
        {"gpu": 1, "mcpu": 8001}, ((), "ExceedsPoolCapacity", "8001 mcpu exceeds the capacity of pool train (8000)")),
    Ask("mcpu listed in the capacity, at the capacity", ("R-11",), TRAIN_CPU, "k8s", "job",
        {"gpu": 1, "mcpu": 8000}, (("train",), None, None)),
    Ask("memory_mb listed in the capacity is enforced", ("R-11", "R-14"), config(
        pool("m", gpu=1, memory_mb=1000), policy("t"), profile("job", "m", "t", dynamic=True)),
        "t", "job", {"memory_mb": 1000.001},
        ((), "ExceedsPoolCapacity", "1000.001 memory_mb exceeds the capacity of pool m (1000)")),
    Ask("step_run listed in the capacity needs a reservation for non-preemptible work", ("R-13", "R-14"), config(
        pool("big", gpu=16, step_run=10), policy("t", "big:gpu 8/16"), profile("job", "big", "t", dynamic=True)),
        "t", "job", {"gpu": 1}, ((), "ExceedsReserved", "a non-preemptible request of 1 step_run exceeds the "
                                 "reservation of policy t (0 step_run on pool big)"), preemptible=False),
    Ask("step_run with a reservation row is fine", ("R-13",), config(
        pool("big", gpu=16, step_run=10), policy("t", "big:gpu 8/16", "big:step_run 4/4"),
        profile("job", "big", "t", dynamic=True)), "t", "job", {"gpu": 1}, (("big",), None, None), preemptible=False),
    # the limit at the pool's scope and at "*".
    Ask("exactly the pool-scope limit is eligible", ("R-12",), SMALL, "a", "job", {"gpu": 4}, (("small",), None, None)),
    Ask("0.001 over the pool-scope limit", ("R-12", "R-14"), SMALL, "a", "job", {"gpu": 4.001},
        ((), "ExceedsLimit", "4.001 gpu exceeds the limit of policy a (4 gpu on pool small)")),
    Ask("over the limit across all pools", ("R-12", "R-14"), config(
        pool("small", gpu=8), policy("a", "*:gpu /4"), profile("job", "small", "a", dynamic=True)),
        "a", "job", {"gpu": 5}, ((), "ExceedsLimit", "5 gpu exceeds the limit of policy a (4 gpu across all pools)")),
    Ask("a limit row of another pool does not apply", ("R-12",), config(
        pool("small", gpu=8), pool("other", gpu=8), policy("a", "other:gpu /1"), profile("job", "small", "a", dynamic=True)),
        "a", "job", {"gpu": 4}, (("small",), None, None)),
    Ask("every applicable limit holds: the pool row is the tighter", ("R-12", "R-14"), config(
        pool("h100", gpu=16), policy("ml", "*:gpu 8/16", "h100:gpu /8"), profile("job", "h100", "ml", dynamic=True)),
        "ml", "job", {"gpu": 9}, ((), "ExceedsLimit", "9 gpu exceeds the limit of policy ml (8 gpu on pool h100)")),
    Ask("every applicable limit holds: both are met", ("R-12",), config(
        pool("h100", gpu=16), policy("ml", "*:gpu 8/16", "h100:gpu /8"), profile("job", "h100", "ml", dynamic=True)),
        "ml", "job", {"gpu": 8}, (("h100",), None, None)),
    Ask("a limit on a key the pool does not meter is not checked", ("R-12",), config(
        pool("train", gpu=4), policy("k8s", "train:mcpu /1000"), profile("job", "train", "k8s", dynamic=True)),
        "k8s", "job", {"gpu": 1, "mcpu": 4000}, (("train",), None, None)),
    Ask("the same limit on a metered key is", ("R-12", "R-14"), config(
        pool("train", gpu=4, mcpu=8000), policy("k8s", "train:mcpu /1000"), profile("job", "train", "k8s", dynamic=True)),
        "k8s", "job", {"gpu": 1, "mcpu": 4000},
        ((), "ExceedsLimit", "4000 mcpu exceeds the limit of policy k8s (1000 mcpu on pool train)")),
    # non-preemptible requests live inside the reservation.
    Ask("non-preemptible at exactly the reservation", ("R-13",), DC, "ml", "job", {"gpu": 4},
        (("dc",), None, None), preemptible=False),
    Ask("non-preemptible above the reservation, though within the limit", ("R-13", "R-14"), DC, "ml", "job",
        {"gpu": 6}, ((), "ExceedsReserved",
                     "a non-preemptible request of 6 gpu exceeds the reservation of policy ml (4 gpu on pool dc)"),
        preemptible=False),
    Ask("the same amount preemptible is eligible", ("R-13",), DC, "ml", "job", {"gpu": 6}, (("dc",), None, None)),
    Ask("no reservation row on a metered key means a reservation of 0", ("R-13", "R-14"), TRAIN_CPU, "k8s", "job",
        {"gpu": 1, "mcpu": 1000}, ((), "ExceedsReserved",
                                   "a non-preemptible request of 1000 mcpu exceeds the reservation of policy k8s "
                                   "(0 mcpu on pool train)"), preemptible=False),
    Ask("non-preemptible above the reservation across all pools", ("R-13", "R-14"), config(
        pool("dc", gpu=8), policy("ml", "*:gpu 2/8"), profile("job", "dc", "ml", dynamic=True)),
        "ml", "job", {"gpu": 3}, ((), "ExceedsReserved",
                                  "a non-preemptible request of 3 gpu exceeds the reservation of policy ml "
                                  "(2 gpu across all pools)"), preemptible=False),
    Ask("every applicable reservation holds: the pool row is the tighter", ("R-13", "R-14"), config(
        pool("dc", gpu=8), policy("ml", "*:gpu 4/", "dc:gpu 2/"), profile("job", "dc", "ml", dynamic=True)),
        "ml", "job", {"gpu": 3}, ((), "ExceedsReserved",
                                  "a non-preemptible request of 3 gpu exceeds the reservation of policy ml "
                                  "(2 gpu on pool dc)"), preemptible=False),
    # which failure is named.
    Ask("R-11 is named before R-12, whatever the keys", ("R-14",), SMALL, "a", "job", {"gpu": 6, "disk": 1},
        ((), "ResourceNotInPool", "pool small has no disk")),
    Ask("R-12 is named before R-13", ("R-14",), config(
        pool("dc", gpu=8), policy("ml", "dc:gpu 4/5"), profile("job", "dc", "ml", dynamic=True)),
        "ml", "job", {"gpu": 6}, ((), "ExceedsLimit", "6 gpu exceeds the limit of policy ml (5 gpu on pool dc)"),
        preemptible=False),
    Ask("within one rule the first key in name order is named", ("R-14",), config(
        pool("p", gpu=8, lic=2), policy("t"), profile("job", "p", "t", dynamic=True)),
        "t", "job", {"lic": 3, "gpu": 10}, ((), "ExceedsPoolCapacity", "10 gpu exceeds the capacity of pool p (8)")),
    Ask("the most preferred pool's failure is named (a: capacity, b: limit)", ("R-14",), TWO_POOLS, "t", "ab",
        {"gpu": 9}, ((), "ExceedsPoolCapacity", "9 gpu exceeds the capacity of pool a (2)")),
    Ask("the most preferred pool's failure is named (b: limit, a: capacity)", ("R-14",), TWO_POOLS, "t", "ba",
        {"gpu": 3}, ((), "ExceedsLimit", "3 gpu exceeds the limit of policy t (2 gpu on pool b)")),
    Ask("eligible on a later pool only", ("R-10", "R-14"), config(
        pool("a", gpu=2), pool("b", gpu=8), policy("t"), profile("ab", ("a", "b"), "t", dynamic=True)),
        "t", "ab", {"gpu": 4}, (("b",), None, None)),
    Ask("eligible pools come in precedence order", ("R-10",), config(
        pool("a", gpu=8), pool("b", gpu=8), policy("t"), profile("ba", ("b", "a"), "t", dynamic=True)),
        "t", "ba", {"gpu": 4}, (("b", "a"), None, None)),
    Ask("a profile connected to no pool", ("R-14",), config(
        pool("a", gpu=8), policy("t"), profile("job", (), "t", dynamic=True)),
        "t", "job", {"gpu": 1}, ((), "NoConnectedPool", "profile job is connected to no pool")),
    Ask("a profile connected only to a pool that does not exist", ("R-14",), config(
        pool("a", gpu=8), policy("t"), profile("job", "gone", "t", dynamic=True)),
        "t", "job", {"gpu": 1}, ((), "NoConnectedPool", "profile job is connected to no pool")),
    Ask("a missing pool among the connections is skipped", ("R-10",), config(
        pool("a", gpu=8), policy("t"), profile("job", ("gone", "a"), "t", dynamic=True)),
        "t", "job", {"gpu": 1}, (("a",), None, None)),
]


@pytest.mark.parametrize("ask", ASKS, ids=case_id)
def test_eligibility_names_the_pools_or_the_first_failing_rule(ask):
    assert judge(ask) == ask.expected


INELIGIBILITY = [
    # (id, policy, pool, resources, preemptible, expected code or None)
    ("R-11 only keys the pool meters are compared", policy("t"), pool("p", gpu=1),
     {"gpu": 1, "mcpu": 10**9, "memory_mb": 10**9, "step_run": 1}, True, None),
    ("R-11 mcpu is compared once the pool lists it", policy("t"), pool("p", gpu=1, mcpu=1000),
     {"gpu": 1, "mcpu": 1001}, True, "ExceedsPoolCapacity"),
    ("R-12 a star row applies on every pool", policy("t", "*:gpu /1"), pool("p", gpu=8), {"gpu": 2}, True, "ExceedsLimit"),
    ("R-13 a preemptible request ignores the reservation", policy("t"), pool("p", gpu=8), {"gpu": 8}, True, None),
    ("R-13 a non-preemptible request without a reservation", policy("t"), pool("p", gpu=8), {"gpu": 1}, False,
     "ExceedsReserved"),
    ("R-13 a non-preemptible request of unmetered keys only", policy("t"), pool("p", gpu=8),
     {"mcpu": 1000, "step_run": 1}, False, None),
]


@pytest.mark.parametrize("name, pol, where, resources, preemptible, code", INELIGIBILITY,
                         ids=[row[0] for row in INELIGIBILITY])
def test_ineligibility_on_one_pool_checks_only_what_the_pool_meters(name, pol, where, resources, preemptible, code):
    failure = ineligibility(pool_terms(pol, where), Vector.parse(resources), preemptible)
    assert (failure.reason.value if failure else None) == code


# Small amounts around the bounds, keys the pool meters, may meter or lacks, scopes of this pool,
# of another and "*": every rule of R-11…R-13 both holds and fails in some draws.
_AMOUNT = st.integers(0, 6).map(lambda n: n * 500)
_BOUND = st.none() | _AMOUNT
_POOL = st.dictionaries(st.sampled_from(("gpu", "lic", "mcpu", "memory_mb")), st.integers(1, 6).map(lambda n: n * 500),
                        max_size=4).map(lambda capacity: Pool("p", Vector(capacity)))
_ROW = st.builds(Quota, st.sampled_from(("*", "p", "q")), st.sampled_from(("gpu", "lic", "mcpu")), _BOUND, _BOUND)
_RESOURCES = st.dictionaries(st.sampled_from(("gpu", "lic", "mcpu", "memory_mb", "step_run", "disk")), _AMOUNT,
                             max_size=4).map(Vector)


@settings(max_examples=500)
@given(_POOL, st.lists(_ROW, max_size=6), _RESOURCES, st.booleans())
def test_eligible_is_true_exactly_when_no_rule_fails(where, rows, resources, preemptible):  # R-10…R-14
    """R-10: a request is eligible on a pool when none of R-11…R-13 fails there. The pass asks
    ``eligible`` (one look per key) and only on failure ``ineligibility`` for the first failing rule
    (R-14): the two must agree."""
    terms = pool_terms(Policy("t", quotas=tuple(rows)), where)
    assert eligible(terms, resources, preemptible) == (ineligibility(terms, resources, preemptible) is None)


# --- through the pass ---------------------------------------------------------------------

LIMIT_4 = config(pool("small", gpu=8), policy("a", "small:gpu 2/4"), profile("job", "small", "a", dynamic=True))
LIMIT_2 = config(pool("small", gpu=8), policy("a", "small:gpu 2/2"), profile("job", "small", "a", dynamic=True))
SHRUNK = config(pool("small", gpu=2), policy("a", "small:gpu 2/4"), profile("job", "small", "a", dynamic=True))
NO_RESERVATION = config(pool("small", gpu=8), policy("a", "small:gpu /4"), profile("job", "small", "a", dynamic=True))
POOL_GONE = config(pool("other", gpu=8), policy("a"), profile("job", "small", "a", dynamic=True))
LATER_POOL = config(pool("a", gpu=2), pool("b", gpu=8), policy("t"), profile("ab", ("a", "b"), "t", dynamic=True))

PASSES = [
    Case("S-7: impossible requests are rejected at once, each with its reason", ("R-11", "R-12", "R-14"), snapshot(
        SMALL, req(1, "a", "job", gpu=10), req(2, "a", "job", gpu=6), req(3, "a", "job", gpu=1, disk=1),
        req(4, "a", "job", gpu=4)), {
        1: "rejected ExceedsPoolCapacity", 2: "rejected ExceedsLimit", 3: "rejected ResourceNotInPool",
        4: "allocated on small"}),
    Case("S-3: non-preemptible requests live inside the reservation", ("R-13", "R-14"), snapshot(
        DC, req(1, "ml", "job", preemptible=False, gpu=2), req(2, "ml", "job", preemptible=False, gpu=6)), {
        1: "allocated on dc", 2: "rejected ExceedsReserved"}),
    Case("S-4: unmetered keys are not checked", ("R-11", "R-13"), snapshot(
        TRAIN, req(1, "k8s", "job", preemptible=False, gpu=1, mcpu=32000, memory_mb=68720)), {1: "allocated on train"}),
    Case("S-5: a metered key without a reservation row", ("R-13", "R-14"), snapshot(
        TRAIN_CPU, req(1, "k8s", "job", gpu=1, mcpu=4000), req(2, "k8s", "job", preemptible=False, gpu=1, mcpu=1000)), {
        1: "allocated on train", 2: "rejected ExceedsReserved"}),
    Case("eligible on a later pool is granted there", ("R-10", "R-14"), snapshot(
        LATER_POOL, req(1, "t", "ab", gpu=4)), {1: "allocated on b"}),
    Case("eligible on a later pool waits there rather than being rejected", ("R-10", "R-14"), snapshot(
        LATER_POOL, req(1, "t", "ab", gpu=8, state=State.ALLOCATED, pool="b"), req(2, "t", "ab", gpu=4)), {
        1: "allocated on b", 2: "pending WaitingForCapacity #1"}),
    Case("a profile connected to no pool", ("R-14",), snapshot(
        config(pool("a", gpu=8), policy("t"), profile("job", (), "t", dynamic=True)), req(1, "t", "job", gpu=1)), {
        1: "rejected NoConnectedPool"}),
    Case("R-15: a lowered limit rejects a pending request above it, not one within it", ("R-15", "R-12"), snapshot(
        LIMIT_2, req(1, "a", "job", gpu=3), req(2, "a", "job", gpu=2)), {
        1: "rejected ExceedsLimit", 2: "allocated on small"}),
    Case("R-15: a shrunk pool rejects pending requests above it; live ones stay", ("R-15", "R-11", "R-57"), snapshot(
        SHRUNK, req(1, "a", "job", gpu=3, state=State.ALLOCATED, pool="small"), req(2, "a", "job", gpu=3),
        req(3, "a", "job", gpu=1)), {
        1: "allocated on small", 2: "rejected ExceedsPoolCapacity", 3: "pending WaitingForCapacity #1"}),
    Case("R-15: a removed reservation rejects non-preemptible requests only", ("R-15", "R-13"), snapshot(
        NO_RESERVATION, req(1, "a", "job", preemptible=False, gpu=1), req(2, "a", "job", gpu=1)), {
        1: "rejected ExceedsReserved", 2: "allocated on small"}),
    Case("R-15: a profile whose only pool was removed", ("R-15", "R-14"), snapshot(
        POOL_GONE, req(1, "a", "job", gpu=1)), {1: "rejected NoConnectedPool"}),
    Case("R-15: still eligible on a later pool, so not rejected", ("R-15", "R-10"), snapshot(
        LATER_POOL, req(1, "t", "ab", gpu=3)), {1: "allocated on b"}),
    Case("R-15: eligibility is checked while management is disabled", ("R-15", "R-58"), snapshot(
        LIMIT_4, req(1, "a", "job", gpu=5), req(2, "a", "job", gpu=1), enabled=False), {
        1: "rejected ExceedsLimit", 2: "pending ManagementDisabled #1"}),
]


@pytest.mark.parametrize("case", PASSES, ids=case_id)
def test_a_pass_rejects_every_request_that_can_never_run(case):
    assert outcome(case.snapshot) == case.expected


def test_a_rejection_from_the_pass_carries_the_sentence_of_the_most_preferred_pool():
    state = snapshot(TWO_POOLS, req(1, "t", "ab", gpu=9), req(2, "t", "ba", gpu=3))
    assert [(d.request_id, d.state, d.reason.value, d.message) for d in plan(state).rejections] == [
        (1, State.REJECTED, "ExceedsPoolCapacity", "9 gpu exceeds the capacity of pool a (2)"),
        (2, State.REJECTED, "ExceedsLimit", "3 gpu exceeds the limit of policy t (2 gpu on pool b)"),
    ]
