"""What ``/metrics`` reads (decision 150): everything from the database, the one place every web
process, the pass loop and the worker agree on, so any process answers a scrape alike and
nothing is counted in a process's memory.

A fixed handful of queries whatever the number of requests: unfinished requests grouped by state,
policy and pool (one); the policies' live usage as ``GET /policies`` computes it
(``selectors.live.policy_states``: the live configuration and the live requests); the stored
totals (two); the last pass record and the worker's last pass task (one each).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db.models import Count

from poolweb.models import DecisionTotal, HistogramTotal, PassRecord
from poolweb.models import Request as RequestRow
from poolweb.selectors.health import worker_seen_at
from poolweb.selectors.live import PolicyState, policy_states
from reconcile import UNFINISHED_STATES, State


class RequestCount(NamedTuple):
    state: str  # pending, allocated or preempting
    policy: str
    pool: str  # where it runs; a pending one's queue pool, "" before a pass has placed it
    count: int


class DecisionCount(NamedTuple):
    decision: str  # grant, preemption, eviction, expiry, rejection, cancellation
    policy: str
    reason: str
    count: int


class Histogram(NamedTuple):
    family: str
    label: str
    buckets: list[int]  # per bound, not cumulative (models.HistogramTotal)
    count: int
    total: float


@dataclass(frozen=True)
class Readings:
    requests: list[RequestCount]
    policies: list[PolicyState]
    decisions: list[DecisionCount]
    histograms: list[Histogram]
    last_pass: PassRecord | None
    worker_seen_at: datetime | None


def metric_readings() -> Readings:
    return Readings(request_counts(), policy_states(), decision_counts(), histograms(),
                    PassRecord.objects.order_by("-started_at").first(), worker_seen_at())


def request_counts() -> list[RequestCount]:
    """Unfinished requests per state, policy and pool, in one grouped query."""
    grouped = (RequestRow.objects.filter(state__in=UNFINISHED_STATES).order_by()
               .values("state", "policy", "pool", "queue_pool").annotate(n=Count("id"))
               .values_list("state", "policy", "pool", "queue_pool", "n"))
    counts: dict[tuple[str, str, str], int] = {}
    for state, policy, pool, queue_pool, n in grouped:
        at = (state, policy, (queue_pool if state == State.PENDING.value else pool) or "")
        counts[at] = counts.get(at, 0) + n
    return sorted(RequestCount(*at, n) for at, n in counts.items())


def decision_counts() -> list[DecisionCount]:
    rows = DecisionTotal.objects.order_by("decision", "policy", "reason")
    return [DecisionCount(*row) for row in rows.values_list("decision", "policy", "reason", "count")]


def histograms() -> list[Histogram]:
    rows = HistogramTotal.objects.order_by("family", "label")
    return [Histogram(*row) for row in rows.values_list("family", "label", "buckets", "count", "total")]
