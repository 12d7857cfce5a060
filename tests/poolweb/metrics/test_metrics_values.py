"""``GET /metrics``: every family, with the values of a small scenario, and counters that only
count what committed and never go down (decisions 150, 151)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from poolweb.models import DecisionTotal, Event, HistogramTotal, PassRecord, Request as RequestRow
from poolweb.services import events, reconciler, triggers
from poolweb.services.reconciler import reconcile_pass
from tests.poolweb.conftest import request_row
from tests.poolweb.metrics.conftest import families, labels, scrape

pytestmark = pytest.mark.django_db

FAMILIES = {
    "poolweb_requests", "poolweb_policy_usage", "poolweb_policy_borrowed", "poolweb_policy_reserved",
    "poolweb_policy_limit", "poolweb_policy_budget_hours", "poolweb_policy_budget_used_hours", "poolweb_grants", "poolweb_preemptions", "poolweb_evictions", "poolweb_expiries",
    "poolweb_rejections", "poolweb_cancellations", "poolweb_grant_wait_seconds", "poolweb_pass_duration_seconds",
    "poolweb_last_pass_timestamp_seconds", "poolweb_last_pass_duration_seconds", "poolweb_last_pass_requests",
    "poolweb_last_pass_conflicts", "poolweb_worker_last_seen_timestamp_seconds",
    "poolweb_http_request_duration_seconds", "poolweb_http_responses", "poolweb_event_relay_lag_seconds",
}


def submitted(owner, policy: str, profile: str, gpu: float, ago: dt.timedelta, now: dt.datetime) -> RequestRow:
    row = request_row(owner, policy, profile, gpu)
    RequestRow.objects.filter(pk=row.pk).update(submitted_at=now - ago)
    return row


@pytest.fixture
def scenario(provisioned, bob, metrics_on):
    """dev: 4 gpu granted on h100 after 90 s, 16 gpu rejected, 1 pending; research: 0.5 gpu granted
    on a100 at once, and a pass record of that pass."""
    now = timezone.now()
    submitted(bob, "dev", "4xgpu", 4, dt.timedelta(seconds=90), now)
    submitted(bob, "dev", "job", 16, dt.timedelta(seconds=5), now)
    submitted(bob, "research", "half", 0.5, dt.timedelta(seconds=0.5), now)
    reconcile_pass(now=now)
    request_row(bob, "dev", "4xgpu", 4)  # not yet seen by a pass
    return now


def test_every_family_is_exported(scenario):
    assert families() == FAMILIES


def test_requests_are_counted_by_state_policy_and_pool(scenario):
    samples = scrape()
    assert {key: value for key, value in samples.items() if key[0] == "poolweb_requests"} == {
        ("poolweb_requests", labels(state="allocated", policy="dev", pool="h100")): 1,
        ("poolweb_requests", labels(state="allocated", policy="research", pool="a100")): 1,
        ("poolweb_requests", labels(state="pending", policy="dev", pool="")): 1,
    }


def test_a_policy_shows_what_get_policies_shows(scenario, bob):
    samples = scrape()
    dev = dict(policy="dev", scope="*", key="gpu")
    assert samples[("poolweb_policy_usage", labels(**dev))] == 4
    assert samples[("poolweb_policy_reserved", labels(**dev))] == 4
    assert samples[("poolweb_policy_limit", labels(**dev))] == 8
    assert samples[("poolweb_policy_borrowed", labels(**dev))] == 0
    assert samples[("poolweb_policy_usage", labels(policy="research", scope="a100", key="gpu"))] == 0.5
    assert ("poolweb_policy_reserved", labels(policy="dev", scope="h100", key="gpu")) not in samples  # no quota row


def test_borrowed_is_usage_beyond_the_reserved_share(scenario, bob):
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    samples = scrape()
    assert samples[("poolweb_policy_usage", labels(policy="dev", scope="*", key="gpu"))] == 4.5
    assert samples[("poolweb_policy_borrowed", labels(policy="dev", scope="*", key="gpu"))] == 0.5


def test_decisions_are_counted_by_policy_and_reason(scenario):
    samples = scrape()
    assert samples[("poolweb_grants_total", labels(policy="dev", reason="Granted"))] == 1
    assert samples[("poolweb_grants_total", labels(policy="research", reason="Granted"))] == 1
    assert samples[("poolweb_rejections_total", labels(policy="dev", reason="ExceedsPoolCapacity"))] == 1
    assert not [key for key in samples if key[0] in ("poolweb_preemptions_total", "poolweb_expiries_total")]


def test_the_wait_for_a_grant_is_a_histogram_per_policy(scenario):
    samples = scrape()
    dev = {le: samples[("poolweb_grant_wait_seconds_bucket", labels(policy="dev", le=le))]
           for le in ("60", "120", "+Inf")}
    assert dev == {"60": 0, "120": 1, "+Inf": 1}
    assert samples[("poolweb_grant_wait_seconds_count", labels(policy="dev"))] == 1
    assert samples[("poolweb_grant_wait_seconds_sum", labels(policy="dev"))] == pytest.approx(90)
    assert samples[("poolweb_grant_wait_seconds_bucket", labels(policy="research", le="1"))] == 1


def test_passes_show_their_duration_size_and_time(scenario):
    samples, record = scrape(), PassRecord.objects.get()
    assert samples[("poolweb_pass_duration_seconds_count", labels())] == 1
    assert samples[("poolweb_pass_duration_seconds_sum", labels())] == pytest.approx(record.duration_ms / 1000, abs=1e-5)
    assert samples[("poolweb_last_pass_duration_seconds", labels())] == pytest.approx(record.duration_ms / 1000, abs=1e-5)
    assert samples[("poolweb_last_pass_timestamp_seconds", labels())] == pytest.approx(scenario.timestamp())
    assert samples[("poolweb_last_pass_requests", labels(state="pending"))] == 3
    assert samples[("poolweb_last_pass_requests", labels(state="live"))] == 0
    assert samples[("poolweb_last_pass_conflicts", labels())] == 0


def test_a_preemption_and_its_eviction_and_an_expiry_are_counted(scenario, bob, settings):
    """research (priority 10) takes h100's room from dev's 4 gpu; the grace over, dev is evicted;
    research's half on a100 lets its lease run out."""
    for _ in range(2):
        request_row(bob, "research", "4xgpu", 4)
    RequestRow.objects.filter(policy="dev", state="pending").delete()
    reconcile_pass(now=scenario + dt.timedelta(seconds=1))
    later = scenario + dt.timedelta(seconds=1 + settings.POOLWEB["EVICTION_GRACE_SECONDS"] + 1)
    RequestRow.objects.filter(profile="half").update(lease_expires_at=later - dt.timedelta(seconds=1))
    reconcile_pass(now=later)
    samples = scrape()
    assert samples[("poolweb_preemptions_total", labels(policy="dev", reason="PreemptedByPriority"))] == 1
    assert sum(value for key, value in samples.items() if key[0] == "poolweb_evictions_total") == 1
    assert samples[("poolweb_expiries_total", labels(policy="research", reason="LeaseExpired"))] == 1


