"""Effective quotas and eligibility: could a request ever run on a pool? (spec §1, R-10…R-14)

For policy Pol on pool P, each metered key has a list of limits and reservations from the
rows with scope P or ``*``. With no row stating a limit the limit is the pool's capacity (left
implicit: pool room already checks it); with none stating a reservation the reservation is 0.
A ``*`` row of ``reserved 8, limit 16`` and a ``h100`` row of ``limit 8`` give gpu on h100:

>>> from reconcile.model import Pool, Policy, Quota
>>> from reconcile.quantity import Vector
>>> dev = Policy("dev", quotas=(Quota("*", "gpu", 8000, 16000), Quota("h100", "gpu", None, 8000)))
>>> terms = pool_terms(dev, Pool("h100", Vector.of(gpu=8, mcpu=64)))
>>> terms.keys["gpu"].limits, terms.keys["gpu"].reserved
((('*', 16000), ('h100', 8000)), (('*', 8000),))
>>> ineligibility(terms, Vector.of(gpu=9), preemptible=True).reason   # R-11 comes first
<Reason.EXCEEDS_POOL_CAPACITY: 'ExceedsPoolCapacity'>

Keys a pool does not meter are never checked there: ``memory_mb`` is not metered on h100.

>>> ineligibility(terms, Vector.of(gpu=1, memory_mb=10**6), preemptible=True) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .model import ALL_POOLS, Config, Policy, Pool
from .quantity import UNMETERED_BY_DEFAULT, Vector, format_quantity
from .reasons import Reason

Bound = tuple[str, int]  # (scope, milli-units)


@dataclass(frozen=True, slots=True)
class KeyTerms:
    key: str
    capacity: int
    limits: tuple[Bound, ...]
    reserved: tuple[Bound, ...]


@dataclass(frozen=True, slots=True)
class PoolTerms:
    """What policy ``policy`` may use of pool ``pool``: one KeyTerms per metered key."""

    policy: str
    pool: str
    keys: dict[str, KeyTerms]

    def metered(self, key: str) -> bool:
        return key in self.keys

    def global_keys(self, preemptible: bool) -> set[str]:
        """Keys with a ``*`` limit here, or a ``*`` reservation binding a non-preemptible request."""
        return {key for key, terms in self.keys.items()
                if any(scope == ALL_POOLS for scope, _ in terms.limits)
                or (not preemptible and any(scope == ALL_POOLS for scope, _ in terms.reserved))}

    def has(self, key: str) -> bool:
        """False when the pool has none of ``key`` (R-11's ResourceNotInPool)."""
        return key in self.keys or key in UNMETERED_BY_DEFAULT


def pool_terms(policy: Policy, pool: Pool) -> PoolTerms:
    keys = {}
    for key, capacity in pool.capacity.items():
        rows = [q for q in policy.quotas if q.key == key and q.scope in (pool.name, ALL_POOLS)]
        limits = tuple((q.scope, q.limit) for q in rows if q.limit is not None)
        reserved = tuple((q.scope, q.reserved) for q in rows if q.reserved is not None)
        # Without a limit row the limit is the pool's capacity, which already
        # enforce; without a reservation row the reservation is 0 (§1).
        keys[key] = KeyTerms(key, capacity, limits, reserved or ((pool.name, 0),))
    return PoolTerms(policy.name, pool.name, keys)


class TermsCache:
    """PoolTerms per (policy, pool), built on first use: a pass touches few of the pairs."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._get = lru_cache(maxsize=None)(self._build)
        self._judged: dict[tuple, Ineligible | None] = {}

    def _build(self, policy: str, pool: str) -> PoolTerms:
        return pool_terms(self.config.policy[policy], self.config.pool[pool])

    def __call__(self, policy: str, pool: str) -> PoolTerms:
        return self._get(policy, pool)

    def ineligibility(self, policy: str, pool: str, resources: Vector, preemptible: bool) -> Ineligible | None:
        """``ineligibility`` memoised: many queues of a policy share pools and shapes."""
        key = (policy, pool, resources.signature, preemptible)
        if key not in self._judged:
            self._judged[key] = ineligibility(self(policy, pool), resources, preemptible)
        return self._judged[key]


@dataclass(frozen=True, slots=True)
class Ineligible:
    """The first rule that fails on a pool (R-14): code and a sentence with the numbers."""

    reason: Reason
    message: str


def ineligibility(terms: PoolTerms, resources: Vector, preemptible: bool) -> Ineligible | None:
    """None when the request is eligible on this pool (R-10), else the first failing rule.

    Rules are checked in order R-11, R-12, R-13; within a rule, keys in name order.
    """
    keys = sorted(resources)
    pool = terms.pool
    for key in keys:
        amount = resources[key]
        if not terms.has(key):
            return Ineligible(Reason.RESOURCE_NOT_IN_POOL, f"pool {pool} has no {key}")
        if terms.metered(key) and amount > terms.keys[key].capacity:
            return Ineligible(
                Reason.EXCEEDS_POOL_CAPACITY,
                f"{_q(amount)} {key} exceeds the capacity of pool {pool} ({_q(terms.keys[key].capacity)})",
            )
    for key in keys:
        for scope, limit in terms.keys[key].limits if terms.metered(key) else ():
            if resources[key] > limit:
                return Ineligible(
                    Reason.EXCEEDS_LIMIT,
                    f"{_q(resources[key])} {key} exceeds the limit of policy {terms.policy} "
                    f"({_q(limit)} {key} {_scope(scope)})",
                )
    if not preemptible:
        for key in keys:
            for scope, reserved in terms.keys[key].reserved if terms.metered(key) else ():
                if resources[key] > reserved:
                    return Ineligible(
                        Reason.EXCEEDS_RESERVED,
                        f"a non-preemptible request of {_q(resources[key])} {key} exceeds the "
                        f"reservation of policy {terms.policy} ({_q(reserved)} {key} {_scope(scope)})",
                    )
    return None


def eligibility(
    config: Config, terms: TermsCache, policy: str, profile: str, resources: Vector, preemptible: bool
) -> tuple[tuple[str, ...], Ineligible | None]:
    """Pools where the request is eligible, in precedence order, and why not when there are none.

    The reason given names the first failing rule on the most preferred pool (R-14).
    """
    pools = config.profile[profile].pools if profile in config.profile else ()
    known = [p for p in pools if p in config.pool]
    if not known:
        return (), Ineligible(Reason.NO_CONNECTED_POOL, f"profile {profile} is connected to no pool")
    eligible, first_failure = [], None
    for pool in known:
        failure = terms.ineligibility(policy, pool, resources, preemptible)
        if failure is None:
            eligible.append(pool)
        elif first_failure is None:
            first_failure = failure
    return tuple(eligible), (None if eligible else first_failure)


def _q(milli: int) -> str:
    return str(format_quantity(milli))


def _scope(scope: str) -> str:
    return "across all pools" if scope == ALL_POOLS else f"on pool {scope}"
