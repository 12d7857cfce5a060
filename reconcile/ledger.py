"""The planner's working copy of usage: charged as it grants, never the snapshot's (R-20…R-22).

>>> from reconcile.quota import pool_terms
>>> terms = pool_terms(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)), Pool("dc", Vector.of(gpu=8)))
>>> ledger = Ledger()
>>> ledger.fits(terms, Vector.of(gpu=6), preemptible=True), ledger.in_share(terms, Vector.of(gpu=6))
(True, False)
>>> ledger.charge("ml", "dc", Vector.of(gpu=6), preemptible=True)
>>> ledger.fits(terms, Vector.of(gpu=3), preemptible=True)   # 6 + 3 > 8
False

A preemptor's hold (R-45) counts for everyone else as its policy's usage, and as pool room
beyond what its victims still occupy (their capacity is already in use and will become its).
With 8 gpu in use, a hold of 4 gpu whose victim holds 4 takes no further room for others:

>>> ledger.charge("ml", "dc", Vector.of(gpu=2), preemptible=True)
>>> ledger.hold(7, "ml", "dc", Vector.of(gpu=4), True, victims=Vector.of(gpu=4))
>>> ledger.room_short(terms, Vector.of(gpu=1)), ledger.room_short(terms, Vector.of(gpu=4), request_id=7)
({'gpu': 1000}, {'gpu': 4000})
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from operator import attrgetter
from typing import NamedTuple

from .model import ALL_POOLS, LIVE_STATES, Config, Request
from .quantity import Vector
from .quota import Check, KeyChecks, PoolTerms

Usage = dict[str, int]


class Breach(NamedTuple):
    """A bound that granting a request would exceed: its key and scope, the usage there, the bound."""

    key: str
    scope: str
    usage: int
    bound: int


class Hold(NamedTuple):
    pool: str
    policy: str
    resources: Vector  # the preemptor's demand
    preemptible: bool
    room: Usage  # what it takes of the pool for others: demand beyond its victims' holdings
    reserving: bool = False  # held for a request past its policy's max wait, not for a preemptor


class Ledger:
    """Live usage per pool, per (policy, scope) and, of non-preemptible allocations alone, per
    (policy, scope) again; plus the capacity held for preemptors whose victims are being evicted
    (R-45)."""

    def __init__(self, config: Config | None = None) -> None:
        # Usage counts a key only on pools that meter it (§1: unmetered keys are never checked
        # there, so they cannot use up a quota either). Without a config every key counts.
        self.unmetered: dict[str, frozenset[str]] = {} if config is None else config.unmetered
        self.pool_used: defaultdict[str, Usage] = defaultdict(dict)  # pool → usage
        self.policy_used: defaultdict[tuple[str, str], Usage] = defaultdict(dict)  # (policy, scope) → usage
        # (policy, scope) → usage of its non-preemptible allocations, which R-22 bounds
        self.nonpreemptible_used: defaultdict[tuple[str, str], Usage] = defaultdict(dict)
        self.held: defaultdict[str, Usage] = defaultdict(dict)  # pool → room held for preemptors
        self.holds: dict[int, Hold] = {}  # preemptor id → its hold
        # pool → the room held for overdue requests (part of ``held``), and who holds it, senior first
        self.reserved: defaultdict[str, Usage] = defaultdict(dict)
        self.reserving: defaultdict[str, list[int]] = defaultdict(list)

    @classmethod
    def of_live(cls, requests: Iterable[Request], config: Config | None = None) -> Ledger:
        # Sum per (policy, pool, preemptible) first: far fewer charges than allocations.
        totals: defaultdict[tuple[str, str, bool], Usage] = defaultdict(dict)
        for r in requests:
            if r.state in LIVE_STATES and r.pool is not None:
                usage = totals[(r.policy, r.pool, r.preemptible)]
                for key, amount in r.resources.items():
                    usage[key] = usage.get(key, 0) + amount
        ledger = cls(config)
        for (policy, pool, preemptible), usage in totals.items():
            ledger.charge(policy, pool, usage, preemptible)
        return ledger

    def charge(self, policy: str, pool: str, resources: Usage, preemptible: bool, sign: int = 1,
               pool_room: bool = True) -> None:
        targets = [self.policy_used[(policy, pool)], self.policy_used[(policy, ALL_POOLS)]]
        if pool_room:
            targets.append(self.pool_used[pool])
        if not preemptible:
            targets += [self.nonpreemptible_used[(policy, pool)], self.nonpreemptible_used[(policy, ALL_POOLS)]]
        unmetered = self.unmetered.get(pool, ())
        for key, amount in resources.items():
            if key in unmetered:
                continue
            for usage in targets:
                usage[key] = usage.get(key, 0) + sign * amount

    # --- holds (R-45) --------------------------------------------------------------------

    def hold(self, request_id: int, policy: str, pool: str, resources: Vector, preemptible: bool,
             victims: Usage) -> None:
        """From now on ``resources`` on ``pool`` count as in use for every other request."""
        room = {key: amount - victims.get(key, 0) for key, amount in resources.items() if amount > victims.get(key, 0)}
        self._take(Hold(pool, policy, resources, preemptible, room), request_id)

    def reserve(self, request_id: int, policy: str, terms: PoolTerms, resources: Vector, preemptible: bool) -> None:
        """R-49: hold for an overdue request what is free on the pool of its demand, after the
        requests reserving there before it. Counted like a preemptor's hold (R-45)."""
        used, held = self.pool_used[terms.pool], self.held.get(terms.pool) or {}
        taken: Usage = {}
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                free = key_terms.capacity - used.get(key, 0) - held.get(key, 0)
                if free > 0:
                    taken[key] = min(amount, free)
        self._take(Hold(terms.pool, policy, resources, preemptible, taken, reserving=True), request_id)
        self.reserving[terms.pool].append(request_id)

    def clear_reservations(self) -> None:
        """R-49: give back every overdue request's hold, to be decided again."""
        for pool, holders in self.reserving.items():
            for request_id in holders:
                self._give_back(request_id)
            holders.clear()

    def yield_reserved(self, terms: PoolTerms) -> None:
        """R-49: a run granted into room held for overdue requests (a backfill) takes it from the
        most junior of them first, so the room held is again what is free."""
        pool = terms.pool
        used, held = self.pool_used[pool], self.held[pool]
        over = {}
        for key, key_terms in terms.keys.items():
            excess = used.get(key, 0) + held.get(key, 0) - key_terms.capacity
            if excess > 0:
                over[key] = excess
        for request_id in reversed(self.reserving[pool]):
            if not over:
                return
            hold = self._give_back(request_id)
            room = dict(hold.room)
            for key in list(over):
                taken = min(over[key], room.get(key, 0))
                room[key] = room.get(key, 0) - taken
                over[key] -= taken
                if not over[key]:
                    del over[key]
            self._take(hold._replace(room={k: v for k, v in room.items() if v}), request_id)

    @contextmanager
    def reservations_aside(self, pool: str) -> Iterator[None]:
        """R-49: the room held for overdue requests on ``pool`` counted as free: for a run that ends
        before they can start (backfill), and for a preemptor, whom it never makes short."""
        reserved, held = self.reserved.get(pool), self.held.get(pool)
        if not reserved or held is None:
            yield
            return
        _add(held, reserved, -1)
        try:
            yield
        finally:
            _add(held, reserved)

    def fits_as_backfill(self, terms: PoolTerms, resources: Vector, preemptible: bool) -> bool:
        """R-49: whether the request would fit if the room held for overdue requests were free."""
        with self.reservations_aside(terms.pool):
            return self.fits(terms, resources, preemptible)

    def release_hold(self, request_id: int) -> str | None:
        """The hold ends when its preemptor is granted (R-45); returns the pool it was on."""
        found = self.holds.get(request_id)
        if found is None:
            return None
        self._give_back(request_id)
        if found.reserving:
            self.reserving[found.pool].remove(request_id)
        return found.pool

    def _take(self, hold: Hold, request_id: int) -> None:
        self.holds[request_id] = hold
        self.charge(hold.policy, hold.pool, hold.resources, hold.preemptible, pool_room=False)
        _add(self.held[hold.pool], hold.room)
        if hold.reserving:
            _add(self.reserved[hold.pool], hold.room)

    def _give_back(self, request_id: int) -> Hold:
        hold = self.holds.pop(request_id)
        self.charge(hold.policy, hold.pool, hold.resources, hold.preemptible, sign=-1, pool_room=False)
        _add(self.held[hold.pool], hold.room, -1)
        if hold.reserving:
            _add(self.reserved[hold.pool], hold.room, -1)
        return hold

    @contextmanager
    def as_seen_by(self, request_id: int | None) -> Iterator[None]:
        """A preemptor's own hold is not in its way: set it aside while judging that request."""
        if request_id is None or request_id not in self.holds:
            yield
            return
        hold = self._give_back(request_id)
        try:
            yield
        finally:
            self._take(hold, request_id)

    # --- R-20 … R-22 -------------------------------------------------------------------

    def fits(self, terms: PoolTerms, resources: Vector, preemptible: bool, request_id: int | None = None) -> bool:
        """R-20, R-21 and R-22 together: could the request be granted on this pool now?"""
        if request_id in self.holds:
            with self.as_seen_by(request_id):
                return self.fits(terms, resources, preemptible)
        # The hot path of a pass: written out rather than composed from the checks below.
        used = self.pool_used[terms.pool]
        held = self.held.get(terms.pool) or {}
        policy_used, nonpreemptible_used, checks = self.policy_used, self.nonpreemptible_used, terms.checks
        for key, amount in resources.items():
            found = checks.get(key)
            if found is None:
                continue
            capacity, limits, reservations = found
            if used.get(key, 0) + held.get(key, 0) + amount > capacity:
                return False
            for usage_key, _, limit in limits:
                if policy_used[usage_key].get(key, 0) + amount > limit:
                    return False
            if not preemptible:
                for usage_key, _, reserved in reservations:
                    if nonpreemptible_used[usage_key].get(key, 0) + amount > reserved:
                        return False
        return True

    def room_short(self, terms: PoolTerms, resources: Vector, request_id: int | None = None) -> dict[str, int]:
        """R-20: per metered key, how much the pool lacks (in use + held for others + R − capacity)."""
        if request_id in self.holds:
            with self.as_seen_by(request_id):
                return self.room_short(terms, resources)
        used, held = self.pool_used[terms.pool], self.held.get(terms.pool) or {}
        short = {}
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                lack = used.get(key, 0) + held.get(key, 0) + amount - key_terms.capacity
                if lack > 0:
                    short[key] = lack
        return short

    def over_limit(self, terms: PoolTerms, resources: Vector) -> Breach | None:
        """R-21: the first limit that granting would exceed, or None."""
        return _first_breach(terms, resources, self.policy_used, _LIMITS)

    def over_reserved(self, terms: PoolTerms, resources: Vector, preemptible: bool) -> Breach | None:
        """R-22: for a non-preemptible request, the first reservation its policy's non-preemptible
        usage would exceed, or None."""
        return None if preemptible else _first_breach(terms, resources, self.nonpreemptible_used, _RESERVATIONS)

    def in_share(self, terms: PoolTerms, resources: Vector, request_id: int | None = None) -> bool:
        """R-32.2: usage + R ≤ effective reserved for every metered key at every scope."""
        return self._breach(terms, resources, request_id, self.policy_used, _RESERVATIONS) is None

    def _breach(self, terms: PoolTerms, resources: Vector, request_id: int | None, usage_of,
                bounds: Bounds) -> Breach | None:
        if request_id is None or request_id not in self.holds:
            return _first_breach(terms, resources, usage_of, bounds)
        with self.as_seen_by(request_id):
            return _first_breach(terms, resources, usage_of, bounds)


Bounds = Callable[[KeyChecks], tuple[Check, ...]]  # which bounds of a key a breach is looked for in
_LIMITS: Bounds = attrgetter("limits")
_RESERVATIONS: Bounds = attrgetter("reservations")


def _add(usage: Usage, amounts: Mapping[str, int], sign: int = 1) -> None:
    for key, amount in amounts.items():
        usage[key] = usage.get(key, 0) + sign * amount


def _first_breach(terms: PoolTerms, resources: Vector, usage_of, bounds: Bounds) -> Breach | None:
    checks = terms.checks
    for key, amount in resources.items():
        found = checks.get(key)
        if found is not None:
            for usage_key, scope, bound in bounds(found):
                usage = usage_of[usage_key].get(key, 0)
                if usage + amount > bound:
                    return Breach(key, scope, usage, bound)
    return None
