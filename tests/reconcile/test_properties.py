"""Property tests: random configurations and event sequences; the invariants of docs/scheduling.md §10 after
every step (reconcile.invariants), plus the purity of plan() and the shape of the waiting list.

A world is a configuration and a list of actions. Actions pick their target by index into the
requests that exist at that moment, so Hypothesis shrinks a failure to a short, readable story.
"""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta

import pytest
from hypothesis import given, note, settings, target
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from reconcile import Config, Plan, Policy, Pool, Profile, Quota, Reason, Request, Snapshot, State, Vector, plan
from reconcile import lifecycle
from reconcile.invariants import (
    REWORDS, check_idempotent, check_preemptions, check_state, check_transition, check_usage,
)
from reconcile.ledger import Ledger
from reconcile.model import ALL_POOLS
from reconcile.quantity import parse_quantity
from reconcile.quota import TermsCache
from reconcile.transition import carry_out
from tests.reconcile.actions import acted
from tests.reconcile.builders import T0

POOLS = ("h100", "a100", "mig", "cpu")
POLICIES = ("ml", "cv", "ops", "batch")
PROFILES = ("job", "half", "slice", "big")
LICENCE = "tensorrt_sessions"  # a custom key

# Quantities per key, as people would write them: fractions of a GPU, milli-CPUs, slots, licences.
AMOUNTS = {
    "gpu": ("2", "1", "2", "3", "1.5", "4", "0.5", "0.125", "0.143"),
    "mcpu": ("500", "4000", "4000", "16000"),
    "step_run": ("1", "2", "3", "5"),
    LICENCE: ("1", "2", "3"),
}
QUOTAS = {  # reserved and limit amounts; a zero reservation is common ("may only borrow")
    "gpu": ("2", "1", "4", "0.5", "0", "8"),
    "mcpu": ("4000", "0", "1000", "16000"),
    "step_run": ("2", "0", "1", "4"),
    LICENCE: ("1", "0", "2"),
}
DEMANDS = {
    "gpu": ("1", "0.5", "2", "0.125", "0.143", "1"),
    "mcpu": ("250", "1000", "4000"),
    LICENCE: ("1", "2"),
}
WAITING_REASONS = {
    Reason.MANAGEMENT_DISABLED, Reason.WAITING_FOR_CAPACITY, Reason.WAITING_FOR_QUOTA,
    Reason.WAITING_FOR_RESERVATION, Reason.BLOCKED_BY_HIGHER_PRIORITY, Reason.WAITING_FOR_PREEMPTION,
}


# Strategies are built once, here, and most are one choice from a finished table of at most ~250
# values (see the actions below): building or drawing piece by piece costs more than the pass.
def _sometimes(values: tuple[str, ...], absent: int) -> tuple[int | None, ...]:
    """None ``absent`` times in (absent + len(values)), else one of ``values``."""
    return (None,) * absent + tuple(map(parse_quantity, values))


def _vectors(**options: tuple[int | None, ...]) -> st.SearchStrategy[Vector]:
    """One draw: each key takes one of its options, absent for None."""
    keys = tuple(options)
    return st.sampled_from([Vector({k: v for k, v in zip(keys, amounts) if v})
                            for amounts in itertools.product(*options.values())])


# Every pool has gpu and every profile asks for some; the other keys come and go.
_GPU = st.sampled_from(AMOUNTS["gpu"]).map(parse_quantity)
_DEMAND_GPU = st.sampled_from(DEMANDS["gpu"]).map(parse_quantity)
_CAPACITY_EXTRAS = _vectors(mcpu=_sometimes(AMOUNTS["mcpu"], 5), step_run=_sometimes(AMOUNTS["step_run"], 5),
                            **{LICENCE: _sometimes(AMOUNTS[LICENCE][:1], 2)})
_DEMAND_EXTRAS = _vectors(mcpu=_sometimes(DEMANDS["mcpu"], 9), **{LICENCE: _sometimes(DEMANDS[LICENCE], 14)})
_ORDER = st.sampled_from(list(itertools.permutations(range(4))))
_ROW = st.tuples(st.sampled_from(list(itertools.product(range(5), ("gpu", *QUOTAS), ("both", "reserved", "limit")))),
                 st.sampled_from(list(itertools.product(range(6), repeat=2))))
