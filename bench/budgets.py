"""What do budgets cost a pass (docs/scheduling.md §8a)? On SQLite and PostgreSQL, each in a
child process with a throwaway database (bench/runtime.py's way).

Scenario A of bench/metrics.py (100 pools, 50 policies, 10,000 pending, 1,000 running), every
policy with a month's GPU-hour budget (half ``idle``, half ``refuse``; the first five spent, so
their pass is the transformed one, R-72), and a history of ``DAILY_ROWS`` changes a day (10^6 a
month, bench/usage.py's rate) of released jobs through the month so far (3 per job, ~20 minutes
each), and the running requests' grants.

- ``pass_budgets_ms``: a pass with budgets as the pass loop runs it (``PassBurns``: the burn read
  again only when a threshold could have been crossed, decision 181) and the engine's transformed
  input; ``pass_budgets_read_ms`` the same pass reading every burn (the closed days kept, today
  swept from the history), as near a threshold; beside ``pass_no_budgets_ms``, the same pass with
  the burn left out (the pass as before budgets). Each timed pass is rolled back; the three
  alternate; median of ``PASS_REPEAT``, wall time and this process's CPU time (``_cpu_ms``: the
  machine's other load stretches the wall time; on SQLite the CPU time is all of the pass's).
  Then the same three with no budget spent (``…_none_spent``): the passes decide alike, so the
  difference is the budgets' cost alone (with five spent, R-72 changes what the pass decides).
- ``burn_ms``: ``budget_burns`` alone, every policy, days kept.
Merges figures into the "budgets" section of results.json.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta

from bench.engine import A
from bench.results import merge_section, sized
from bench.runtime import figures_on_both, print_both

SCENARIO = replace(A, live=sized(1_000, 20))
DAILY_ROWS = sized(33_000, 1_000)  # 10^6 a month, as bench/usage.py's month
PASS_REPEAT = sized(7, 1)
SPENT = 5  # policies whose budget is spent
SEED = 214

FIGURES = (  # key, label
    ("pass_budgets_ms", "a pass, 10k pending, 50 budgets (ms)"),
    ("pass_budgets_read_ms", "  the same, the burn read (near a threshold) (ms)"),
    ("pass_no_budgets_ms", "  baseline: the same pass without the burn (ms)"),
    ("pass_budgets_cpu_ms", "a pass with budgets, this process's CPU (ms)"),
    ("pass_budgets_read_cpu_ms", "  the same, the burn read, CPU (ms)"),
    ("pass_no_budgets_cpu_ms", "  baseline: without the burn, CPU (ms)"),
    ("pass_budgets_ms_none_spent", "none spent: a pass with budgets (ms)"),
    ("pass_budgets_read_ms_none_spent", "  the same, the burn read (ms)"),
    ("pass_no_budgets_ms_none_spent", "  baseline: without the burn (ms)"),
    ("pass_budgets_cpu_ms_none_spent", "none spent: a pass with budgets, CPU (ms)"),
    ("pass_budgets_read_cpu_ms_none_spent", "  the same, the burn read, CPU (ms)"),
    ("pass_no_budgets_cpu_ms_none_spent", "  baseline: without the burn, CPU (ms)"),
    ("burn_ms", "  the burn of 50 budgets alone (ms)"),
    ("history_rows", "  history rows this month"),
)


def main() -> None:
    figures = figures_on_both("budgets", "measure")
    print_both(FIGURES, figures)
    for db in ("sqlite", "postgres"):
        for spent in ("", "_none_spent"):
            for key, what in (("pass_budgets", "with budgets"), ("pass_budgets_read", "reading the burn")):
                for suffix, unit in (("_ms", "wall"), ("_cpu_ms", "CPU")):
                    on = figures.get(f"{key}{suffix}{spent}_{db}")
                    off = figures.get(f"pass_no_budgets{suffix}{spent}_{db}")
                    if on and off:
                        print(f"{db}{spent.replace('_', ' ')}: a pass {what} is {100 * (on / off - 1):+.1f} % "
                              f"of one without, {unit} (goal: <= +5 %)")
    merge_section("budgets", figures, "measured_at")


def measure() -> dict[str, float]:
    from django.utils import timezone as django_time

    from bench.engine import make_snapshot
    from bench.runtime import _json_ready, _row, provision, setup_database
    from poolweb.models import Request as RequestRow
    from poolweb.selectors.versions import live_config
    from poolweb.selectors.burns import budget_burns
    from reconcile.document_writer import to_document

    user = setup_database()
    scenario = make_snapshot(SCENARIO)
    document = _json_ready(to_document(scenario.config))
    for j, policy in enumerate(document["policies"]):
        policy["budget"] = {"hours": 0.001 if j < SPENT else 1_000_000, "period": "month",
                            "when_spent": "idle" if j % 2 == 0 else "refuse"}
    provision(document, user)
    now = django_time.now()
    shift = now - scenario.now
    RequestRow.objects.bulk_create([_row(r, user, shift) for r in scenario.requests], batch_size=2000)
    rows = _history(user, [p.name for p in scenario.config.policies], now)
    config = live_config()
    budget_burns(config, now)  # keeps the month's closed days, as the periodic task has
    burn = []
    for _ in range(PASS_REPEAT):
        started = time.perf_counter()
        budget_burns(config, django_time.now())
        burn.append((time.perf_counter() - started) * 1000)
    figures = _passes()
    figures.update(burn_ms=statistics.median(burn), history_rows=rows)
    for policy in document["policies"]:  # none spent: the same decisions with and without the burn
        policy["budget"]["hours"] = 1_000_000
    provision(document, user)
    figures.update({f"{kind}_none_spent": value for kind, value in _passes().items()})
    return figures


def _history(user, policies: list[str], now: datetime) -> int:
    """``DAILY_ROWS`` changes a day of released jobs from the month's start to now, and each running
    request's grant; written by bulk_create."""
    from poolweb.models import Request as RequestRow, RequestChange

    random_ = random.Random(SEED)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    span = max(3600.0, (now - start).total_seconds() - 3600)
    jobs, changes = [], []
    for _ in range(int(DAILY_ROWS * span / 86400) // 3):
        submitted = start + timedelta(seconds=random_.uniform(0, span))
        granted = submitted + timedelta(seconds=random_.uniform(0, 600))
        ended = min(now, granted + timedelta(seconds=random_.expovariate(1 / 1200)))
        jobs.append((RequestRow(policy=random_.choice(policies), profile="p", owner=user, state="released",
                                reason="Released", resources={"gpu": 1000 * random_.randint(1, 8), "step_run": 1000},
                                submitted_at=submitted, finished_at=ended),
                     ((submitted, "pending", None), (granted, "allocated", "pool0"), (ended, "released", None))))
    RequestRow.objects.bulk_create([job for job, _ in jobs], batch_size=5000)
    for job, moments in jobs:
        changes += [RequestChange(request_id=job.pk, at=at, state=state, reason="Granted", attempt=1, pool=pool)
                    for at, state, pool in moments]
    for request_id, pool, allocated_at in RequestRow.objects.filter(state="allocated").values_list(
            "id", "pool", "allocated_at"):
        changes.append(RequestChange(request_id=request_id, at=allocated_at, state="allocated", reason="Granted",
                                     attempt=1, pool=pool))
    RequestChange.objects.bulk_create(changes, batch_size=5000)
    return len(changes)


class Nothing:
    def burns(self, *args) -> dict:
        return {}


def _passes() -> dict[str, float]:
    """The same pass, rolled back each time: with budgets as a pass loop runs them (the burn read
    again only near a threshold), with the burn read every pass (as near one), and without the
    burn (alternating)."""
    from django.db import transaction

    from poolweb.services import reconciler
    from poolweb.services.budgets import PassBurns
    from poolweb.services.reconciler import reconcile_pass

    real = reconciler.PASS_BURNS
    kinds = ("pass_budgets_ms", "pass_budgets_read_ms", "pass_no_budgets_ms")
    found: dict[str, list[float]] = {name: [] for kind in kinds for name in (kind, kind.replace("_ms", "_cpu_ms"))}
    for _ in range(PASS_REPEAT + 1):  # the first of each warms the caches: not counted
        for kind in kinds:
            reconciler.PASS_BURNS = {"pass_budgets_ms": real, "pass_budgets_read_ms": PassBurns(),
                                     "pass_no_budgets_ms": Nothing()}[kind]
            with transaction.atomic():
                started, cpu = time.perf_counter(), time.process_time()
                reconcile_pass()
                found[kind].append((time.perf_counter() - started) * 1000)
                found[kind.replace("_ms", "_cpu_ms")].append((time.process_time() - cpu) * 1000)
                transaction.set_rollback(True)
            reconciler.PASS_BURNS = real
    return {kind: statistics.median(times[1:]) for kind, times in found.items()}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        import django

        django.setup()
        print(json.dumps({"measure": measure}[sys.argv[1]]()))
    else:
        main()
