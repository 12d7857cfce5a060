"""Effective quotas and eligibility: could a request ever run on a pool? (docs/scheduling.md §1, R-10…R-14)

For policy Pol on pool P, each metered key has a list of limits and reservations from the
rows with scope P or ``*``. With no row stating a limit the limit is the pool's capacity (left
implicit: pool room already checks it); with none stating a reservation the reservation is 0.
A ``*`` row of ``reserved 8, limit 16`` and a ``h100`` row of ``limit 8`` give gpu on h100:

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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .model import ALL_POOLS, Config, Policy, Pool, scope_text
from .quantity import UNMETERED_BY_DEFAULT, Vector, quantity_text
from .reasons import Reason

Bound = tuple[str, int]  # (scope, milli-units)


class Check(NamedTuple):
    """One bound of a fit check, with the key of the ledger's usage it bounds made once."""

    usage_key: tuple[str, str]  # (policy, scope)
    scope: str
    bound: int  # milli-units


class KeyChecks(NamedTuple):
    """What a request's amount of one metered key is checked against on a pool (R-20…R-22)."""

    capacity: int
    limits: tuple[Check, ...]
    reservations: tuple[Check, ...]  # for non-preemptible requests, and to tell in share


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
    # Per metered key, the most one request may ask for: capacity and every limit,
    # and for a non-preemptible one every reservation too. See ``eligible``.
    most: dict[str, int] = field(init=False, repr=False, compare=False)
    most_nonpreemptible: dict[str, int] = field(init=False, repr=False, compare=False)
    # Per metered key, its bounds with the ledger's usage keys made once, for the fit checks of a
    # pass (ledger.py).
    checks: dict[str, KeyChecks] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        most, most_nonpreemptible, checks, policy = {}, {}, {}, self.policy
        for key, terms in self.keys.items():
            bound = terms.capacity
            for _, limit in terms.limits:
                bound = min(bound, limit)
            most[key] = bound
            for _, reserved in terms.reserved:
                bound = min(bound, reserved)
            most_nonpreemptible[key] = bound
            checks[key] = KeyChecks(
                terms.capacity, tuple([Check((policy, scope), scope, limit) for scope, limit in terms.limits]),
                tuple([Check((policy, scope), scope, reserved) for scope, reserved in terms.reserved]))
        object.__setattr__(self, "most", most)
        object.__setattr__(self, "most_nonpreemptible", most_nonpreemptible)
        object.__setattr__(self, "checks", checks)

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
    applying = [q for q in policy.quotas if q.scope == pool.name or q.scope == ALL_POOLS]
    keys = {}
    for key, capacity in pool.capacity.items():
        limits, reserved = [], []
        for q in applying:
            if q.key == key:
                if q.limit is not None:
                    limits.append((q.scope, q.limit))
                if q.reserved is not None:
                    reserved.append((q.scope, q.reserved))
        # Without a limit row the limit is the pool's capacity, which already
        # enforce; without a reservation row the reservation is 0 (§1).
        keys[key] = KeyTerms(key, capacity, tuple(limits), tuple(reserved) or ((pool.name, 0),))
    return PoolTerms(policy.name, pool.name, keys)


Connected = tuple[tuple[str, PoolTerms], ...]  # a queue's pools in precedence order, with the terms there


class TermsCache:
    """The terms of one configuration: PoolTerms per (policy, pool) and each queue's connected
    pools, built on first use (a pass touches few of the pairs).

    An explicit cache, because a configuration is a frozen value: whoever plans many passes on one
    configuration keeps one beside it and passes it in (``plan(snapshot, terms)``), so later passes
    find the terms made. Every entry is a pure function of the configuration, so two threads
    filling it at once can only build one entry twice.

    >>> terms = TermsCache(Config((Pool("h100", Vector.of(gpu=8)),), policies=(Policy("dev"),)))
    >>> terms("dev", "h100") is terms("dev", "h100")   # built once
    True
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._terms: dict[tuple[str, str], PoolTerms] = {}  # (policy, pool) → its terms
        self._queues: dict[tuple[str, str], Connected] = {}  # (policy, profile) → see ``connected``

    def __call__(self, policy: str, pool: str) -> PoolTerms:
        found = self._terms.get((policy, pool))
        if found is None:
            found = self._terms[(policy, pool)] = pool_terms(self.config.policy[policy], self.config.pool[pool])
        return found

    def connected(self, policy: str, profile: str) -> Connected:
        """The profile's known pools in precedence order, each with the policy's terms there;
        memoised, as a queue's requests come in many shapes."""
        found = self._queues.get((policy, profile))
        if found is None:
            config = self.config
            pools = config.profile[profile].pools if profile in config.profile else ()
            found = self._queues[(policy, profile)] = tuple(
                (pool, self(policy, pool)) for pool in pools if pool in config.pool)
        return found