def test_a_decision_dropped_as_a_conflict_is_not_counted(provisioned, bob, metrics_on, monkeypatch):
    waiting = request_row(bob, "dev", "4xgpu", 4)
    real_plan = reconciler.plan

    def plan_then_cancel(snapshot, terms=None):
        decided = real_plan(snapshot, terms)
        RequestRow.objects.filter(pk=waiting.pk).update(state="cancelled", reason="CancelledByUser")
        return decided

    monkeypatch.setattr(reconciler, "plan", plan_then_cancel)
    assert reconcile_pass().conflicts == 1
    assert not DecisionTotal.objects.exists() and not HistogramTotal.objects.filter(family="grant_wait").exists()
    assert ("poolweb_grants_total", labels(policy="dev", reason="Granted")) not in scrape()


def test_a_pass_rolled_back_counts_nothing(provisioned, bob, metrics_on, monkeypatch):
    request_row(bob, "dev", "4xgpu", 4)

    def broken(pools, policies):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(events, "publish_live", broken)
    with pytest.raises(RuntimeError):
        reconcile_pass()
    assert not DecisionTotal.objects.exists() and not HistogramTotal.objects.exists()


def test_counters_outlive_what_is_forgotten(scenario, settings):
    """Pass records, the outbox and finished requests are pruned; the totals are not."""
    before = scrape()
    RequestRow.objects.update(state="released", finished_at=scenario - dt.timedelta(days=400))
    PassRecord.objects.update(started_at=scenario - dt.timedelta(days=30))
    Event.objects.update(created_at=scenario - dt.timedelta(days=30))
    settings.POOLWEB = {**settings.POOLWEB, "EVENTS_KEPT": 100}
    triggers.forget_old()
    assert not RequestRow.objects.exists() and not PassRecord.objects.exists()
    after = scrape()
    for name in ("poolweb_grants_total", "poolweb_rejections_total", "poolweb_grant_wait_seconds_count",
                 "poolweb_pass_duration_seconds_count"):
        assert {k: v for k, v in after.items() if k[0] == name} == {k: v for k, v in before.items() if k[0] == name}


def test_a_counter_adds_up_over_passes(scenario, bob):
    request_row(bob, "research", "half", 0.5)
    reconcile_pass(now=scenario + dt.timedelta(seconds=1))
    samples = scrape()
    assert samples[("poolweb_grants_total", labels(policy="research", reason="Granted"))] == 2
    assert samples[("poolweb_pass_duration_seconds_count", labels())] == 2


def test_before_any_pass_the_families_are_there_without_samples(db, metrics_on):
    samples = scrape()
    assert families() == FAMILIES
    assert ("poolweb_last_pass_timestamp_seconds", labels()) not in samples
    assert not [key for key in samples if key[0] == "poolweb_requests"]


def test_totals_of_many_policies_are_added_in_one_go(db):
    """services.totals adds to existing rows and creates missing ones alike, in one pass's call."""
    from poolweb.services.totals import histograms_observe

    DecisionTotal.objects.create(decision="grant", policy="a", reason="Granted", count=5)
    histograms_observe("grant_wait", {"a": [0.5, 10]})
    histograms_observe("grant_wait", {"a": [3600], "b": [90000]})
    rows = {row.label: (row.buckets, row.count, row.total) for row in HistogramTotal.objects.all()}
    assert rows == {"a": ([1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], 3, 3610.5),
                    "b": ([0] * 12 + [1], 1, 90000)}


def test_a_budget_and_its_burn_are_gauges_in_key_hours(alice, bob, metrics_on):
    from poolweb.services import config as config_services
    from tests.poolweb.conftest import document

    doc = document()
    doc["policies"][0]["budget"] = {"hours": 1000.5, "period": "week"}
    config_services.config_provision_document(document=doc, author=alice)
    samples = scrape()
    at = labels(policy="dev", key="gpu", period="week")
    assert samples[("poolweb_policy_budget_hours", at)] == 1000.5
    assert samples[("poolweb_policy_budget_used_hours", at)] == 0
    assert [key for key in samples if key[0].startswith("poolweb_policy_budget")] == [
        ("poolweb_policy_budget_hours", at), ("poolweb_policy_budget_used_hours", at)]
