"""Which units of a policy's live allocations are borrowed (docs/scheduling.md §1, "reserved is accounting").

Walk the policy's live allocations oldest first; each consumes what is left of the reservation
at every applicable scope, and whatever exceeds it at any scope is borrowed. The newest
allocations are therefore the borrowed ones. With ``dc:gpu 4/8`` and allocations of 3 then 3
gpu on dc, the first is wholly in share and the second borrows 2:

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

from .model import Policy, Request, State
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
    grant_order: int = 0  # its place among this pass's grants
    state: State = State.ALLOCATED
    time_limit_at: datetime | None = None  # when its run ends


def borrowed_units(terms: TermsCache, policy: str, live: Iterable[Request | Allocation]) -> dict[int, dict[str, int]]:
    """Borrowed milli-units per metered key of each live allocation of ``policy`` (by request id).

    The reservations are the policy's terms on the allocation's pool (quota.pool_terms): with no
    row a reservation of 0 on the pool itself, which every unit of the key exceeds (§1).
    """
    config = terms.config
    stated = config.policy.get(policy)
    consumed: dict[tuple[str, str], int] = {}  # (scope, key) → reservation used by older allocations
    borrowed: dict[int, dict[str, int]] = {}
    mine = [r for r in live if r.policy == policy]
    if _reserves(stated):
        mine.sort(key=_OLDEST_FIRST)  # else nothing is reserved: order cannot matter
    for allocation in mine:
        units: dict[str, int] = {}
        borrowed[allocation.id] = units
        if stated is None or allocation.pool not in config.pool:
            continue  # nothing is metered for it
        resources = allocation.resources
        for key, key_terms in terms(policy, allocation.pool).keys.items():  # unmetered keys: nobody is short
            amount = resources.get(key)
            if amount is None:
                continue
            most = 0  # the largest excess over any applicable reservation, at most the amount
            for scope, reserved in key_terms.reserved:
                used = consumed[scope, key] = consumed.get((scope, key), 0) + amount
                if used - reserved > most:
                    most = min(used - reserved, amount)
            units[key] = most
    return borrowed


def borrowing_keys(terms: TermsCache, policy: str, live: Iterable[Request | Allocation]) -> dict[int, set[str]]:
    """Per live allocation of ``policy`` (by request id), the metered keys it holds borrowed units of.

    A policy with no reservation row borrows every unit of a metered key (§1), in any order: the
    walk of ``borrowed_units`` is needed only for one that reserves something.

    >>> config = Config(pools=(Pool("dc", Vector.of(gpu=8)),),
    ...                 policies=(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)), Policy("guest")))
    >>> live = [Request(i, policy, "job", Vector.of(gpu=3, step_run=1), t0, state=State.ALLOCATED, pool="dc",
    ...                 allocated_at=t0) for i, policy in ((1, "ml"), (2, "ml"), (3, "guest"))]
    >>> borrowing_keys(TermsCache(config), "ml", live), borrowing_keys(TermsCache(config), "guest", live)
    ({1: set(), 2: {'gpu'}}, {3: {'gpu'}})
    """
    config = terms.config
    stated = config.policy.get(policy)
    if _reserves(stated):
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


# §1, R-47: oldest first is the order of the grants; the grants of one pass share ``allocated_at``
# and follow ``grant_order``. The id only parts allocations stored without it (granted before it
# was kept), as it always did.
_OLDEST_FIRST = attrgetter("allocated_at", "grant_order", "id")


def _reserves(policy: Policy | None) -> bool:
    """Whether the policy states a reservation on any row, so that the oldest allocations are in share."""
    return policy is not None and any(q.reserved is not None for q in policy.quotas)
