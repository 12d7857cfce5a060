"""The invariants of docs/scheduling.md §10, checked on values: tests call these after every step, and
``manage.py check_state`` runs them on the stored state on demand (as the admin's
``GET /api/v1/health`` does). Each check returns a list of ``Violation``; empty is clean.

A key counts toward usage only where it is metered: on its pool, and at scope ``*`` summed over
the pools that meter it (§1: an unmetered key is never checked there, so it cannot be bounded).

>>> from dataclasses import replace
>>> small = Config(pools=(Pool("dc", Vector.of(gpu=2)),))
>>> job = Request(1, "ml", "job", Vector.of(gpu=1.5, step_run=1), t0, State.ALLOCATED, pool="dc", allocated_at=t0)
>>> two = Snapshot(t0, small, (job, replace(job, id=2)))
>>> check_state(two)
[Violation(invariant='I-1', message='pool dc: 3 gpu in use, above its capacity of 2')]

The same usage after a provision shrank the pool is over-commitment (R-57), allowed as long as
nothing new was granted on that key since the baseline:

>>> big = Snapshot(t0, Config(pools=(Pool("dc", Vector.of(gpu=4)),)), two.requests)
>>> check_state(two, baseline=big)
[]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .model import ALL_POOLS, Config, Pool, Request, Snapshot, State, scope_text
from .plan import Decision, Plan
from .planner import plan as plan_pass
from .quantity import Vector, quantity_text
from .reasons import Reason
from .report import row_order
from .transition import applied, carry_out

Usage = defaultdict[tuple[str, str, str], int]  # (owner, scope, key) → milli-units in use
POOL_ITSELF = ""  # the owner of a pool's own usage in a Usage, beside its policies


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str  # "I-1" … "I-8"
    message: str  # what is wrong, with the numbers


def check_state(snapshot: Snapshot, baseline: Snapshot | None = None) -> list[Violation]:
    """I-1…I-4. With ``baseline`` (the state before the step), a bound a provision lowered under
    usage is over-commitment, allowed while nothing new holds the key there and usage does not
    grow (R-57)."""
    config, live = snapshot.config, _live(snapshot.requests)
    usage = _usage(config, live)
    grown = usage if baseline is None else _usage(config, _new_since(baseline, live))
    before = None if baseline is None else _usage(config, _live(baseline.requests))

    def over(at: tuple[str, str, str], bound: int) -> bool:
        excused = before is not None and not grown.get(at) and usage[at] <= before.get(at, 0)
        return usage[at] > bound and not excused

    found = []
    for owner, pool, key in sorted(usage, key=row_order):
        if owner == POOL_ITSELF and over((owner, pool, key), capacity := config.pool[pool].capacity.get(key, 0)):
            found.append(Violation("I-1", f"pool {pool}: {quantity_text(usage[(owner, pool, key)])} {key} in use, "
                                          f"above its capacity of {quantity_text(capacity)}"))
    for policy in config.policies:
        for row in policy.quotas:
            if row.limit is not None and over(at := (policy.name, row.scope, row.key), row.limit):
                found.append(Violation("I-2", f"policy {policy.name} uses {quantity_text(usage[at])} {row.key} "
                                              f"{scope_text(row.scope)}, above its limit of "
                                              f"{quantity_text(row.limit)}"))
    return found + _check_reserved(config, live) + _check_allocations(snapshot)


def _check_reserved(config: Config, live: list[Request]) -> list[Violation]:
    """I-3: non-preemptible usage ≤ reserved at every scope; no row stating one means 0."""
    usage = _usage(config, [r for r in live if not r.preemptible])
    reservations = {}
    for (policy, scope, key) in usage:
        if scope != ALL_POOLS and policy in config.policy:  # (POOL_ITSELF, …) is not a policy
            rows = _bounds(config, policy, scope, key, "reserved")
            for where, reserved in rows or [(scope, 0)]:
                reservations[(policy, where, key)] = reserved
    found = []
    for at in sorted(reservations, key=row_order):
        policy, scope, key = at
        if usage[at] > reservations[at]:
            found.append(Violation("I-3", f"non-preemptible requests of policy {policy} use {quantity_text(usage[at])} "
                                          f"{key} {scope_text(scope)}, above its reservation of "
                                          f"{quantity_text(reservations[at])}"))
    return found


def _check_allocations(snapshot: Snapshot) -> list[Violation]:
    """I-4: ids are unique, and a live request holds capacity on exactly one known pool."""
    ids = Counter(r.id for r in snapshot.requests)
    return [Violation("I-4", f"request id {i} appears {n} times") for i, n in sorted(ids.items()) if n > 1] + [
        Violation("I-4", f"request {r.id} is {r.state} on unknown pool {r.pool!r}")
        for r in _live(snapshot.requests) if r.pool not in snapshot.config.pool]


def check_usage(snapshot: Snapshot, cached) -> list[Violation]:
    """I-5: a cached usage, in the shape of ``reconcile.ledger.Ledger(config)`` (``pool_used``,
    ``policy_used``, ``nonpreemptible_used``), equals the sum over live allocations; zero entries
    aside."""
    config, expected = snapshot.config, {"pool_used": defaultdict(Counter), "policy_used": defaultdict(Counter),
                                         "nonpreemptible_used": defaultdict(Counter)}
    for r in _live(snapshot.requests):
        targets = [("pool_used", r.pool), ("policy_used", (r.policy, r.pool)), ("policy_used", (r.policy, ALL_POOLS))]
        if not r.preemptible:
            targets += [("nonpreemptible_used", (r.policy, r.pool)),
                        ("nonpreemptible_used", (r.policy, ALL_POOLS))]
        for key, amount in r.resources.items():
            if key not in config.unmetered.get(r.pool, ()):  # a pool it does not know: counted
                for name, where in targets:
                    expected[name][where][key] += amount
    found = []
    for name, want in expected.items():
        have = getattr(cached, name)
        for where in sorted(set(want) | set(have), key=repr):
            if Vector(want.get(where, {})) != Vector(have.get(where, {})):
                found.append(Violation("I-5", f"{name}[{where}] is {Vector(have.get(where, {}))}, "
                                              f"live allocations sum to {Vector(want.get(where, {}))}"))
    return found


def check_transition(before: Snapshot, after: Snapshot) -> list[Violation]:
    """I-6: a request in a terminal state is still there, unchanged."""
    later = {r.id: r for r in after.requests}
    return [Violation("I-6", f"request {r.id} was {r.state}, then {later[r.id] if r.id in later else 'gone'}")
            for r in before.requests if r.state.terminal and later.get(r.id) != r]


def check_preemptions(snapshot: Snapshot, plan: Plan) -> list[Violation]:
    """I-7: every preemption of ``plan`` obeys R-30, R-40, R-41 and R-44 on ``snapshot``.

    Preemption runs after the time, queue and grant phases, so it is judged on their outcome:
    this pass's grants are live, allocated at ``plan.now``."""
    phase, found = _PreemptionPhase(snapshot.config, _after_grants(snapshot, plan), plan.now), []
    for decision in plan.preemptions:
        if why := "management is disabled (R-30)" if not snapshot.management_enabled else phase.unjustified(decision):
            found.append(Violation("I-7", f"request {decision.request_id} preempted for request "
                                          f"{decision.preempted_by} on pool {decision.pool}: {why}"))
    return found


