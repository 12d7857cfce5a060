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

from collections import defaultdict
from collections.abc import Iterable

from datetime import datetime
from operator import attrgetter
from typing import NamedTuple

from .model import Request, State
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
    pools = terms.config.pool
    consumed: defaultdict[tuple[str, str], int] = defaultdict(int)
    borrowed: dict[int, dict[str, int]] = {}
    mine = sorted((r for r in live if r.policy == policy), key=attrgetter("allocated_at", "id"))
    for allocation in mine:
        units: dict[str, int] = {}
        pool_terms = terms(policy, allocation.pool) if allocation.pool in pools and policy in terms.config.policy else None
        for key, amount in allocation.resources.items():
            key_terms = pool_terms.keys.get(key) if pool_terms else None
            if key_terms is None:  # unmetered there: nobody can be short of it, nothing to reclaim
                continue
            most = 0
            for scope, reserved in key_terms.reserved:
                consumed[(scope, key)] += amount
                most = max(most, min(amount, consumed[(scope, key)] - reserved))
            units[key] = most
        borrowed[allocation.id] = units
    return borrowed
