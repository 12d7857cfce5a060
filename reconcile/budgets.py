"""Key-hour budgets per policy per UTC calendar period (docs/scheduling.md §8a, R-70…R-74).

A policy's budget says how many key-hours (GPU-hours first) it may use per day, week (Monday to
Monday) or month, UTC, and what happens once its *burn* — the key-seconds its allocations held in
the period so far, the usage report's ``used`` (docs/usage.md) — reaches them: ``refuse`` new
submissions (R-71), or serve its work only from ``idle`` capacity (R-72): ``when_spent_idle``
gives the spent policies no reservation and a priority below every other policy's, so they never
preempt and are the first reclaimed. Running work is never stopped by a budget.

Figures are exact: a budget of ``hours`` thousandths is ``hours × 3,600`` milli-unit-seconds.

>>> budget = Budget(hours=1_000_000, period="month")  # 1,000 GPU-hours a month
>>> now = datetime(2026, 12, 4, 18, 0, tzinfo=timezone.utc)
>>> period_of(budget, now)
Period(start=datetime.datetime(2026, 12, 1, 0, 0, tzinfo=datetime.timezone.utc), end=datetime.datetime(2027, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
>>> burn = Burn("dev", budget, period_of(budget, now), used=612 * 3_600_000)
>>> burn.text, burn.spent, burn.reached
('612 of 1,000 GPU-hours this month, resets 1 Jan', False, 50)
>>> config = Config(policies=(Policy("dev", priority=5, quotas=(Quota("*", "gpu", 4000, 8000),)), Policy("ml", priority=-2)))
>>> idle = when_spent_idle(Snapshot(now, config), {"dev"}).config.policies[0]
>>> idle.priority, idle.quotas
(-3, (Quota(scope='*', key='gpu', reserved=None, limit=8000),))
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from .document_checks import Reading, json_type, show
from .model import PENDING, Budget, Config, Policy, Quota, Snapshot
from .quantity import KEY_PATTERN, QuantityError, format_quantity, parse_quantity, quantity_text

PERIODS = ("day", "week", "month")
WHEN_SPENT = ("refuse", "idle")
THRESHOLDS = (50, 80, 100)  # percent of a budget; an event marks each first crossing in a period
SECONDS_PER_HOUR = 3600
BUDGET_FIELDS = ("hours", "period", "key", "when_spent")


class Period(NamedTuple):
    start: datetime  # UTC midnight
    end: datetime  # the next period's start: when the burn starts again from 0


def period_of(budget: Budget, now: datetime) -> Period:
    """The UTC calendar period ``now`` falls in: its day, its ISO week (from Monday), its month."""
    day = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    if budget.period == "day":
        return Period(day, day + timedelta(days=1))
    if budget.period == "week":
        start = day - timedelta(days=day.weekday())
        return Period(start, start + timedelta(days=7))
    start = day.replace(day=1)
    return Period(start, (start + timedelta(days=32)).replace(day=1))


def budget_seconds(budget: Budget) -> int:
    """The budget in milli-unit-seconds, the unit of the burn."""
    return budget.hours * SECONDS_PER_HOUR


def key_hours_name(key: str) -> str:
    return "GPU-hours" if key == "gpu" else f"{key}-hours"


@dataclass(frozen=True)
class Burn:
    """A policy's budget and what it used of it in ``period`` (milli-unit-seconds of its key)."""

    policy: str
    budget: Budget
    period: Period
    used: int

    @property
    def limit(self) -> int:
        return budget_seconds(self.budget)

    @property
    def spent(self) -> bool:
        """R-70: the burn has reached the budget."""
        return self.used >= self.limit

    @property
    def reached(self) -> int:
        """The highest threshold (percent) the burn has reached, 0 for none."""
        return max((t for t in THRESHOLDS if self.used * 100 >= t * self.limit), default=0)

    @property
    def percent(self) -> int:
        """Whole percent used, rounded down (a budget of 0 is spent at once: 100)."""
        return 100 if self.limit == 0 else self.used * 100 // self.limit

    @property
    def used_hours(self) -> int:
        """Thousandths of a key-hour used, rounded down: a figure never shows more than was used."""
        return self.used // SECONDS_PER_HOUR

    @property
    def text(self) -> str:
        """"612 of 1,000 GPU-hours this month, resets 1 Jan"."""
        return (f"{_hours(self.used_hours)} of {_hours(self.budget.hours)} {key_hours_name(self.budget.key)} "
                f"this {self.budget.period}, resets {self.reset_text}")

    @property
    def reset_text(self) -> str:
        """The day the next period starts (at 00:00 UTC): "1 Jan"."""
        return f"{self.period.end.day} {self.period.end:%b}"

    @property
    def spent_message(self) -> str:
        """Why a submission is refused (R-71), or why an idle-served policy ranks last (R-72)."""
        return f"policy {self.policy} has spent its budget: {self.text}"


