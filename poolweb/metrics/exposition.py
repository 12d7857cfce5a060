"""The metric families of ``/metrics``, made afresh for each scrape from ``selectors.metrics``
(decision 150) with prometheus_client's collector interface: no metric lives in a process, so
several web processes answer alike without its multiprocess mode. Only the HTTP latency and the
event relay's lag are measured in the web processes (``poolweb.instruments``, decision 142).

Quantities are in units, as the API shows them (``{gpu: 500}`` milli-units → 0.5); times are
seconds since the epoch, the way Prometheus compares them with ``time()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from poolweb import instruments
from poolweb.selectors.metrics import Readings
from poolweb.services.totals import GRANT_WAIT, PASS_DURATION, cumulative

MILLI = 1000

# decision label (services.totals.KINDS) → the counter family and its help
COUNTERS = {
    "grant": ("poolweb_grants", "Requests granted by passes, by policy"),
    "preemption": ("poolweb_preemptions", "Requests preempted (their eviction began), by policy and reason"),
    "eviction": ("poolweb_evictions", "Preempted requests evicted when their grace ended (R-44, R-46)"),
    "expiry": ("poolweb_expiries", "Leases that ran out (R-50) and runs at their limit (R-52), by policy and reason"),
    "rejection": ("poolweb_rejections", "Requests rejected as never able to run (R-15), by policy and reason"),
    "cancellation": ("poolweb_cancellations", "Requests cancelled by a pass (R-56: their queue removed)"),
}
HISTOGRAMS = {
    GRANT_WAIT: ("poolweb_grant_wait_seconds", "Time from submission to a request's first grant", ["policy"]),
    PASS_DURATION: ("poolweb_pass_duration_seconds", "Duration of passes that wrote something", []),
}


def exposition(readings: Readings) -> bytes:
    """The scrape's body, in Prometheus's text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(readings))
    instruments.register(registry)
    return generate_latest(registry)


class _Collector:
    def __init__(self, readings: Readings) -> None:
        self.readings = readings

    def collect(self) -> Iterator[Metric]:
        readings = self.readings
        yield _requests(readings)
        yield from _policies(readings)
        yield from _budgets(readings)
        yield from _decisions(readings)
        yield from _histograms(readings)
        yield from _passes(readings)


def _requests(readings: Readings) -> Metric:
    family = GaugeMetricFamily("poolweb_requests", "Unfinished requests by state, policy and pool (a pending "
                               "request's queue pool; \"\" before a pass placed it)",
                               labels=["state", "policy", "pool"])
    for row in readings.requests:
        family.add_metric([row.state, row.policy, row.pool], row.count)
    return family


def _policies(readings: Readings) -> Iterator[Metric]:
    """Usage, borrowed, reserved and limit per policy, scope and key, as ``GET /policies`` shows them."""
    labels = ["policy", "scope", "key"]
    usage = GaugeMetricFamily("poolweb_policy_usage", "Live allocations of the policy at the scope", labels=labels)
    borrowed = GaugeMetricFamily("poolweb_policy_borrowed", "Usage beyond the reserved share", labels=labels)
    reserved = GaugeMetricFamily("poolweb_policy_reserved", "Reserved share (quotas that state one)", labels=labels)
    limit = GaugeMetricFamily("poolweb_policy_limit", "Limit (quotas that state one)", labels=labels)
    for policy in readings.policies:
        for row in policy.scopes:
            at = [policy.name, row.scope, row.key]
            usage.add_metric(at, row.usage / MILLI)
            borrowed.add_metric(at, row.borrowed / MILLI)
            if row.reserved is not None:
                reserved.add_metric(at, row.reserved / MILLI)
            if row.limit is not None:
                limit.add_metric(at, row.limit / MILLI)
    yield from (usage, borrowed, reserved, limit)


def _budgets(readings: Readings) -> Iterator[Metric]:
    """Each budget and its burn in the current period, in key-hours (docs/scheduling.md §8a)."""
    labels = ["policy", "key", "period"]
    budget = GaugeMetricFamily("poolweb_policy_budget_hours", "Key-hours the policy may use per period",
                               labels=labels)
    used = GaugeMetricFamily("poolweb_policy_budget_used_hours", "Key-hours the policy used in the current "
                             "period so far (its burn, R-70)", labels=labels)
    for burn in readings.budgets:
        at = [burn.policy, burn.budget.key, burn.budget.period]
        budget.add_metric(at, burn.budget.hours / MILLI)
        used.add_metric(at, burn.used / 3_600_000)
    yield from (budget, used)


def _decisions(readings: Readings) -> Iterator[Metric]:
    families = {decision: CounterMetricFamily(name, text, labels=["policy", "reason"])
                for decision, (name, text) in COUNTERS.items()}
    for row in readings.decisions:
        if row.decision in families:
            families[row.decision].add_metric([row.policy, row.reason], row.count)
    yield from families.values()


def _histograms(readings: Readings) -> Iterator[Metric]:
    families = {family: HistogramMetricFamily(name, text, labels=labels)
                for family, (name, text, labels) in HISTOGRAMS.items()}
    for row in readings.histograms:
        if row.family in families:
            labels = [row.label] if HISTOGRAMS[row.family][2] else []
            families[row.family].add_metric(labels, cumulative(row.family, row.buckets), row.total)
    yield from families.values()


def _passes(readings: Readings) -> Iterator[Metric]:
    """The last pass that wrote (pass records) and the worker's last pass task: a stalled loop or
    worker shows as a timestamp that stops moving."""
    last = readings.last_pass
    yield _gauge("poolweb_last_pass_timestamp_seconds", "When the last pass that wrote something started",
                 None if last is None else _seconds(last.started_at))
    yield _gauge("poolweb_last_pass_duration_seconds", "How long the last pass that wrote took",
                 None if last is None else last.duration_ms / 1000)
    size = GaugeMetricFamily("poolweb_last_pass_requests", "Requests the last pass that wrote read, pending "
                             "and live", labels=["state"])
    if last is not None:
        size.add_metric(["pending"], last.pending)
        size.add_metric(["live"], last.live)
    yield size
    yield _gauge("poolweb_last_pass_conflicts", "Decisions the last pass dropped as conflicts",
                 None if last is None else last.conflicts)
    yield _gauge("poolweb_worker_last_seen_timestamp_seconds", "When the worker last finished a pass task "
                 "(the periodic pass runs every minute)",
                 None if readings.worker_seen_at is None else _seconds(readings.worker_seen_at))


def _gauge(name: str, text: str, value: float | None) -> Metric:
    """A gauge without labels, with no sample while there is no value (before the first pass)."""
    family = GaugeMetricFamily(name, text)
    if value is not None:
        family.add_metric([], value)
    return family


def _seconds(at: datetime) -> float:
    return at.timestamp()
