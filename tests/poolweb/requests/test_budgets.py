"""Budgets at work (docs/scheduling.md §8a): a spent budget refuses (R-71) or serves from idle
capacity only (R-72); the period resets (R-74); each threshold is announced once (R-73).

The history is written straight in the database at the start of the current month, in seconds
(36 s of one GPU is 0.01 GPU-hours), so the burn is exact whatever day the tests run: the days
closed since then are computed and kept as a report keeps them, today's cut read from the history.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from poolweb.models import BudgetMark, Event, Request, RequestChange, UsageDay
from poolweb.services import config as config_services, events
from poolweb.services.budgets import PASS_BURNS, budget_burns
from poolweb.services.reconciler import reconcile_pass
from poolweb.services.triggers import next_wake
from poolweb.selectors.burns import SETTLED_TODAY
from poolweb.selectors.versions import live_config
from reconcile.budgets import period_of
from reconcile.model import Budget
from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db

START = period_of(Budget(1, "month"), timezone.now()).start


@pytest.fixture(autouse=True)
def nothing_settled_yet():
    SETTLED_TODAY.clear()  # caches per process: another test's today is not this one's
    PASS_BURNS.clear()


def budgeted(alice, hours: float, when_spent: str = "refuse", dev_priority: int = 0):
    doc = document()
    dev = doc["policies"][0]
    dev.update(priority=dev_priority, budget={"hours": hours, "period": "month", "when_spent": when_spent})
    return config_services.config_provision_document(document=doc, author=alice)


def used(owner, seconds: int, gpu: int = 1, after: int = 0) -> Request:
    """A released dev request that held ``gpu`` on h100 for ``seconds``, ``after`` seconds into the month."""
    granted = START + dt.timedelta(seconds=after)
    ended = granted + dt.timedelta(seconds=seconds)
    row = Request.objects.create(owner=owner, policy="dev", profile="job", state="released", reason="Released",
                                 resources={"gpu": gpu * 1000, "step_run": 1000}, submitted_at=granted,
                                 finished_at=ended)
    for when, state, pool in ((granted, "pending", None), (granted, "allocated", "h100"), (ended, "released", None)):
        RequestChange.objects.create(request=row, at=when, state=state, reason="Granted", attempt=1, pool=pool)
    UsageDay.objects.all().delete()  # history written into settled time, as no site does: keep it again
    SETTLED_TODAY.clear()
    PASS_BURNS.clear()
    return row


def submit(user, profile: str = "job", **body):
    response = client_for(user).post("/api/v1/requests", {"policy": "dev", "profile": profile, **body},
                                     format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_r70_the_burn_is_the_usage_reports_used_exactly(alice, bob):
    budgeted(alice, 1)
    used(bob, 36)
    used(bob, 90, gpu=2, after=100)
    assert budget_burns(live_config(), timezone.now())["dev"].used == 36 * 1000 + 180 * 1000
    recent = int((timezone.now() - START).total_seconds()) - 7200  # today's settled hours, when there are
    used(bob, 3000, gpu=3, after=max(200, recent))
    burns = [budget_burns(live_config(), timezone.now())["dev"].used for _ in range(2)]  # swept, then cached
    response = client_for(alice).get("/api/v1/usage", {"since": START.isoformat(), "by": "policy"})
    dev_gpu = next(r for r in response.json()["rows"] if r["policy"] == "dev" and r["key"] == "gpu")
    assert dev_gpu["exact"]["used"] == 216_000 + 9_000_000 == burns[0] == burns[1]


def test_r71_a_spent_budget_refuses_a_submission_saying_when_it_resets(alice, bob):
    budgeted(alice, 0.01)  # 36 GPU-seconds
    used(bob, 35)
    assert submit(bob, "half")["state"] != "rejected"  # 35 of 36: not spent
    used(bob, 1, after=100)
    answer = submit(bob)
    reset = period_of(Budget(1, "month"), timezone.now()).end
    assert (answer["state"], answer["reason"]) == ("rejected", "BudgetSpent")
    assert answer["message"] == (f"policy dev has spent its budget: 0.01 of 0.01 GPU-hours this month, "
                                 f"resets {reset.day} {reset:%b}")


def test_r71_a_spent_budget_refuses_each_item_of_a_batch(alice, bob):
    budgeted(alice, 0.01)
    used(bob, 36)
    response = client_for(bob).post("/api/v1/requests/batch", {"requests": [
        {"policy": "dev", "profile": "job"}, {"policy": "dev", "profile": "half"}]}, format="json")
    assert response.status_code in (200, 201, 207), response.content
    assert [item["request"]["reason"] for item in response.json()["results"]] == ["BudgetSpent", "BudgetSpent"]


def test_r71_other_policies_are_not_refused(alice, bob):
    budgeted(alice, 0.01)
    used(bob, 36)
    answer = client_for(alice).post("/api/v1/requests", {"policy": "research", "profile": "half"}, format="json")
    assert answer.json()["state"] in ("pending", "allocated")


def research_fills_h100(alice):
    for _ in range(2):
        client_for(alice).post("/api/v1/requests", {"policy": "research", "profile": "4xgpu"}, format="json")
    assert Request.objects.filter(policy="research", state="allocated").count() == 2


def test_r72_a_spent_idle_policy_does_not_preempt_and_waits_behind_every_other(alice, bob):
    budgeted(alice, 0.01, when_spent="idle", dev_priority=20)
    research_fills_h100(alice)  # 8 gpu on h100, and a100 is free
    used(bob, 36)
    answer = submit(bob, "4xgpu")  # a100 has 4 free: idle capacity serves it
    assert answer["state"] == "allocated" and answer["pool"] == "a100"
    waits = submit(bob, "4xgpu")  # priority 20 would preempt research's 0-borrowing 4xgpu; spent, it waits
    assert waits["state"] == "pending"
    assert not Request.objects.filter(state="preempting").exists()


def test_r72_without_the_spent_budget_the_same_request_preempts(alice, bob):
    budgeted(alice, 1000, when_spent="idle", dev_priority=20)
    research_fills_h100(alice)
    submit(bob, "4xgpu")
    submit(bob, "4xgpu")
    assert Request.objects.filter(state="preempting").exists()


def test_r72_a_spent_idle_policy_refuses_only_non_preemptible_requests(alice, bob):
    budgeted(alice, 0.01, when_spent="idle")
    used(bob, 36)
    assert submit(bob, preemptible=True)["state"] in ("pending", "allocated")
    refused = submit(bob, preemptible=False)
    assert refused["reason"] == "BudgetSpent" and "submit it preemptible" in refused["message"]


def test_r73_running_work_is_not_stopped_when_the_budget_is_spent(alice, bob):
    budgeted(alice, 0.01, when_spent="refuse")
    running = submit(bob)
    assert running["state"] == "allocated"
    used(bob, 36)
    reconcile_pass()
    assert Request.objects.get(pk=running["id"]).state == "allocated"


def test_r74_the_period_resets_at_its_end_and_the_pass_loop_wakes_then(alice, bob):
    budgeted(alice, 0.01, when_spent="idle", dev_priority=20)
    research_fills_h100(alice)
    used(bob, 36)
    submit(bob, "4xgpu")
    waiting = submit(bob, "4xgpu")
    reset = period_of(Budget(1, "month"), timezone.now()).end
    assert next_wake() <= reset
    Request.objects.filter(state="allocated").update(lease_expires_at=reset + dt.timedelta(hours=1))
    reconcile_pass(now=reset - dt.timedelta(seconds=1))
    assert not Request.objects.filter(state="preempting").exists()
    reconcile_pass(now=reset)  # a new month: nothing burnt yet, priority 20 again
    assert Request.objects.filter(state="preempting").exists()
    assert Request.objects.get(pk=waiting["id"]).reason == "WaitingForPreemption"


def budget_events() -> list[tuple[str, int]]:
    found = [json.loads(e.data) for e in Event.objects.filter(type="policy.budget").order_by("seq")]
    return [(data["policy"], data["threshold"]) for data in found]


def test_r73_each_threshold_is_announced_once_per_period(alice, bob):
    budgeted(alice, 0.02)  # 72 GPU-seconds
    used(bob, 36)
    reconcile_pass()
    reconcile_pass()
    assert budget_events() == [("dev", 50)]
    used(bob, 36, after=100)
    reconcile_pass()
    reconcile_pass()
    assert budget_events() == [("dev", 50), ("dev", 80), ("dev", 100)]
    event = json.loads(Event.objects.filter(type="policy.budget").order_by("-seq").first().data)
    assert (event["spent"], event["percent"], event["used_exact"]) == (True, 100, 72_000)
    reset = period_of(Budget(1, "month"), timezone.now()).end
    reconcile_pass(now=reset)
    assert budget_events()[-1:] == [("dev", 100)]  # a new period: nothing burnt, nothing announced


def test_r73_a_pass_rolled_back_announces_nothing_and_the_next_announces_it(alice, bob, monkeypatch):
    budgeted(alice, 0.02)
    used(bob, 36)

    def broken(due):
        BudgetMark.objects.create(policy="dev", period_start=START, threshold=50)
        events.publish("policy.budget", {"policy": "dev", "threshold": 50})
        raise RuntimeError("the disk is full")

    from poolweb.services import reconciler
    monkeypatch.setattr(reconciler, "marks_write", broken)
    with pytest.raises(RuntimeError):
        reconcile_pass()
    assert budget_events() == [] and not BudgetMark.objects.exists()
    monkeypatch.undo()
    reconcile_pass()
    assert budget_events() == [("dev", 50)]


def test_get_policies_shows_the_burn_down(alice, bob):
    budgeted(alice, 1000)
    used(bob, 3600, gpu=2)
    dev, research = client_for(bob).get("/api/v1/policies").json()
    assert "budget" not in research
    budget = dev["budget"]
    assert {k: budget[k] for k in ("key", "hours", "period", "when_spent", "used", "used_exact", "percent", "spent")} \
        == {"key": "gpu", "hours": 1000, "period": "month", "when_spent": "refuse", "used": "2.000",
            "used_exact": 7_200_000, "percent": 0, "spent": False}
    assert budget["text"].startswith("2 of 1,000 GPU-hours this month, resets 1 ")


def test_a_pass_reads_the_burn_again_only_when_a_threshold_could_have_been_crossed(alice, bob, monkeypatch):
    from poolweb.services import budgets as budget_services

    reads = []
    real = budget_services.budget_burns
    monkeypatch.setattr(budget_services, "budget_burns", lambda *a, **k: reads.append(1) or real(*a, **k))
    budgeted(alice, 1000)  # 12 gpu can burn 1000 GPU-hours' 50 % in no less than 41 hours
    now = timezone.now()
    PASS_BURNS.clear()
    reads.clear()
    reconcile_pass(now=now)
    reconcile_pass(now=now + dt.timedelta(hours=1))
    assert len(reads) == 1
    reconcile_pass(now=now + dt.timedelta(hours=42))  # 50 % could have been reached: read
    assert len(reads) == 2


def test_r72_the_preview_shows_a_budget_change_with_the_current_burn_and_plans_as_a_pass_would(alice, bob):
    from tests.poolweb.conftest import request_row

    budgeted(alice, 1000, when_spent="idle", dev_priority=20)
    request_row(alice, "research", "4xgpu", 4, state="allocated", pool="h100")
    request_row(alice, "research", "4xgpu", 4, state="allocated", pool="a100")
    dev = request_row(bob, "dev", "4xgpu", 4)
    research = request_row(alice, "research", "4xgpu", 4)
    used(bob, 36)
    draft = document()
    draft["policies"][0].update(priority=20, budget={"hours": 0.01, "period": "month", "when_spent": "idle"})
    admin = client_for(alice)
    admin.put("/api/v1/config/draft", draft, format="json")
    body = admin.post("/api/v1/config/draft/preview").json()
    (budget,) = body["budgets"]
    assert (budget["policy"], budget["before"]["hours"], budget["after"]["hours"]) == ("dev", 1000, 0.01)
    assert budget["before"]["used_exact"] == budget["after"]["used_exact"] == 36_000
    assert budget["effect"] == "spent: its requests would be served last, from idle capacity only"
    assert [g["id"] for g in body["granted"]] == [research.id]  # not dev's, priority 20 and all
    assert body["preempted"] == []
    draft["policies"][0]["budget"]["hours"] = 1000
    admin.put("/api/v1/config/draft", draft, format="json")
    unchanged = admin.post("/api/v1/config/draft/preview").json()
    assert "budgets" not in unchanged and [g["id"] for g in unchanged["granted"]] == [dev.id]