_ROWS = st.lists(_ROW, max_size=4)
_PRIORITY = st.sampled_from((0, 5, 1, 0))
_COUNT = st.integers(1, 4)
_POLICY_COUNT = st.sampled_from((2, 3, 1, 4))  # two policies is the smallest world with preemption
# A profile's shape: how many of its pools and policies to keep (of a random order), dynamic or not.
_PROFILE_SHAPE = st.sampled_from(list(itertools.product((1, 2, 3, 1), (2, 3, 1, 4), (False, True))))


def _ordered(draw, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names in a random order."""
    return tuple(names[i] for i in draw(_ORDER) if i < len(names))


def _capacity(draw) -> Vector:
    """gpu; sometimes mcpu and step_run metered; sometimes a custom key."""
    return Vector({"gpu": draw(_GPU), **draw(_CAPACITY_EXTRAS)})


def _quotas(draw, pools: tuple[str, ...]) -> tuple[Quota, ...]:
    """Rows at a pool's scope or "*": reserved ≤ limit, or only one of them stated; one per scope and key."""
    rows = {}
    for (scope, key, side), (a, b) in draw(_ROWS):
        values = QUOTAS[key]
        low, high = sorted((parse_quantity(values[a % len(values)]), parse_quantity(values[b % len(values)])))
        scope = pools[scope] if scope < len(pools) else ALL_POOLS
        rows[(scope, key)] = Quota(scope, key, None if side == "limit" else low, None if side == "reserved" else high)
    return tuple(rows.values())


@st.composite
def configs(draw) -> Config:
    """1–4 pools, policies and profiles; each profile on 1–3 pools in random precedence."""
    pools, policies, profiles = POOLS[: draw(_COUNT)], POLICIES[: draw(_POLICY_COUNT)], PROFILES[: draw(_COUNT)]
    return Config(
        tuple(Pool(name, _capacity(draw), execution_order=_ordered(draw, profiles)) for name in pools),
        tuple(_profile(draw, name, pools, policies) for name in profiles),
        tuple(Policy(name, priority=draw(_PRIORITY), quotas=_quotas(draw, pools)) for name in policies),
    )


def _profile(draw, name: str, pools: tuple[str, ...], policies: tuple[str, ...]) -> Profile:
    allotment = Vector({"gpu": draw(_DEMAND_GPU), **draw(_DEMAND_EXTRAS)})
    connections, ranks, dynamic = draw(_PROFILE_SHAPE)
    connected, ranked = _ordered(draw, pools)[:connections], _ordered(draw, policies)[:ranks]
    return Profile(name, allotment, dynamic=dynamic, pools=connected, policies=ranked)


# An action is an entry of a table weighted by repetition (a third submits, a quarter passes, a
# sixth waits, management rarely switched; shrinking goes towards "pass"), and a detail for the
# entries that need one. Tables stay under ~250 values: Hypothesis draws those uniformly,
# where it favours the first entries of a larger one (which would send nearly every request to
# one queue).
_OWN = ((), (("gpu", 1),), (("gpu", 2),), (("gpu", 3),), (("gpu", 4),), (("mcpu", 2),), (("gpu", 0), ("mcpu", 1)))
SHAPES = list(itertools.product(_OWN, itertools.product((True, True, True, False), (0, 1, 2), (300, 10, 3600))))
ENTRIES = (
    (("pass",),) * 36 + tuple(("submit", queue) for queue in range(16)) * 3
    + tuple((kind, i) for kind in ("release", "cancel", "heartbeat") for i in range(8))
    + tuple(("wait", seconds) for seconds in (1, 5, 10, 29, 30, 31, 45, 60, 120, 299, 300, 600, 3600)) * 2
    + tuple(("capacity", pool) for pool in range(4)) * 2 + (("toggle",),) * 3
)


_ENTRY, _SHAPE, _PICKS = st.sampled_from(ENTRIES), st.sampled_from(SHAPES), st.sampled_from(range(25))


@st.composite
def _action(draw) -> tuple:
    """("submit", queue, own amounts, (preemptible, max_retries, lease_seconds)) and
    ("capacity", pool, (pick, pick)) draw their detail; other entries are whole."""
    entry = draw(_ENTRY)
    if entry[0] == "submit":
        return (*entry, *draw(_SHAPE))
    if entry[0] == "capacity":
        picks = draw(_PICKS)
        return (*entry, (picks % 5, picks // 5))
    return entry


ACTIONS = st.lists(_action(), min_size=10, max_size=40)
GRACE = st.sampled_from((timedelta(seconds=10), timedelta(seconds=30)))


@dataclass
class World:
    """A snapshot moved by actions, and a usage cache kept incrementally, as the service would (I-5);
    passes share the terms of their configuration until it changes, as the service's do."""

    snapshot: Snapshot
    cache: Ledger = field(init=False)
    terms: TermsCache = field(init=False)
    next_id: int = 1

    def __post_init__(self) -> None:
        # Resizing keeps each pool's keys, so what the cache counts as metered stays right.
        self.cache = Ledger(self.snapshot.config)
        self.terms = TermsCache(self.snapshot.config)

    def kept_terms(self) -> TermsCache:
        if self.terms.config is not self.snapshot.config:
            self.terms = TermsCache(self.snapshot.config)
        return self.terms

    def step(self, action: tuple) -> Plan | None:
        """Apply one action; the plan when the action was a pass."""
        before, result = self.snapshot, None
        kind = action[0]
        if kind == "pass":
            result = plan(before, self.kept_terms())
            self.snapshot = carry_out(before, result)
        elif kind == "submit":
            self.snapshot = self._submit(*action[1:])
        elif kind == "wait":
            self.snapshot = replace(before, now=before.now + timedelta(seconds=action[1]))
        elif kind == "capacity":
            self.snapshot = replace(before, config=_resized(before.config, *action[1:]))
        elif kind == "toggle":
            self.snapshot = replace(before, management_enabled=not before.management_enabled)
        else:
            self.snapshot = self._act_on(kind, action[1])
        self._recache(before, self.snapshot)
        return result

    def _submit(self, queue: int, own: tuple, terms: tuple[bool, int, int]) -> Snapshot:
        preemptible, max_retries, lease = terms
        config, s = self.snapshot.config, self.snapshot
        queues = [(pol, prof.name) for prof in config.profiles for pol in prof.policies]
        policy, profile = queues[queue % len(queues)]
        resources = dict(config.profile[profile].resources)
        if config.profile[profile].dynamic:
            resources.update({key: parse_quantity(DEMANDS[key][i]) for key, i in own})
        request = Request(self.next_id, policy, profile, Vector({**resources, "step_run": 1000}), s.now,
                          preemptible=preemptible, max_retries=max_retries, lease_seconds=lease, reason=Reason.SUBMITTED)
        self.next_id += 1
        return replace(s, requests=s.requests + (request,))

    def _act_on(self, kind: str, index: int) -> Snapshot:
        s = self.snapshot
        targets = [r for r in s.requests if not r.state.terminal] or list(s.requests)
        if not targets:
            return s
        target = targets[index % len(targets)]
        if kind == "heartbeat" and not target.state.live:
            return s  # the API answers 409 (lifecycle.NotLive); nothing changes
        changed = lifecycle.heartbeat(target, s.now) if kind == "heartbeat" else \
            acted(getattr(lifecycle, kind), target, s.now)
        return replace(s, requests=tuple(changed if r.id == target.id else r for r in s.requests))

    def _recache(self, before: Snapshot, after: Snapshot) -> None:
        old, new = _allocations(before), _allocations(after)
        for key in old.keys() - new.keys():
            r = old[key]
            self.cache.charge(r.policy, r.pool, r.resources, r.preemptible, sign=-1)
        for key in new.keys() - old.keys():
            r = new[key]
            self.cache.charge(r.policy, r.pool, r.resources, r.preemptible)


def _allocations(snapshot: Snapshot) -> dict[tuple, Request]:
    return {(r.id, r.pool, r.allocated_at): r for r in snapshot.requests if r.state.live}


def _resized(config: Config, index: int, picks: tuple[int, int]) -> Config:
    """Replace one pool's capacity: same keys, new amounts (up or down, possibly below usage)."""
    target = config.pools[index % len(config.pools)]
    keys = sorted(target.capacity)  # a pool has at most 4 keys; two picks, reused, keep the table small
    capacity = Vector({k: parse_quantity(AMOUNTS[k][picks[n % 2] % len(AMOUNTS[k])]) for n, k in enumerate(keys)})
    pools = tuple(replace(p, capacity=capacity) if p is target else p for p in config.pools)
    return replace(config, pools=pools)


def _say(line: str) -> None:
    """A line of the story Hypothesis prints with a failing example (printed by a plain test)."""
    note(line) if currently_in_test_context() else print(line)


def _story(config: Config) -> None:
    _say(f"pools: {[(p.name, str(p.capacity), p.execution_order) for p in config.pools]}")
    _say(f"policies: {[(p.name, p.priority, p.quotas, p.min_runtime_seconds, p.max_runtime_seconds, p.on_time_limit, p.max_wait_seconds) for p in config.policies]}")
    _say(f"profiles: {[(p.name, str(p.resources), p.dynamic, p.pools, p.policies) for p in config.profiles]}")


def _trace(step: int, action: tuple, result: Plan | None) -> None:
    summary = ""
    if result is not None:
        summary = " → " + ", ".join(f"{d.request_id}:{d.state}{'@' + d.pool if d.pool else ''}"
                                    f"{'<' + str(d.preempted_by) if d.preempted_by else ''}" for d in result.decisions())
    _say(f"step {step}: {action}{summary}")


def _walk(config: Config, actions: list[tuple], grace: timedelta) -> tuple[list[str], Counter]:
    """Take every step, asserting I-1…I-8 after each. Returns the reasons a second pass rewrote
    (a lesser I-8 breach, left to the caller), and how many preemptions (by reason) and evictions
    were made."""
    _story(config)
    world, reworded, made = World(Snapshot(T0, config, (), eviction_grace=grace)), [], Counter()
    for step, action in enumerate(actions):
        before = world.snapshot
        result = world.step(action)
        _trace(step, action, result)
        after = world.snapshot
        found = check_state(after, baseline=before) + check_transition(before, after) + check_usage(after, world.cache)
        if result is not None:
            second = check_idempotent(before, first=result)
            found += check_preemptions(before, result) + [v for v in second if not v.message.startswith(REWORDS)]
            reworded += [f"step {step}: {v.message}" for v in second if v.message.startswith(REWORDS)]
            made.update([*(d.reason.value for d in result.preemptions), *("evictions" for _ in result.evictions)])
        assert not found, "\n".join(f"{v.invariant}: {v.message}" for v in found)
    return reworded, made


@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_every_step_keeps_the_invariants(config: Config, actions: list[tuple], grace: timedelta):  # §10 I-1…I-8
    reworded, made = _walk(config, actions, grace)
    # Steer generation towards the rarer, riskier paths: preemption by priority, reclaim, eviction
    # after the grace. Per step, so that the examples kept for the next run are no longer than the
    # others; only when it happened, as Hypothesis keeps a costly record of each targeted example.
    if made:
        score = made["PreemptedByPriority"] + 2 * made["Reclaimed"] + 4 * made["evictions"]
        target(score / len(actions), label="preemptions, reclaims and evictions per step")
    # Its own assertion, checked last: Hypothesis reports it apart from the decisions, and a
    # rewritten reason cannot hide a worse failure.
    assert not reworded, "I-8: " + "\n".join(reworded)


def test_a_second_pass_keeps_the_reason_of_a_request_behind_a_preemptor():  # I-8, §9; found by the property above
    """Request 4 (cv) waits while request 3 (ml, priority 5) waits for its victim, request 2. The
    first pass tells 4 WaitingForCapacity; a second pass on the same state, BlockedByHigherPriority."""
    config = Config(
        (Pool("h100", Vector.of(gpu=2)), Pool("a100", Vector.of(gpu=2))),
        (Profile("job", Vector.of(gpu=2), pools=("h100", "a100"), policies=("ml", "cv")),),
        (Policy("ml", priority=5, quotas=(Quota(ALL_POOLS, "gpu", 0, 4000),)), Policy("cv")),
    )
    submit_ml, submit_cv = ("submit", 0, (), (True, 0, 300)), ("submit", 1, (), (True, 0, 300))
    actions = [submit_ml, submit_cv, ("pass",), submit_ml, submit_cv, ("pass",)]
    reworded, made = _walk(config, actions, timedelta(seconds=30))
    assert made == {"PreemptedByPriority": 1} and not reworded, reworded


def test_a_preemptor_whose_hold_went_void_takes_no_new_victims_while_its_own_leave():  # I-7, R-40; found above
    """Request 3 (cv, priority 5) preempts 2 on h100; h100 then shrinks below its need, so its hold
    there is void. While 2 is still leaving, 3 must not preempt 1 on a100 as well."""
    pools = tuple(Pool(name, Vector.of(gpu=2)) for name in ("h100", "a100"))
    config = Config(pools, (Profile("job", Vector.of(gpu=2), pools=("h100", "a100"), policies=("cv", "ml")),
                            Profile("half", Vector.of(gpu=1), pools=("h100",), policies=("ml", "cv")),
                            Profile("slice", Vector.of(gpu=1), pools=("a100",), policies=("ml",))),
                    (Policy("ml"), Policy("cv", priority=5)))
    ml_slice, ml_job, cv_job = (("submit", queue, (), (True, 0, 300)) for queue in (4, 1, 5))  # queue: its index
    actions = [ml_slice, ml_job, ("pass",), cv_job, ("pass",), ("capacity", 0, (1, 0)), ("pass",)]
    _, made = _walk(config, actions, timedelta(seconds=10))
    assert made == {"PreemptedByPriority": 1}

def _run(config: Config, actions: list[tuple], grace: timedelta, on_pass) -> None:
    """Take every step, calling ``on_pass`` with the snapshot of each pass before it is planned
    (and the terms the world keeps for its configuration)."""
    world = World(Snapshot(T0, config, (), eviction_grace=grace))
    for action in actions:
        if action[0] == "pass":
            on_pass(world.snapshot, world.kept_terms())
        world.step(action)


def _fingerprint(snapshot: Snapshot) -> tuple:
    """Every value a pass may read, as plain data: a changed vector or list shows up here."""
    cfg = snapshot.config
    return (
        snapshot.now, snapshot.management_enabled, snapshot.eviction_grace,
        tuple((p.name, dict(p.capacity.items()), p.execution_order) for p in cfg.pools),
        tuple((p.name, dict(p.resources.items()), p.dynamic, p.pools, p.policies) for p in cfg.profiles),
        tuple((p.name, p.priority, p.quotas) for p in cfg.policies),
        tuple(tuple(dict(v) if isinstance(v, Vector) else v for v in (getattr(r, f.name) for f in fields(r)))
              for r in snapshot.requests),
    )


@settings(max_examples=max(300, settings().max_examples // 4))  # secondary: deep copies at every pass
@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_plan_never_changes_its_snapshot(config: Config, actions: list[tuple], grace: timedelta):  # decision 1
    def check(snapshot: Snapshot, _) -> None:
        requests, config_before = snapshot.requests, snapshot.config
        twin, fingerprint = copy.deepcopy(snapshot), _fingerprint(snapshot)
        plan(snapshot)
        assert snapshot.requests is requests and snapshot.config is config_before
        assert snapshot == twin and _fingerprint(snapshot) == fingerprint
        cfg = snapshot.config  # derived lookups, if built, still describe the same configuration
        assert cfg.pool == {p.name: p for p in cfg.pools} and cfg.policy == {p.name: p for p in cfg.policies}
        assert cfg.profile == {p.name: p for p in cfg.profiles}

    _run(config, actions, grace, check)


@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_every_change_and_every_wait_has_a_reason_and_a_sentence(config: Config, actions: list[tuple],
                                                                  grace: timedelta):  # R-60, §9
    def check(snapshot: Snapshot, _) -> None:
        result = plan(snapshot)
        for decision in result.decisions():
            assert isinstance(decision.reason, Reason) and decision.message.strip(), decision
        pending = {r.id for r in carry_out(snapshot, result).requests if r.state == State.PENDING}
        assert set(result.waiting) == pending
        for waiting in result.waiting.values():
            assert waiting.reason in WAITING_REASONS and waiting.message
        positions = sorted(waiting.position for waiting in result.waiting.values())
        assert positions == list(range(1, len(positions) + 1))  # one order over every pool

    _run(config, actions, grace, check)


@settings(max_examples=max(300, settings().max_examples // 4))  # secondary: two plans at every pass
@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_terms_kept_across_passes_plan_as_fresh_ones(config: Config, actions: list[tuple], grace: timedelta):
    def check(snapshot: Snapshot, kept: TermsCache) -> None:
        assert plan(snapshot, kept) == plan(snapshot)

    _run(config, actions, grace, check)


def test_a_pass_refuses_the_terms_of_another_configuration():
    one, other = Config((Pool("h100", Vector.of(gpu=8)),)), Config((Pool("h100", Vector.of(gpu=4)),))
    plan(Snapshot(T0, one), TermsCache(Config((Pool("h100", Vector.of(gpu=8)),))))  # an equal one serves
    with pytest.raises(ValueError, match="another configuration"):
        plan(Snapshot(T0, one), TermsCache(other))


def _reclaimed_at_once(snapshot: Snapshot, kept: TermsCache) -> list[str]:
    """R-47: what a pass grants that a reclaim takes back in the same pass or in the next one,
    planned at the same moment with nothing new submitted. Not the grant of capacity held for a
    preemptor (R-45), where a policy's reservation and another's priority contradict each other
    (planner._reclaimed_grants)."""
    first = plan(snapshot, kept)
    held = {r.id: r.held_pool for r in snapshot.requests if r.held_pool is not None}
    granted = {d.request_id for d in first.grants if held.get(d.request_id) != d.pool}
    second = plan(carry_out(snapshot, first), kept)
    return [f"pass {n}: request {d.request_id}, granted in the first pass, reclaimed by {d.preempted_by}"
            for n, result in ((1, first), (2, second)) for d in result.preemptions
            if d.reason is Reason.RECLAIMED and d.request_id in granted]


@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_r47_no_pass_grants_what_a_waiting_request_reclaims_at_once(config: Config, actions: list[tuple],
                                                                     grace: timedelta):
    def check(snapshot: Snapshot, kept: TermsCache) -> None:
        found = _reclaimed_at_once(snapshot, kept)
        assert not found, "\n".join(found)

    _story(config)
    _run(config, actions, grace, check)


_PROTECTION = st.sampled_from((None, None, 10, 60, 600))
_MAX_WAIT = st.sampled_from((None, None, 0, 30, 120))
_RUN_LIMIT = st.sampled_from(((None, "end"), (None, "end"), (30, "end"), (60, "requeue"), (600, "end"),
                              (45, "requeue")))


@st.composite
def timed_configs(draw) -> Config:
    """``configs``, some policies protecting their running requests for a while (R-48), capping
    how long they run, ending or re-queuing them at the cap (R-52, R-53), and reserving capacity
    for requests that waited too long (R-49)."""
    config = draw(configs())
    policies = []
    for p in config.policies:
        cap, at_limit = draw(_RUN_LIMIT)
        policies.append(replace(p, min_runtime_seconds=draw(_PROTECTION), max_runtime_seconds=cap,
                                on_time_limit=at_limit, max_wait_seconds=draw(_MAX_WAIT)))
    return replace(config, policies=tuple(policies))


@given(config=timed_configs(), actions=ACTIONS, grace=GRACE)
def test_r48_r49_r52_with_the_time_rules_every_step_keeps_the_invariants(config: Config, actions: list[tuple],
                                                                     grace: timedelta):
    """I-1…I-8 as above; I-7 includes R-48: no victim has run less than its policy's min_runtime_seconds."""
    reworded, _ = _walk(config, actions, grace)
    assert not reworded, "I-8: " + "\n".join(reworded)


def test_a_second_pass_keeps_the_reason_of_a_request_behind_two_preemptors():  # I-8; found at stop 28 above
    """Requests 4 and 5 (cv, priority 5) preempt 3 on mig and 1 on h100; request 6 (cv) waits.
    The first pass tells 6 WaitingForCapacity; a second pass on the same state,
    BlockedByHigherPriority."""
    order = ("job", "half")
    pools = (Pool("h100", Vector.of(gpu=2, mcpu=4000, step_run=1), execution_order=order),
             *(Pool(name, Vector.of(gpu=gpu), execution_order=order) for name, gpu in
               (("a100", 2), ("mig", 2), ("cpu", 0.5))))
    config = Config(pools, (Profile("job", Vector.of(gpu=1), pools=("h100",), policies=("ml", "cv")),
                            Profile("half", Vector.of(gpu=1), pools=("mig", "cpu", "h100"), policies=("cv", "ml"))),
                    (Policy("ml"), Policy("cv", priority=5, quotas=(Quota("h100", "gpu", 1000, 1000),))))
    submit = [("submit", queue, (), (True, 0, 300)) for queue in (0, 2, 3, 2, 2, 3)]
    actions = [("pass",), ("pass",), *submit[:3], ("pass",), *submit[3:], ("pass",)]
    reworded, made = _walk(config, actions, timedelta(seconds=30))
    assert made == {"PreemptedByPriority": 2} and not reworded, reworded


def test_r47_a_request_barred_from_room_a_reclaim_takes_finds_its_victims_in_the_same_pass():  # I-8; found above
    """On h100 (1 gpu): ops (priority 5, no reservation) runs 1, ml (2 gpu reserved) runs 2; ml's 3
    and ops's 4 wait. Granted the free room, 4 would be reclaimed at once for 3 (R-47): barred, it
    must still take its victim by priority (2) in this pass, as the next pass would."""
    order = ("job", "half")
    config = Config((Pool("h100", Vector.of(gpu=2), execution_order=order),),
                    (Profile("job", Vector.of(gpu=0.5), pools=("h100",), policies=("ml",)),
                     Profile("half", Vector.of(gpu=0.125), pools=("h100",), policies=("ml", "ops"))),
                    (Policy("ml", quotas=(Quota("h100", "gpu", 2000, 2000),)), Policy("cv"), Policy("ops", priority=5)))
    submit = [("submit", queue, (), (True, 0, 300)) for queue in (11, 3, 0, 2)]
    actions = [("pass",)] * 3 + [*submit[:2], ("capacity", 0, (1, 0)), ("pass",), *submit[2:], ("pass",)]
    reworded, made = _walk(config, actions, timedelta(seconds=30))
    assert made == {"Reclaimed": 1, "PreemptedByPriority": 1} and not reworded, reworded


def test_r47_a_bar_the_reclaim_no_longer_needs_is_lifted():  # I-8; found by the property above in CI
    """cv's 5 and 7 are granted on a100 and reclaimed by ml's 6 at once, so barred; decided again,
    ml's re-queued 3 takes room there and ml's limit then stops 6: 7's bar has no reason left, and
    the next pass granted 7. Lifted, 7 is granted in the first pass."""
    order = ("job", "half")
    pools = (Pool("h100", Vector.of(gpu=0.5), execution_order=order), Pool("a100", Vector.of(gpu=2), execution_order=order))
    config = Config(pools, (Profile("job", Vector.of(gpu=1), True, ("h100", "a100"), ("ml", "cv", "ops")),
                            Profile("half", Vector.of(gpu=0.5), False, ("h100", "a100"), ("ml", "cv"))),
                    (Policy("ml", quotas=(Quota("a100", "gpu", 2000, 2000),)), Policy("cv", priority=5), Policy("ops")))
    actions = [("submit", 5, (("mcpu", 2),), (True, 1, 300)), ("submit", 6, (("gpu", 2),), (True, 0, 300)),
               ("submit", 10, (("gpu", 3),), (True, 1, 300)), ("pass",), ("release", 0),
               ("submit", 1, (("gpu", 1),), (True, 0, 300)), ("submit", 9, (), (True, 0, 300)),
               ("submit", 10, (), (True, 0, 300)), ("pass",), ("wait", 10),
               ("submit", 1, (("gpu", 1),), (True, 0, 300)), ("pass",)]
    reworded, _ = _walk(config, actions, timedelta(seconds=10))
    assert not reworded, reworded
