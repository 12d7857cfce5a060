"""Budgets at work (docs/scheduling.md §8a, R-70…R-74): each budgeted policy's burn in its
period, computed by the usage report's own code (``selectors.usage.used_since``: the closed days
kept, the rest of today from the history); the refusal of a submission (R-71); the engine's input
of a pass (R-72, ``reconcile.budgets.when_spent_idle``); the threshold events (R-73), written in
the pass's transaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from poolweb.models import BudgetMark
from poolweb.selectors.burns import budget_burns
from poolweb.selectors.usage import hours_text
from poolweb.services import events
from poolweb.services.payloads import api_time
from reconcile import Config, Snapshot
from reconcile.budgets import THRESHOLDS, Burn, budgets_of, crossings, period_of, served_idle, when_spent_idle
from reconcile.quantity import format_quantity
from reconcile.quota import TermsCache

BUDGET_CROSSED = "policy.budget"  # the event of a threshold crossing (docs/events.md)


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp() // 1)


class PassBurns:
    """The burns of a pass, read again only when one could have crossed a threshold since the last
    read: between two passes a policy's burn grows at most by the most of its key that can be held
    at once — all pools' capacity of it (R-20 grants nothing beyond; more was held only if a
    provision shrank a pool, R-57, so the larger of the two) — times the seconds between them. While
    that keeps every budget below its next threshold (spent is the last), each decision of the
    pass is the one the exact burn gives, and the pass uses the last read. What it buys: far from
    its thresholds a site reads its burns about once per (gap ÷ capacity) instead of every pass
    (bench/budgets.py). A key some pool does not meter has no such bound: read each pass.
    Per process (the pass loop's), for one configuration."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget the last read (tests that write history into the past, as no site does)."""
        self._config: Config | None = None
        self._read: dict[str, Burn] = {}
        self._at = 0
        self._rate: dict[str, int | None] = {}

    def burns(self, config: Config, now: datetime, snapshot: Snapshot) -> dict[str, Burn]:
        budgets = budgets_of(config)
        if not budgets:
            return {}
        second = _epoch(now)
        if config is not self._config or not all(self._below_next(name, second, now) for name in budgets):
            self._config, self._read, self._at = config, budget_burns(config, now), second
            self._rate = {key: _most_held(config, snapshot, key) for key in {b.key for b in budgets.values()}}
        return self._read

    def _below_next(self, name: str, second: int, now: datetime) -> bool:
        burn, rate = self._read.get(name), self._rate.get(self._read[name].budget.key) if name in self._read else None
        if burn is None or rate is None or period_of(burn.budget, now) != burn.period:
            return False
        upcoming = [t * burn.limit for t in THRESHOLDS if t > burn.reached]  # ×100: percent
        return not upcoming or 100 * (burn.used + rate * (second - self._at + 1)) < upcoming[0]


def _most_held(config: Config, snapshot: Snapshot, key: str) -> int | None:
    """The most of ``key`` all requests can hold at once from now on, None when unbounded."""
    if any(key not in pool.capacity for pool in config.pools) and key in ("mcpu", "memory_mb", "step_run"):
        return None  # unmetered somewhere: held without bound (decision 3)
    held = sum(r.resources.get(key, 0) for r in snapshot.requests if r.state.live)
    return max(held, sum(pool.capacity.get(key, 0) for pool in config.pools))


PASS_BURNS = PassBurns()


def refusal(burn: Burn | None, preemptible: bool) -> str | None:
    """R-71: why a submission to a policy whose budget is spent is refused, or None. ``refuse``
    refuses all; ``idle`` refuses non-preemptible requests, which idle capacity cannot take back."""
    if burn is None or not burn.spent:
        return None
    if burn.budget.when_spent == "refuse":
        return burn.spent_message
    if not preemptible:
        return (f"{burn.spent_message}; until then it is served only from idle capacity, which a "
                f"non-preemptible request could never give back: submit it preemptible")
    return None


def engine_input(snapshot: Snapshot, burns: dict[str, Burn]) -> Snapshot:
    """R-72: the snapshot the engine plans, the policies spent with ``when_spent: idle`` served
    from idle capacity only; ``snapshot`` itself when there are none."""
    return when_spent_idle(snapshot, _spent_idle(burns))


def _spent_idle(burns: dict[str, Burn]) -> frozenset[str]:
    return frozenset(name for name, burn in burns.items() if burn.spent and burn.budget.when_spent == "idle")


class IdleTerms:
    """The configuration a pass plans while some ``idle`` budgets are spent (R-72) and its
    TermsCache, kept while the live configuration and the spent policies stay the same: the
    planner fills a TermsCache as passes need terms, and one made afresh would have every pass
    build again the terms the last one built (bench/budgets.py measures the pass with five spent).
    One per process (the pass loop's)."""

    def __init__(self) -> None:
        self._key: tuple[Config, frozenset[str]] | None = None
        self._terms: TermsCache | None = None

    def planned(self, snapshot: Snapshot, burns: dict[str, Burn], terms: TermsCache) -> tuple[Snapshot, TermsCache]:
        """The snapshot to plan and its terms (``terms``, the live version's, when none is spent)."""
        spent = _spent_idle(burns)
        if not spent:
            return snapshot, terms
        if self._key is None or self._key[0] is not snapshot.config or self._key[1] != spent:
            self._key, self._terms = (snapshot.config, spent), TermsCache(served_idle(snapshot.config, spent))
        planned = when_spent_idle(snapshot, spent)
        return replace(planned, config=self._terms.config), self._terms


IDLE_TERMS = IdleTerms()


def marks_due(burns: dict[str, Burn]) -> list[tuple[Burn, int]]:
    """R-73: the thresholds reached and not announced yet in their periods (one read)."""
    reached = {name: burn for name, burn in burns.items() if burn.reached}
    if not reached:
        return []
    marked = {policy: threshold for policy, start, threshold in BudgetMark.objects.filter(
        policy__in=reached).values_list("policy", "period_start", "threshold")
        if start == reached[policy].period.start}
    return crossings(reached, marked)


def marks_write(due: list[tuple[Burn, int]]) -> None:
    """Announce each crossing of ``due`` and mark it, in the caller's transaction (the pass's): a
    pass rolled back announces nothing, and the next one finds the crossing again."""
    if not due:
        return
    highest: dict[str, tuple[Burn, int]] = {}
    for burn, threshold in due:
        events.publish(BUDGET_CROSSED, burn_event(burn, threshold))
        highest[burn.policy] = (burn, threshold)
    for burn, threshold in highest.values():
        BudgetMark.objects.update_or_create(policy=burn.policy, defaults={
            "period_start": burn.period.start, "threshold": threshold})


def burn_data(burn: Burn) -> dict:
    """A policy's ``budget`` in ``GET /policies`` (docs/api.md §4)."""
    return {"key": burn.budget.key, "hours": format_quantity(burn.budget.hours), "period": burn.budget.period,
            "when_spent": burn.budget.when_spent, "period_start": api_time(burn.period.start),
            "resets_at": api_time(burn.period.end), "used": hours_text(burn.used), "used_exact": burn.used,
            "percent": burn.percent, "spent": burn.spent, "text": burn.text}


def burn_event(burn: Burn, threshold: int) -> dict:
    return {"policy": burn.policy, "threshold": threshold, **burn_data(burn)}