def _hours(milli: int) -> str:
    text = quantity_text(milli)
    whole, _, fraction = text.partition(".")
    return f"{int(whole):,}" + (f".{fraction}" if fraction else "")


def when_spent_idle(snapshot: Snapshot, spent: Collection[str]) -> Snapshot:
    """R-72: the engine's input with the ``spent`` policies (budgets spent, ``when_spent: idle``)
    served only from idle capacity: no reservation at any scope (R-13, R-22, R-32.2: never in
    share, so they never reclaim, and all they hold is borrowed: the first reclaimed, R-42) and a
    priority one below the lowest other (never a priority preemptor, the first victim, served after
    everyone). Their pending non-preemptible requests are left out — they could never be given
    back — and wait, untouched, for the period to reset. The input is not changed."""
    if not spent:
        return snapshot
    requests = tuple(r for r in snapshot.requests
                     if not (r.policy in spent and r.state is PENDING and not r.preemptible))
    return replace(snapshot, config=served_idle(snapshot.config, spent), requests=requests)


def served_idle(config: Config, spent: Collection[str]) -> Config:
    """``config`` with the ``spent`` policies as R-72 plans them (``when_spent_idle``'s config)."""
    lowest = min(p.priority for p in config.policies) - 1
    return replace(config, policies=tuple(_served_idle(p, lowest) if p.name in spent else p
                                          for p in config.policies))


def _served_idle(policy: Policy, priority: int) -> Policy:
    quotas = tuple(Quota(q.scope, q.key, None, q.limit) for q in policy.quotas if q.limit is not None)
    return replace(policy, priority=priority, quotas=quotas, budget=None)


def next_reset(config: Config, now: datetime) -> datetime | None:
    """R-74: when the earliest budget's period ends (a pass is due then), None without budgets."""
    return min((period_of(b, now).end for b in budgets_of(config).values()), default=None)


def budgets_of(config: Config) -> dict[str, Budget]:
    return {p.name: p.budget for p in config.policies if p.budget is not None}


def crossings(burns: Mapping[str, Burn], marked: Mapping[str, int]) -> list[tuple[Burn, int]]:
    """R-73: each (burn, threshold) reached and not marked yet for its period (``marked``: policy →
    the highest threshold announced in the current period), lowest first."""
    return [(burn, t) for name, burn in sorted(burns.items()) for t in THRESHOLDS
            if marked.get(name, 0) < t <= burn.reached]


# --- the document's ``budget`` -------------------------------------------------------------------

def read_budget(reading: Reading, raw: Any, path: str) -> Budget | None:
    """A policy's optional ``budget`` object; its errors reported, None when absent or unreadable."""
    if not isinstance(raw, Mapping):
        reading.error(path, "invalid_type", f"a budget must be an object, not {json_type(raw)}")
        return None
    for field in raw:
        if field not in BUDGET_FIELDS:
            reading.error(f"{path}.{field}" if isinstance(field, str) and field.isidentifier() else path,
                          "unknown_field", f"unknown field {show(field)}; a budget has {', '.join(BUDGET_FIELDS)}",
                          blocking=False)
    hours = None
    if "hours" not in raw:
        reading.error(f"{path}.hours", "required", "hours is required")
    else:
        try:
            hours = parse_quantity(raw["hours"])
        except (QuantityError, ValueError, ArithmeticError) as error:
            reading.error(f"{path}.hours", "invalid_quantity", f"hours {error}")
    period = _choice(reading, raw, path, "period", PERIODS, None)
    when_spent = _choice(reading, raw, path, "when_spent", WHEN_SPENT, "refuse")
    key = raw.get("key", "gpu")
    if not (isinstance(key, str) and KEY_PATTERN.fullmatch(key)):
        reading.error(f"{path}.key", "invalid_key", f"{show(key)} is not a resource key: keys match {KEY_PATTERN.pattern}")
        return None
    if hours is None or period is None or when_spent is None:
        return None
    return Budget(hours=hours, period=period, key=key, when_spent=when_spent)


def _choice(reading: Reading, raw: Mapping, path: str, field: str, choices: tuple[str, ...],
            default: str | None) -> str | None:
    value = raw.get(field, default)
    if value is None:
        reading.error(f"{path}.{field}", "required", f"{field} is required: one of {', '.join(choices)}")
    elif value not in choices:
        reading.error(f"{path}.{field}", "invalid_choice", f"{field} must be one of {', '.join(choices)}, not {show(value)}")
        return None
    return value


def budget_of(document: Mapping[str, Any]) -> Budget:
    """A stored ``budget_document`` (a provisioned version's, read before) as the Budget again."""
    return Budget(hours=parse_quantity(document["hours"]), period=document["period"], key=document["key"],
                  when_spent=document["when_spent"])


def budget_document(budget: Budget) -> dict[str, Any]:
    """The ``budget`` object as the document writes it, every default spelled out."""
    return {"key": budget.key, "hours": format_quantity(budget.hours), "period": budget.period,
            "when_spent": budget.when_spent}
