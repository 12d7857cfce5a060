"""A budget's burn (docs/scheduling.md R-70): the key-seconds each policy used from a period's
start to now, the usage report's ``used`` by policy from the report's own pieces
(``selectors.usage``): the closed days kept, today's settled hours once (``SettledToday``), the
last minutes from the history (decision 181)."""

from __future__ import annotations

import threading
from collections.abc import Collection
from datetime import datetime

from poolweb.selectors.usage import DAY, HOUR, SETTLE, held_in, kept_days
from reconcile import Config
from reconcile.budgets import Burn, budgets_of, period_of
from reconcile.usage import used_by_policy


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp() // 1)


def budget_burns(config: Config, now: datetime, names: set[str] | None = None) -> dict[str, Burn]:
    """Policy → its burn at ``now``, for the policies of ``config`` with a budget (of ``names``
    only, when given); one read of the kept days and one of today's history for them all."""
    budgets = {name: b for name, b in budgets_of(config).items() if names is None or name in names}
    if not budgets:
        return {}
    periods = {name: period_of(budget, now) for name, budget in budgets.items()}
    used = used_since({_epoch(p.start) for p in periods.values()}, _epoch(now), budgets)
    return {name: Burn(name, budget, periods[name], used[_epoch(periods[name].start)].get((name, budget.key), 0))
            for name, budget in budgets.items()}




def used_since(starts: Collection[int], now: int, policies: Collection[str]) -> dict[int, dict[tuple[str, str], int]]:
    """For each of ``starts`` (UTC midnights, epoch seconds, none after ``now``): the key-seconds
    ``policies`` used from it to ``now``, by (policy, key) — the report's ``used`` by policy, from
    the same pieces (a budget's burn, reconcile.budgets): the closed days kept (one read of their
    ``policy`` part), the rest of today, once for all ``starts``, from the history of ``policies``
    alone."""
    first = min(starts)
    last = max(first, (now - SETTLE) // DAY * DAY)
    days = list(range(first, last, DAY))
    wanted = set(policies)
    kept = [{row: figures[0] for row, figures in piece.groups["policy"].items() if row[0] in wanted}
            for piece in kept_days(days, ("policy",))]
    cut = max(last, (now - SETTLE) // HOUR * HOUR)
    tail = {row: amount for row, amount in SETTLED_TODAY.used(last, cut).items() if row[0] in wanted}
    if now > cut:
        for row, amount in used_in(cut, now, wanted).items():
            tail[row] = tail.get(row, 0) + amount
    found = {}
    for start in starts:
        used = dict(tail)
        for piece in kept[(start - first) // DAY:]:
            for row, amount in piece.items():
                used[row] = used.get(row, 0) + amount
        found[start] = used
    return found


def used_in(start: int, stop: int, policies: Collection[str]) -> dict[tuple[str, str], int]:
    """What a piece's ``policy`` part says is used in ``[start, stop)``, without the split the
    piece makes beside it (reconcile.usage.used_by_policy)."""
    return used_by_policy(held_in(start, stop, policies), since=start, until=stop)


class SettledToday:
    """Today's used key-seconds by (policy, key), every policy's, from midnight to a whole hour that
    ended 15 minutes ago (SETTLE: every change made before it has committed, as for a kept day):
    what each burn (``used_since``) would sweep again. It grows an hour at a time, each hour swept
    once, so a pass sweeps only the last 15 to 75 minutes of the history (what it buys:
    bench/budgets.py). Every policy's, so a submission's burn of one policy and a pass's of all
    share it. An explicit cache, per process, under a lock (web threads read burns too);
    ``clear`` for tests that write history into the past."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        self._day: int | None = None
        self._until = 0
        self._used: dict[tuple[str, str], int] = {}

    def used(self, day: int, cut: int) -> dict[tuple[str, str], int]:
        """From ``day`` (a midnight) to ``cut`` (a settled whole hour that day); not to be changed."""
        with self._lock:
            if self._day != day or self._until > cut:
                self._day, self._until, self._used = day, day, {}
            if cut > self._until:
                used = dict(self._used)
                for row, amount in used_by_policy(held_in(self._until, cut, None), since=self._until,
                                                  until=cut).items():
                    used[row] = used.get(row, 0) + amount
                self._used, self._until = used, cut
            return self._used


SETTLED_TODAY = SettledToday()
