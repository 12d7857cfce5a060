"""The cumulative totals ``/metrics`` exports (decisions 150, 151): decisions committed, by kind,
policy and reason; how long requests waited for their first grant; how long passes took.

Added to in the pass's own transaction, after its rows are written: a decision dropped as a
conflict (decision 24) or rolled back with its pass (``PlanVoid``) counts nothing, and every
process reads the same numbers. A pass that grants 3 requests of ``dev`` and preempts one of
``batch`` by priority adds 3 to ``(grant, dev, Granted)`` and 1 to
``(preemption, batch, PreemptedByPriority)``, and 3 observations to ``grant_wait`` of ``dev``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

from poolweb import sql
from poolweb.models import DecisionTotal, HistogramTotal
from reconcile import Plan, Request

# A plan's groups of decisions → the counter's ``decision`` label. Holds change no state.
KINDS = {"grants": "grant", "preemptions": "preemption", "evictions": "eviction", "expiries": "expiry",
         "rejections": "rejection", "cancellations": "cancellation"}

# Upper bounds in seconds, fixed: the stored buckets are counts per bound, so changing a family's
# bounds needs a migration that empties its rows.
GRANT_WAIT = "grant_wait"
PASS_DURATION = "pass_duration"
BOUNDS = {
    GRANT_WAIT: (1, 10, 30, 60, 120, 300, 900, 1800, 3600, 14400, 43200, 86400),
    PASS_DURATION: (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
}


def totals_add_pass(*, decided: Plan, requests: dict[int, Request], written: Collection[int]) -> None:
    """Count the decisions of ``decided`` on the requests ``written`` (those not dropped), and the
    wait of each first grant (attempt 1: from its submission; a re-queued request's later grants
    would count the time it ran). ``requests`` are the pass's, by id."""
    counts: Counter[tuple[str, str, str]] = Counter()
    waits: dict[str, list[float]] = {}
    for group, kind in KINDS.items():
        for decision in getattr(decided, group):
            if decision.request_id not in written:
                continue
            request = requests[decision.request_id]
            counts[(kind, request.policy, decision.reason.value)] += 1
            if kind == "grant" and request.attempt == 1:
                waits.setdefault(request.policy, []).append((decided.now - request.submitted_at).total_seconds())
    _count(counts)
    histograms_observe(GRANT_WAIT, waits)


def _count(counts: Counter[tuple[str, str, str]]) -> None:
    """Add to the rows of the (kind, policy, reason) the pass decided: one read, one UPDATE run per
    row (``sql.update_rows``), one bulk INSERT for those counted the first time."""
    if not counts:
        return
    rows = {(row.decision, row.policy, row.reason): row for row in
            DecisionTotal.objects.select_for_update().filter(decision__in={kind for kind, _, _ in counts})}
    for key, n in counts.items():
        if key in rows:
            rows[key].count += n
    sql.update_rows([rows[key] for key in counts if key in rows], ["count"])
    DecisionTotal.objects.bulk_create([DecisionTotal(decision=kind, policy=policy, reason=reason, count=n)
                                       for (kind, policy, reason), n in counts.items()
                                       if (kind, policy, reason) not in rows])


def histogram_observe(family: str, label: str, values: Iterable[float]) -> None:
    histograms_observe(family, {label: list(values)})


def histograms_observe(family: str, values: Mapping[str, Iterable[float]]) -> None:
    """Add ``values`` (label → seconds) to the family's histograms, in one read, one UPDATE run per
    row and a bulk INSERT; in the caller's transaction, under the pass lock (the rows are read, then written,
    and locked on PostgreSQL besides)."""
    if not values:
        return
    bounds = BOUNDS[family]
    rows = {row.label: row for row in
            HistogramTotal.objects.select_for_update().filter(family=family, label__in=list(values))}
    new = {label: HistogramTotal(family=family, label=label, buckets=[0] * (len(bounds) + 1))
           for label in values if label not in rows}
    for label, observed in values.items():
        row = rows.get(label) or new[label]
        for value in observed:
            row.buckets[bisect_left(bounds, value)] += 1  # a value on a bound counts in it (le)
            row.count += 1
            row.total += value
    sql.update_rows(list(rows.values()), ["buckets", "count", "total"])
    HistogramTotal.objects.bulk_create(list(new.values()))


def cumulative(family: str, buckets: list[int]) -> list[tuple[str, int]]:
    """Prometheus's buckets of stored counts: (``le`` as text, observations ≤ it), +Inf last."""
    bounds = [str(bound) for bound in BOUNDS[family]] + ["+Inf"]
    running, found = 0, []
    for bound, n in zip(bounds, buckets, strict=True):
        running += n
        found.append((bound, running))
    return found
