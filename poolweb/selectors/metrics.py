"""What ``/metrics`` reads (decision 150): everything from the database, the one place every web
process, the pass loop and the worker agree on, so any process answers a scrape alike and
nothing is counted in a process's memory.

A fixed handful of queries whatever the number of requests: the policies' live usage as
``GET /policies`` computes it (``selectors.live.policy_usage``: the live configuration, the live
requests, pending requests grouped by policy and queue pool), from which the requests are counted
too; the stored totals (two); the last pass record and the worker's last pass task (one each).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from collections import Counter

from django.utils import timezone

from poolweb.models import DecisionTotal, HistogramTotal, PassRecord
from poolweb.selectors.health import worker_seen_at
from poolweb.selectors.live import PolicyState, PolicyUsage, policy_usage
from poolweb.selectors.versions import live_engine_version
from poolweb.selectors.burns import budget_burns
from reconcile import ALL_POOLS, State
from reconcile.budgets import Burn

PENDING = State.PENDING.value


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
    budgets: list[Burn] = field(default_factory=list)  # each budget's burn now (docs/scheduling.md R-70)


def metric_readings() -> Readings:
    version = live_engine_version()
    usage = policy_usage(version=version)
    return Readings(request_counts(usage), usage.policies, decision_counts(), histograms(),
                    PassRecord.objects.order_by("-started_at").first(), worker_seen_at(),
                    list(budget_burns(version.config, timezone.now()).values()))


def request_counts(usage: PolicyUsage) -> list[RequestCount]:
    """Unfinished requests per state, policy and pool, from what ``policy_usage`` read: the live
    requests, and the pending ones counted per policy and queue pool ("*": all of the policy's)."""
    counts: Counter[tuple[str, str, str]] = Counter(
        (request.state.value, request.policy, request.pool or "") for request in usage.live)
    placed: Counter[str] = Counter()
    for (policy, pool), n in usage.pending.items():
        if pool != ALL_POOLS:
            counts[(PENDING, policy, pool)] += n
            placed[policy] += n
    for (policy, pool), n in usage.pending.items():
        if pool == ALL_POOLS and n > placed[policy]:
            counts[(PENDING, policy, "")] += n - placed[policy]  # not yet placed by a pass
    return sorted(RequestCount(*at, n) for at, n in counts.items())


def decision_counts() -> list[DecisionCount]:
    rows = DecisionTotal.objects.order_by("decision", "policy", "reason")
    return [DecisionCount(*row) for row in rows.values_list("decision", "policy", "reason", "count")]


def histograms() -> list[Histogram]:
    rows = HistogramTotal.objects.order_by("family", "label")
    return [Histogram(*row) for row in rows.values_list("family", "label", "buckets", "count", "total")]
