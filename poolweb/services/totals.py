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
from collections.abc import Collection, Iterable
from datetime import datetime

from django.db.models import F

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
    for policy, seconds in waits.items():
        histogram_observe(GRANT_WAIT, policy, seconds)


def _count(counts: Counter[tuple[str, str, str]]) -> None:
    """One UPDATE per (kind, policy, reason) the pass decided, an INSERT the first time: a handful."""
    for (kind, policy, reason), n in counts.items():
        rows = DecisionTotal.objects.filter(decision=kind, policy=policy, reason=reason)
        if not rows.update(count=F("count") + n):
            DecisionTotal.objects.create(decision=kind, policy=policy, reason=reason, count=n)


def histogram_observe(family: str, label: str, values: Iterable[float]) -> None:
    """Add ``values`` (seconds) to the family's histogram of ``label``; in the caller's transaction,
    under the pass lock (the row is read, then written)."""
    bounds = BOUNDS[family]
    row = HistogramTotal.objects.select_for_update().filter(family=family, label=label).first()
    if row is None:
        row = HistogramTotal(family=family, label=label, buckets=[0] * (len(bounds) + 1))
    for value in values:
        row.buckets[bisect_left(bounds, value)] += 1  # a value on a bound counts in it (le)
        row.count += 1
        row.total += value
    row.save()


def cumulative(family: str, buckets: list[int]) -> list[tuple[str, int]]:
    """Prometheus's buckets of stored counts: (``le`` as text, observations ≤ it), +Inf last."""
    bounds = [str(bound) for bound in BOUNDS[family]] + ["+Inf"]
    running, found = 0, []
    for bound, n in zip(bounds, buckets, strict=True):
        running += n
        found.append((bound, running))
    return found
