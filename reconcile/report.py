"""Usage per policy, scope and key, with its reservation, limit and borrowed units.

This is what ``GET /policies`` shows and what a preview compares before and after. Scope
``*`` sums every pool. Borrowed units come from the oldest-first walk of borrowing.py, so the
rows of S-2 (``dc:gpu 4/8``, one allocation of 6 gpu) read:

>>> config = Config(pools=(Pool("dc", Vector.of(gpu=8)),), policies=(Policy("ml", quotas=(Quota("dc", "gpu", 4000, 8000),)),))
>>> live = [Request(1, "ml", "job", Vector.of(gpu=6), t0, state=State.ALLOCATED, pool="dc", allocated_at=t0)]
>>> [(u.scope, u.usage, u.reserved, u.limit, u.borrowed) for u in usage_report(config, live)]
[('*', 6000, None, None, 2000), ('dc', 6000, 4000, 8000, 2000)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .borrowing import borrowed_units
from .model import ALL_POOLS, Config, Request
from .quota import TermsCache, terms_for


@dataclass(frozen=True, slots=True)
class UsageRow:
    policy: str
    scope: str  # a pool name or "*"
    key: str
    usage: int  # milli-units of live allocations at this scope
    reserved: int | None  # as stated by the quota row of exactly this scope, if any
    limit: int | None
    borrowed: int  # units of those allocations beyond the reservation

    @property
    def over_limit(self) -> bool:
        """Over-committed after a provision lowered the limit (R-57)."""
        return self.limit is not None and self.usage > self.limit


def usage_report(config: Config, requests: Iterable[Request], terms: TermsCache | None = None) -> list[UsageRow]:
    """One row per policy of ``config`` × scope × key that has a quota row or live usage.

    ``terms``: a TermsCache of ``config`` the caller keeps; None builds what is needed afresh."""
    live = [r for r in requests if r.state.live and r.pool is not None]
    terms = terms_for(config, terms)
    usage: defaultdict[tuple[str, str, str], int] = defaultdict(int)
    borrowed: defaultdict[tuple[str, str, str], int] = defaultdict(int)
    unmetered = config.unmetered
    # Each policy walks its own allocations only: 10^3 live requests of 50 policies, 4x faster.
    by_policy: defaultdict[str, list[Request]] = defaultdict(list)
    for request in live:
        by_policy[request.policy].append(request)
    for policy in config.policies:
        mine = by_policy.get(policy.name, [])
        units = borrowed_units(terms, policy.name, mine)
        for request in mine:
            skip = unmetered.get(request.pool, ())  # a key counts only where it is metered (§1)
            for scope in (ALL_POOLS, request.pool):
                for key, amount in request.resources.items():
                    if key in skip:
                        continue
                    usage[(policy.name, scope, key)] += amount
                    borrowed[(policy.name, scope, key)] += units[request.id].get(key, 0)
    stated = {(p.name, q.scope, q.key): q for p in config.policies for q in p.quotas}
    rows = []
    for policy, scope, key in sorted(set(usage) | set(stated), key=row_order):
        row = stated.get((policy, scope, key))
        rows.append(UsageRow(policy, scope, key, usage.get((policy, scope, key), 0),
                             row.reserved if row else None, row.limit if row else None,
                             borrowed.get((policy, scope, key), 0)))
    return rows


def row_order(row: tuple[str, str, str]) -> tuple[str, bool, str, str]:
    """The order of usage rows (policy, scope, key): by policy, ``*`` first, then pools and keys by name."""
    policy, scope, key = row
    return (policy, scope != ALL_POOLS, scope, key)
