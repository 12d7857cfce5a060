"""The planner's working copy of usage: charged as it grants, never the snapshot's (R-20…R-22).

>>> from reconcile.model import Pool, Policy, Quota
>>> from reconcile.quota import pool_terms
>>> terms = pool_terms(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)), Pool("dc", Vector.of(gpu=8)))
>>> ledger = Ledger()
>>> ledger.fits(terms, Vector.of(gpu=6), preemptible=True), ledger.in_share(terms, Vector.of(gpu=6))
(True, False)
>>> ledger.charge("ml", "dc", Vector.of(gpu=6), preemptible=True)
>>> ledger.fits(terms, Vector.of(gpu=3), preemptible=True)   # 6 + 3 > 8
False
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .model import ALL_POOLS, Request
from .quantity import Vector
from .quota import PoolTerms

Usage = dict[str, int]


class Ledger:
    """Live usage per pool, per (policy, scope) and non-preemptible per (policy, scope), plus the
    capacity held for preemptors whose victims are being evicted (R-45)."""

    def __init__(self) -> None:
        self.pool_used: defaultdict[str, Usage] = defaultdict(dict)
        self.policy_used: defaultdict[tuple[str, str], Usage] = defaultdict(dict)
        self.policy_np: defaultdict[tuple[str, str], Usage] = defaultdict(dict)
        self.held: defaultdict[str, Usage] = defaultdict(dict)
        self.holds: dict[int, tuple[str, Vector]] = {}  # preemptor id → (pool, its demand)

    @classmethod
    def of_live(cls, requests: Iterable[Request]) -> Ledger:
        ledger = cls()
        for r in requests:
            if r.state.live and r.pool is not None:
                ledger.charge(r.policy, r.pool, r.resources, r.preemptible)
        return ledger

    def charge(self, policy: str, pool: str, resources: Vector, preemptible: bool, sign: int = 1) -> None:
        targets = [self.pool_used[pool], self.policy_used[(policy, pool)], self.policy_used[(policy, ALL_POOLS)]]
        if not preemptible:
            targets += [self.policy_np[(policy, pool)], self.policy_np[(policy, ALL_POOLS)]]
        for key, amount in resources.items():
            for usage in targets:
                usage[key] = usage.get(key, 0) + sign * amount

    def discharge(self, policy: str, pool: str, resources: Vector, preemptible: bool) -> None:
        self.charge(policy, pool, resources, preemptible, sign=-1)

    def hold(self, request_id: int, pool: str, resources: Vector) -> None:
        """R-45: from now on ``resources`` on ``pool`` count as in use for every other request."""
        self.holds[request_id] = (pool, resources)
        held = self.held[pool]
        for key, amount in resources.items():
            held[key] = held.get(key, 0) + amount

    def release_hold(self, request_id: int) -> str | None:
        """The hold ends when its preemptor is granted (R-45); returns the pool it was on."""
        found = self.holds.pop(request_id, None)
        if found is None:
            return None
        pool, resources = found
        held = self.held[pool]
        for key, amount in resources.items():
            held[key] -= amount
        return pool

    def held_for_others(self, pool: str, key: str, request_id: int | None) -> int:
        held = self.held[pool].get(key, 0) if pool in self.held else 0
        own = self.holds.get(request_id) if request_id is not None else None
        if own is not None and own[0] == pool:
            held -= own[1].get(key, 0)
        return held

    # --- R-20 … R-22 -------------------------------------------------------------------

    def room_short(self, terms: PoolTerms, resources: Vector, request_id: int | None = None) -> dict[str, int]:
        """R-20: per metered key, how much the pool lacks (in use + held for others + R − capacity)."""
        used = self.pool_used[terms.pool]
        short = {}
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                lack = used.get(key, 0) + self.held_for_others(terms.pool, key, request_id) + amount - key_terms.capacity
                if lack > 0:
                    short[key] = lack
        return short

    def over_limit(self, terms: PoolTerms, resources: Vector) -> tuple[str, str, int, int] | None:
        """R-21: the first (key, scope, usage, limit) that granting would exceed, or None."""
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                for scope, limit in key_terms.limits:
                    usage = self.policy_used[(terms.policy, scope)].get(key, 0)
                    if usage + amount > limit:
                        return key, scope, usage, limit
        return None

    def over_reserved(self, terms: PoolTerms, resources: Vector, preemptible: bool) -> tuple[str, str, int, int] | None:
        """R-22: for non-preemptible requests, the first (key, scope, np-usage, reserved) exceeded."""
        if preemptible:
            return None
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                for scope, reserved in key_terms.reserved:
                    usage = self.policy_np[(terms.policy, scope)].get(key, 0)
                    if usage + amount > reserved:
                        return key, scope, usage, reserved
        return None

    def fits(self, terms: PoolTerms, resources: Vector, preemptible: bool, request_id: int | None = None) -> bool:
        """R-20, R-21 and R-22 together: could the request be granted on this pool now?"""
        # The hot path of a pass: written out rather than composed from the three checks above.
        used = self.pool_used[terms.pool]
        held = self.held.get(terms.pool)
        policy_used, policy_np, policy = self.policy_used, self.policy_np, terms.policy
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is None:
                continue
            in_use = used.get(key, 0) + amount
            if held:
                in_use += self.held_for_others(terms.pool, key, request_id)
            if in_use > key_terms.capacity:
                return False
            for scope, limit in key_terms.limits:
                if policy_used[(policy, scope)].get(key, 0) + amount > limit:
                    return False
            if not preemptible:
                for scope, reserved in key_terms.reserved:
                    if policy_np[(policy, scope)].get(key, 0) + amount > reserved:
                        return False
        return True

    def in_share(self, terms: PoolTerms, resources: Vector) -> bool:
        """R-32.2: usage + R ≤ effective reserved for every metered key at every scope."""
        policy_used, policy = self.policy_used, terms.policy
        for key, amount in resources.items():
            key_terms = terms.keys.get(key)
            if key_terms is not None:
                for scope, reserved in key_terms.reserved:
                    if policy_used[(policy, scope)].get(key, 0) + amount > reserved:
                        return False
        return True