class _PreemptionPhase:
    """The preemption phase as the plan reports it, decision by decision."""

    def __init__(self, config: Config, requests: dict[int, Request], now: datetime) -> None:
        self.config, self.requests, self.live, self.now = config, requests, _live(requests.values()), now
        self.holds = _holds(requests)  # preemptor → (pool, itself); grows as the pass preempts
        self.in_flight = {r.preempted_by for r in self.live if r.state == State.PREEMPTING}
        self.served: dict[int, str] = {}  # preemptor → the pool of the victims it took in this pass
        self.usage, self.claimed, self.last = _usage(config, self.live), set(), None

    def unjustified(self, decision: Decision) -> str | None:
        victim, preemptor = self.requests.get(decision.request_id), self.requests.get(decision.preempted_by)
        if decision.request_id in self.claimed or victim is None or preemptor is None:
            return "the victim is claimed twice in one pass, or unknown (R-40)"
        self.claimed.add(decision.request_id)
        why = self._preemptor(preemptor, decision) or self._victim(victim, preemptor, decision)
        self.served.setdefault(preemptor.id, decision.pool)
        self.holds.setdefault(preemptor.id, (decision.pool, preemptor))  # for the preemptors after it
        self.last = preemptor.id
        return why

    def _preemptor(self, preemptor: Request, decision: Decision) -> str | None:
        """R-40: the preemptor is pending, has no victims in flight, takes its victims on one of its pools."""
        served = self.served.get(preemptor.id)
        took_elsewhere = served and (self.last != preemptor.id or served != decision.pool)
        if preemptor.state != State.PENDING or preemptor.id in self.in_flight or took_elsewhere:
            return f"the preemptor is {preemptor.state}, or already has victims in flight (R-40)"
        if decision.pool not in self.config.profile[preemptor.profile].pools:
            return f"pool {decision.pool} is not connected to profile {preemptor.profile} (R-40)"
        return None

    def _victim(self, victim: Request, preemptor: Request, decision: Decision) -> str | None:
        """R-41 and the reason of R-44."""
        if (victim.state != State.ALLOCATED or not victim.preemptible or victim.policy == preemptor.policy
                or victim.pool != decision.pool):
            return (f"the victim is {victim.state}, preemptible={victim.preemptible}, of policy {victim.policy}, "
                    f"on pool {victim.pool} (R-41)")
        protected = self.config.policy[victim.policy].min_runtime_seconds
        if protected and victim.allocated_at + timedelta(seconds=protected) > self.now:
            return f"the victim has run less than the {protected} s of its policy's min_runtime_seconds (R-48)"
        lacking = self._lacking(preemptor, decision.pool)
        if not any(victim.resources.get(key) for key in lacking):
            return f"the victim holds none of the keys the preemptor is short of ({', '.join(lacking)}) (R-41)"
        low, high = self.config.policy[victim.policy].priority, self.config.policy[preemptor.policy].priority
        if decision.reason != (rule := Reason.PREEMPTED_BY_PRIORITY if low < high else Reason.RECLAIMED):
            return f"reason {decision.reason}, where the rule that applies gives {rule} (R-44)"
        if low < high:
            return None
        if not _in_share(self.config, self.usage, preemptor, self.config.pool[decision.pool]):
            return f"priority {low} is not below {high} and the preemptor would borrow (R-41)"
        borrowed = _borrowed(self.config, self.live, victim.policy)[victim.id]
        return None if any(borrowed.get(key) for key in lacking) else (
            f"priority {low} is not below {high} and the victim holds no borrowed {', '.join(lacking)} (R-41)")

    def _lacking(self, preemptor: Request, pool_name: str) -> list[str]:
        """R-20: the metered keys the preemptor is short of on the pool, counting what is held for others
        (R-45)."""
        pool, lacking = self.config.pool[pool_name], []
        for key, amount in sorted(preemptor.resources.items()):
            if key in pool.capacity:
                used = sum(r.resources.get(key, 0) for r in self.live if r.pool == pool_name)
                held = sum(holder.resources.get(key, 0) for holder_id, (pool_held, holder) in self.holds.items()
                           if pool_held == pool_name and holder_id != preemptor.id)
                if used + held + amount > pool.capacity[key]:
                    lacking.append(key)
        return lacking