def terms_for(config: Config, kept: TermsCache | None) -> TermsCache:
    """``kept`` when it was made for ``config``; None: a fresh cache, for this use alone."""
    if kept is None:
        return TermsCache(config)
    if kept.config != config:  # identical configurations compare at once
        raise ValueError("this TermsCache was made for another configuration")
    return kept


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
                f"{quantity_text(amount)} {key} exceeds the capacity of pool {pool} "
                f"({quantity_text(terms.keys[key].capacity)})",
            )
    for key in keys:
        for scope, limit in terms.keys[key].limits if terms.metered(key) else ():
            if resources[key] > limit:
                return Ineligible(
                    Reason.EXCEEDS_LIMIT,
                    f"{quantity_text(resources[key])} {key} exceeds the limit of policy {terms.policy} "
                    f"({quantity_text(limit)} {key} {scope_text(scope)})",
                )
    if not preemptible:
        for key in keys:
            for scope, reserved in terms.keys[key].reserved if terms.metered(key) else ():
                if resources[key] > reserved:
                    return Ineligible(
                        Reason.EXCEEDS_RESERVED,
                        f"a non-preemptible request of {quantity_text(resources[key])} {key} exceeds the "
                        f"reservation of policy {terms.policy} ({quantity_text(reserved)} {key} {scope_text(scope)})",
                    )
    return None


def eligible(terms: PoolTerms, resources: Mapping[str, int], preemptible: bool) -> bool:
    """``ineligibility(terms, resources, preemptible) is None``, in one look per key: the common
    case of a pass, which needs the rule and its sentence only when a request fails.

    >>> ml = pool_terms(Policy("ml", quotas=(Quota("*", "gpu", 2000, 4000),)), Pool("dc", Vector.of(gpu=8)))
    >>> eligible(ml, Vector.of(gpu=4, step_run=1), True), eligible(ml, Vector.of(gpu=4), False)
    (True, False)
    """
    most = terms.most if preemptible else terms.most_nonpreemptible
    for key, amount in resources.items():
        bound = most.get(key)
        if bound is None:
            if key not in UNMETERED_BY_DEFAULT:  # the pool has none of it
                return False
        elif amount > bound:
            return False
    return True


def eligibility(
    terms: TermsCache, policy: str, profile: str, resources: Vector, preemptible: bool
) -> tuple[tuple[str, ...], Ineligible | None]:
    """Pools where the request is eligible, in precedence order, and why not when there are none.

    The reason given names the first failing rule on the most preferred pool (R-14).
    """
    pools, failure = judge_queue(terms, policy, profile, resources, preemptible)
    return tuple(pool for pool, _ in pools), failure


def judge_queue(terms: TermsCache, policy: str, profile: str, resources: Vector,
                preemptible: bool) -> tuple[Connected, Ineligible | None]:
    """``eligibility`` on the queue's connected pools, keeping each eligible pool's terms."""
    pools = terms.connected(policy, profile)
    if not pools:
        return (), Ineligible(Reason.NO_CONNECTED_POOL, f"profile {profile} is connected to no pool")
    found = tuple(pair for pair in pools if eligible(pair[1], resources, preemptible))
    if found:
        return found, None
    # Eligible nowhere: the most preferred pool is the first that fails.
    return (), ineligibility(pools[0][1], resources, preemptible)
