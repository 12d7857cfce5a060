"""Key-seconds of a period, in share and borrowed, from allocation intervals (docs/usage.md).

An allocation holds its resources over ``[start, stop)`` (whole seconds). At every instant, each
policy's live allocations are split into in-share and borrowed units exactly as ``GET /policies``
splits them (``borrowing.borrowed_units``: oldest grant first, each using up what is left of the
reservation at every applicable scope) under the configuration live at that instant. Integrated
over the period, milli-units × seconds, as integers. Idle reserved is, per reservation row,
the reserved amount less the policy's usage it covers, never below 0, integrated alike.

Pool ``dc {gpu: 8}``, policy ``ml`` with ``dc:gpu`` reserved 4: a 6-gpu allocation held for an
hour is 4 gpu-hours in share and 2 borrowed; after it leaves, the reservation idles for an hour.

>>> config = Config(pools=(Pool("dc", Vector.of(gpu=8)),), policies=(Policy("ml", quotas=(Quota("dc", "gpu", 4000),)),))
>>> held = Held(1, "ml", "job", 7, "dc", Vector.of(gpu=6, step_run=1), allocated_at=0, start=0, stop=3600)
>>> found = key_seconds([held], (Era(0, config),), since=0, until=7200)
>>> found.held[0]
Split(used={'gpu': 21600000, 'step_run': 3600000}, in_share={'gpu': 14400000}, borrowed={'gpu': 7200000})
>>> found.reservations
{('ml', 'dc', 'gpu'): Reservation(reserved=28800000, idle=14400000)}
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from .borrowing import borrowed_units
from .model import ALL_POOLS, Config
from .quota import TermsCache

EMPTY = Config()


class Held(NamedTuple):
    """One allocation of a request (one attempt's grant) held over ``[start, stop)`` within the
    period, times in whole seconds. ``allocated_at`` is its grant, which orders borrowing; the
    fields ``borrowing.borrowed_units`` reads are named as on a request."""

    id: int  # the request
    policy: str
    profile: str
    owner: int
    pool: str
    resources: Mapping[str, int]
    allocated_at: int
    start: int
    stop: int
    # R-47's place among a pass's grants is not in the history: grants of one second are ordered
    # by request id here, as ``order`` below does
    grant_order: int = 0


class Era(NamedTuple):
    """A configuration and the second it became live; it stays live until the next era."""

    start: int
    config: Config


class Split(NamedTuple):
    """Milli-unit-seconds per key: all held (``used``), and of the keys the pool meters, the
    part within the policy's reservations and the part above them."""

    used: dict[str, int]
    in_share: dict[str, int]
    borrowed: dict[str, int]


class Reservation(NamedTuple):
    """Milli-unit-seconds of one reservation row (policy, scope, key) over the period: the amount
    reserved, and the part of it the policy's usage did not cover."""

    reserved: int
    idle: int


EMPTY_RESERVATION = Reservation(0, 0)


@dataclass
class KeySeconds:
    """What ``key_seconds`` found: a ``Split`` per ``Held`` (in the order given) and a
    ``Reservation`` per (policy, scope, key) that reserved something in the period."""

    held: list[Split]
    reservations: dict[tuple[str, str, str], Reservation] = field(default_factory=dict)


def key_seconds(held: Sequence[Held], eras: Sequence[Era], *, since: int, until: int) -> KeySeconds:
    """Split each allocation's key-seconds within ``[since, until)`` (docs/usage.md §2).

    ``held`` may extend beyond the period (it is cut to it); ``eras`` in start order, the first
    live at ``since`` or before it (none: no configuration, nothing metered until the first).
    """
    splits = [Split(_used(h, since, until), {}, {}) for h in held]
    reservations: dict[tuple[str, str, str], Reservation] = {}
    eras = _eras_within(eras, since, until)
    by_policy: dict[str, list[int]] = {}
    for index, h in enumerate(held):
        if min(h.stop, until) > max(h.start, since):
            by_policy.setdefault(h.policy, []).append(index)
    policies = set(by_policy) | {p.name for era in eras for p in era.config.policies
                                 if any(q.reserved for q in p.quotas)}
    for policy in sorted(policies):
        _Sweep(policy, held, by_policy.get(policy, []), splits, reservations).run(eras, since, until)
    return KeySeconds(splits, reservations)


def used_by_policy(held: Iterable[Held], *, since: int, until: int) -> dict[tuple[str, str], int]:
    """``key_seconds``' ``used`` within ``[since, until)`` summed by (policy, key), without the
    split (a budget's burn, reconcile.budgets R-70): ``_used`` is both's one definition.

    >>> used_by_policy([Held(1, "ml", "job", 7, "dc", {"gpu": 6000}, 0, 0, 3600)], since=1800, until=7200)
    {('ml', 'gpu'): 10800000}
    """
    found: dict[tuple[str, str], int] = {}
    for h in held:
        for key, amount in _used(h, since, until).items():
            found[h.policy, key] = found.get((h.policy, key), 0) + amount
    return found


def _used(h: Held, since: int, until: int) -> dict[str, int]:
    seconds = min(h.stop, until) - max(h.start, since)
    return {key: amount * seconds for key, amount in h.resources.items()} if seconds > 0 else {}


def _eras_within(eras: Sequence[Era], since: int, until: int) -> list[Era]:
    """The eras that overlap the period, the first starting at ``since``."""
    starts = [era.start for era in eras]
    first = bisect.bisect_right(starts, since) - 1
    found = [Era(since, eras[first].config if first >= 0 else EMPTY)]
    found += [era for era in eras[first + 1:] if era.start < until]
    return found


class _Sweep:
    """One policy's allocations walked through time. Each live allocation keeps its current
    borrowed units and the second they last changed; a change of the split adds what the old
    one held until then (lazily, so an allocation whose split never changes costs one addition).

    The split is the walk of ``borrowed_units``; it is made again for all live allocations only
    when it can change for more than the one arriving or leaving: a new configuration, an
    allocation arriving before others in grant order, or one leaving ahead of others while some
    borrow. Arriving last, an allocation leaves the others' splits as they were (the walk is
    oldest first), and leaving when nobody else borrows, it frees nothing anyone borrowed.
    """

    def __init__(self, policy: str, held: Sequence[Held], indexes: list[int], splits: list[Split],
                 reservations: dict[tuple[str, str, str], Reservation]) -> None:
        self.policy, self.held, self.indexes, self.splits = policy, held, indexes, splits
        self.reservations = reservations
        self.order: list[tuple[int, int, int]] = []  # (allocated_at, id, index) of live allocations
        self.units: dict[int, dict[str, int]] = {}  # index → borrowed milli-units per metered key
        self.since_: dict[int, int] = {}  # index → when its units last changed
        self.usage: dict[tuple[str, str], int] = {}  # (pool, key) → milli-units held
        self.metered: dict[tuple[str, str], int] = {}  # (pool or *, key) → of them on pools that meter the key
        self.terms: TermsCache = TermsCache(EMPTY)
        self.reserved: list[tuple[tuple[str, str, str], int]] = []  # the policy's rows: (policy, scope, key), amount

    def run(self, eras: list[Era], since: int, until: int) -> None:
        changes: list[tuple[int, int, int]] = []  # (second, 0 leave / 1 arrive / 2 new era, index)
        for index in self.indexes:
            h = self.held[index]
            changes.append((max(h.start, since), 1, index))
            changes.append((min(h.stop, until), 0, index))
        changes += [(era.start, 2, number) for number, era in enumerate(eras)]
        changes.sort()
        now = since
        for second, kind, index in changes:
            if second > now:
                self._idle(now, second)
                now = second
            if kind == 0:
                self._leave(index, second)
            elif kind == 1:
                self._arrive(index, second)
            else:
                self._configure(eras[index].config)
                self._walk(second)
        if until > now:
            self._idle(now, until)

    def _configure(self, config: Config) -> None:
        self.terms = TermsCache(config)
        policy = config.policy.get(self.policy)
        self.reserved = [((self.policy, q.scope, q.key), q.reserved) for q in policy.quotas
                         if q.reserved] if policy is not None else []
        self.metered = {}
        for (pool, key), amount in self.usage.items():
            self._count(pool, key, amount)

    def _count(self, pool: str, key: str, amount: int) -> None:
        """Add ``amount`` of ``key`` on ``pool`` to the metered usage at the pool and at ``*``."""
        found = self.terms.config.pool.get(pool)
        if found is not None and key in found.capacity:
            self.metered[pool, key] = self.metered.get((pool, key), 0) + amount
            self.metered[ALL_POOLS, key] = self.metered.get((ALL_POOLS, key), 0) + amount

    def _arrive(self, index: int, second: int) -> None:
        h = self.held[index]
        entry = (h.allocated_at, h.id, index)
        self.order.insert(bisect.bisect(self.order, entry), entry)
        for key, amount in h.resources.items():
            self.usage[h.pool, key] = self.usage.get((h.pool, key), 0) + amount
            self._count(h.pool, key, amount)
        self.since_[index] = second
        if self.order[-1] is entry:
            self.units[index] = self._last_units(h)
        else:
            self.units[index] = {}
            self._walk(second)

    def _leave(self, index: int, second: int) -> None:
        h = self.held[index]
        self._settle(index, second)
        last = self.order[-1][2] == index
        self.order.remove((h.allocated_at, h.id, index))
        del self.units[index], self.since_[index]
        for key, amount in h.resources.items():
            self.usage[h.pool, key] -= amount
            self._count(h.pool, key, -amount)
        if not last and any(any(units.values()) for units in self.units.values()):
            self._walk(second)

    def _last_units(self, h: Held) -> dict[str, int]:
        """Borrowed units of the newest live allocation: the walk's last step, from the totals."""
        config = self.terms.config
        if h.policy not in config.policy or h.pool not in config.pool:
            return {}
        units = {}
        for key, key_terms in self.terms(h.policy, h.pool).keys.items():
            amount = h.resources.get(key)
            if amount is None:
                continue
            most = 0
            for scope, reserved in key_terms.reserved:
                excess = self.metered.get((scope, key), 0) - reserved  # this allocation included
                if excess > most:
                    most = min(excess, amount)
            units[key] = most
        return units

    def _walk(self, second: int) -> None:
        """Every live allocation's units again, settling those that change."""
        live = [self.held[index] for _, _, index in self.order]
        found = borrowed_units(self.terms, self.policy, live)
        for _, request, index in self.order:
            units = found.get(request, {})
            if units != self.units[index]:
                self._settle(index, second)
                self.units[index] = units

    def _settle(self, index: int, second: int) -> None:
        """Add what ``index`` held in share and borrowed since its units last changed."""
        seconds = second - self.since_[index]
        if seconds <= 0:
            return
        h, split = self.held[index], self.splits[index]
        for key, borrowed in self.units[index].items():
            in_share = h.resources[key] - borrowed
            if in_share:
                split.in_share[key] = split.in_share.get(key, 0) + in_share * seconds
            if borrowed:
                split.borrowed[key] = split.borrowed.get(key, 0) + borrowed * seconds
        self.since_[index] = second

    def _idle(self, start: int, stop: int) -> None:
        """Each reservation row of the policy, reserved and idle from ``start`` to ``stop``: the
        reserved amount less the policy's usage of the key at the row's scope, on pools that meter it."""
        seconds = stop - start
        for row, reserved in self.reserved:
            idle = max(0, reserved - self.metered.get(row[1:], 0))
            before = self.reservations.get(row, EMPTY_RESERVATION)
            self.reservations[row] = Reservation(before.reserved + reserved * seconds, before.idle + idle * seconds)
