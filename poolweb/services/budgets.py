"""Budgets at work (docs/scheduling.md §8a, R-70…R-74): each budgeted policy's burn in its
period, computed by the usage report's own code (``selectors.usage.used_since``: the closed days
kept, the rest of today from the history); the refusal of a submission (R-71); the engine's input
of a pass (R-72, ``reconcile.budgets.when_spent_idle``); the threshold events (R-73), written in
the pass's transaction."""

from __future__ import annotations

from datetime import datetime

from poolweb.models import BudgetMark
from poolweb.selectors.usage import hours_text, used_since
from poolweb.services import events
from poolweb.services.payloads import api_time
from reconcile import Config, Snapshot
from reconcile.budgets import Burn, budgets_of, crossings, period_of, when_spent_idle
from reconcile.quantity import format_quantity

BUDGET_CROSSED = "policy.budget"  # the event of a threshold crossing (docs/events.md)


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
    spent = {name for name, burn in burns.items() if burn.spent and burn.budget.when_spent == "idle"}
    return when_spent_idle(snapshot, spent)


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
            "percent": _percent(burn), "spent": burn.spent, "text": burn.text}


def burn_event(burn: Burn, threshold: int) -> dict:
    return {"policy": burn.policy, "threshold": threshold, **burn_data(burn)}


def _percent(burn: Burn) -> int:
    """Whole percent of the budget used, rounded down (a budget of 0 is 100 % spent)."""
    return 100 if burn.limit == 0 else burn.used * 100 // burn.limit