def _after_grants(snapshot: Snapshot, plan: Plan) -> dict[int, Request]:
    """Every request as the preemption phase sees it: expiries, evictions, removals and grants done."""
    requests = {r.id: r for r in snapshot.requests}
    for d in (*plan.expiries, *plan.evictions, *plan.cancellations, *plan.rejections, *plan.grants):
        requests[d.request_id] = applied(requests[d.request_id], d, plan.now)
    return requests


def _holds(requests: dict[int, Request]) -> dict[int, tuple[str, Request]]:
    """R-45: a pending preemptor holds its demand on its victims' pool until it is granted. The
    whole demand: at least what the engine holds, so a key counts as short no less often."""
    holds = {r.id: (r.held_pool, r) for r in requests.values() if r.state == State.PENDING and r.held_pool}
    for victim in requests.values():
        preemptor = requests.get(victim.preempted_by) if victim.state == State.PREEMPTING else None
        if preemptor is not None and preemptor.state == State.PENDING:
            holds.setdefault(preemptor.id, (victim.pool, preemptor))
    return holds


def _in_share(config: Config, usage: Usage, preemptor: Request, pool: Pool) -> bool:
    """R-32.2: usage + R ≤ reserved for every metered key at every applicable scope (none = 0)."""
    for key, amount in preemptor.resources.items():
        if key not in config.unmetered[pool.name]:
            rows = _bounds(config, preemptor.policy, pool.name, key, "reserved") or [(pool.name, 0)]
            if any(usage[(preemptor.policy, scope, key)] + amount > reserved for scope, reserved in rows):
                return False
    return True


