"""Which units of a policy's live allocations are borrowed (spec §1, "reserved is accounting").

Walk the policy's live allocations oldest first; each consumes what is left of the reservation
at every applicable scope, and whatever exceeds it at any scope is borrowed. The newest
allocations are therefore the borrowed ones. With ``dc:gpu 4/8`` and allocations of 3 then 3
gpu on dc, the first is wholly in share and the second borrows 2:

>>> from datetime import datetime, timezone
>>> from reconcile.model import Config, Policy, Pool, Quota, Request, State
>>> from reconcile.quantity import Vector
>>> from reconcile.quota import TermsCache
>>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> config = Config(pools=(Pool("dc", Vector.of(gpu=8)),), policies=(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)),))
>>> live = [Request(i, "ml", "job", Vector.of(gpu=3), t0, state=State.ALLOCATED, pool="dc", allocated_at=t0) for i in (1, 2)]
>>> borrowed_units(TermsCache(config), "ml", live)
{1: {'gpu': 0}, 2: {'gpu': 2000}}
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from operator import attrgetter
from typing import NamedTuple

from .model import ALL_POOLS, Config, Policy, Request, State
from .quantity import Vector
from .quota import TermsCache


class Allocation(NamedTuple):
    """A live allocation made by this pass: what borrowing and preemption read of a request."""

    id: int
    policy: str
    pool: str
    resources: Vector
    preemptible: bool
    allocated_at: datetime
    state: State = State.ALLOCATED


def borrowed_units(terms: TermsCache, policy: str, live: Iterable[Request | Allocation]) -> dict[int, dict[str, int]]:
    """Borrowed milli-units per metered key of each live allocation of ``policy`` (by request id)."""
    config = terms.config
    stated = config.policy.get(policy)
    # pool → per metered key there, the reservations that apply, as ((scope, key), reserved)
    bounds: dict[str | None, dict[str, tuple[tuple[tuple[str, str], int], ...]]] = {}
    consumed: dict[tuple[str, str], int] = {}  # (scope, key) → reservation used by older allocations
    borrowed: dict[int, dict[str, int]] = {}
    mine = [r for r in live if r.policy == policy]
    if stated is not None and any(q.reserved is not None for q in stated.quotas):
        mine.sort(key=attrgetter("allocated_at", "id"))  # else nothing is reserved: order cannot matter
    for allocation in mine:
        on_pool = bounds.get(allocation.pool)
        if on_pool is None:
            on_pool = bounds[allocation.pool] = _reservations(config, stated, allocation.pool)
        units: dict[str, int] = {}
        resources = allocation.resources
        for key, reservations in on_pool.items():  # keys unmetered there: nobody can be short of them
            amount = resources.get(key)
            if amount is None:
                continue
            if not reservations:  # the reservation is 0 (§1): all of it is borrowed
                units[key] = amount
                continue
            most = 0  # the largest excess over any applicable reservation, at most the amount
            for scope_key, reserved in reservations:
                used = consumed[scope_key] = consumed.get(scope_key, 0) + amount
                if used - reserved > most:
                    most = min(used - reserved, amount)
            units[key] = most
        borrowed[allocation.id] = units
    return borrowed


def borrowing_keys(terms: TermsCache, policy: str, live: Iterable[Request | Allocation]) -> dict[int, set[str]]:
    """Per live allocation of ``policy`` (by request id), the metered keys it holds borrowed units of.

    A policy with no reservation row borrows every unit of a metered key (§1), in any order: the
    walk of ``borrowed_units`` is needed only for one that reserves something.

    >>> from datetime import datetime, timezone
    >>> from reconcile.model import Pool, Quota
    >>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> config = Config(pools=(Pool("dc", Vector.of(gpu=8)),),
    ...                 policies=(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)), Policy("guest")))
    >>> live = [Request(i, policy, "job", Vector.of(gpu=3, step_run=1), t0, state=State.ALLOCATED, pool="dc",
    ...                 allocated_at=t0) for i, policy in ((1, "ml"), (2, "ml"), (3, "guest"))]
    >>> borrowing_keys(TermsCache(config), "ml", live), borrowing_keys(TermsCache(config), "guest", live)
    ({1: set(), 2: {'gpu'}}, {3: {'gpu'}})
    """
    config = terms.config
    stated = config.policy.get(policy)
    if stated is not None and any(q.reserved is not None for q in stated.quotas):
        return {id: {key for key, amount in units.items() if amount}
                for id, units in borrowed_units(terms, policy, live).items()}
    metered: dict[str | None, frozenset[str]] = {}  # pool → its metered keys (none if unknown)
    found = {}
    for allocation in live:
        if allocation.policy == policy:
            keys = metered.get(allocation.pool)
            if keys is None:
                pool = config.pool.get(allocation.pool) if stated is not None else None
                keys = metered[allocation.pool] = frozenset(pool.capacity) if pool is not None else frozenset()
            found[allocation.id] = keys & allocation.resources.keys()
    return found


def _reservations(config: Config, policy: Policy | None, pool: str | None,
                  ) -> dict[str, tuple[tuple[tuple[str, str], int], ...]]:
    """Per key metered on ``pool``, the policy's reservation rows that apply there (scope the pool
    or ``*``, as in quota.pool_terms). No row means a reservation of 0 on the pool itself, which
    only this pool's allocations of the policy consume and every one of their units exceeds."""
    found = config.pool.get(pool) if pool is not None else None
    if found is None or policy is None:
        return {}
    rows = [q for q in policy.quotas if q.reserved is not None and (q.scope == pool or q.scope == ALL_POOLS)]
    return {key: tuple(((q.scope, key), q.reserved) for q in rows if q.key == key) for key in found.capacity}