def _borrowed(config: Config, live: list[Request], policy: str) -> dict[int, dict[str, int]]:
    """§1: oldest first, each allocation consumes what is left of the reservation at each
    applicable scope; what exceeds it at any scope is borrowed."""
    consumed: defaultdict[tuple[str, str], int] = defaultdict(int)  # (scope, key) → reservation used
    borrowed: dict[int, dict[str, int]] = {}
    for allocation in sorted((r for r in live if r.policy == policy), key=lambda r: (r.allocated_at, r.grant_order, r.id)):
        units, unmetered = borrowed.setdefault(allocation.id, {}), config.unmetered.get(allocation.pool)
        for key, amount in allocation.resources.items():
            if unmetered is not None and key not in unmetered:  # on a known pool that meters it
                over = 0
                rows = _bounds(config, policy, allocation.pool, key, "reserved") or [(allocation.pool, 0)]
                for scope, reserved in rows:
                    consumed[(scope, key)] += amount
                    over = max(over, min(amount, consumed[(scope, key)] - reserved))
                units[key] = over
    return borrowed


def check_idempotent(snapshot: Snapshot, first: Plan | None = None) -> list[Violation]:
    """I-8: plan, apply, plan again on the same ``now``: the second pass decides nothing, and
    rewrites no reason a pending request shows. ``first``: the plan already made for ``snapshot``."""
    after = carry_out(snapshot, first if first is not None else plan_pass(snapshot))
    second = plan_pass(after)
    found = [Violation("I-8", f"{DECIDES_AGAIN}: request {decision.request_id} {decision.from_state} → "
                              f"{decision.state} ({decision.reason})") for decision in second.decisions()]
    if not found:
        again = {r.id: r for r in carry_out(after, second).requests}
        found = [Violation("I-8", f"{REWORDS}: request {r.id} {r.reason} → {again[r.id].reason}")
                 for r in after.requests if again[r.id] != r]
    return found


DECIDES_AGAIN, REWORDS = "the second pass decides again", "the second pass rewrites a reason"


# --- usage ---------------------------------------------------------------------------------


def _live(requests: Iterable[Request]) -> list[Request]:
    return [r for r in requests if r.state.live]


def _new_since(baseline: Snapshot, live: list[Request]) -> list[Request]:
    """Allocations that were not live, on the same pool since the same moment, in ``baseline``."""
    old = {(r.id, r.pool, r.allocated_at) for r in _live(baseline.requests)}
    return [r for r in live if (r.id, r.pool, r.allocated_at) not in old]


def _usage(config: Config, live: list[Request]) -> Usage:
    """(POOL_ITSELF, pool, key) → a pool's usage; (policy, scope, key) → a policy's, at each pool and
    ``*``."""
    usage: Usage = defaultdict(int)
    for r in live:
        unmetered = config.unmetered.get(r.pool)
        for key, amount in r.resources.items():
            if unmetered is not None and key not in unmetered:  # on a known pool that meters it
                for at in ((POOL_ITSELF, r.pool, key), (r.policy, r.pool, key), (r.policy, ALL_POOLS, key)):
                    usage[at] += amount
    return usage


def _bounds(config: Config, policy: str, pool: str, key: str, side: str) -> list[tuple[str, int]]:
    """The applicable rows (scope ``pool`` or ``*``) that state ``side``: (scope, amount)."""
    rows = config.policy[policy].quotas if policy in config.policy else ()
    return [(q.scope, getattr(q, side)) for q in rows
            if q.key == key and q.scope in (pool, ALL_POOLS) and getattr(q, side) is not None]
