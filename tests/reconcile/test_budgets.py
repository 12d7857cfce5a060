"""Budgets in the engine (docs/scheduling.md §8a): periods, thresholds, the document's ``budget``
and R-72's transformation of the engine's input, judged by what the planner then decides."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import pytest

from reconcile import plan
from reconcile.budgets import Burn, crossings, next_reset, period_of, when_spent_idle
from reconcile.diff import diff
from reconcile.document import parse_document
from reconcile.document_writer import to_document
from reconcile.model import Budget
from reconcile.model import State
from reconcile.reasons import Reason
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot

HOUR = 3_600_000  # milli-unit-seconds of one unit for an hour


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


@pytest.mark.parametrize("period, now, start, end", [
    ("day", utc(2026, 12, 31, 23, 59), utc(2026, 12, 31), utc(2027, 1, 1)),
    ("week", utc(2026, 12, 4, 18), utc(2026, 11, 30), utc(2026, 12, 7)),  # Friday: from Monday
    ("week", utc(2026, 11, 30), utc(2026, 11, 30), utc(2026, 12, 7)),  # Monday 00:00 starts one
    ("month", utc(2026, 12, 4), utc(2026, 12, 1), utc(2027, 1, 1)),
    ("month", utc(2027, 2, 28, 23), utc(2027, 2, 1), utc(2027, 3, 1)),
])
def test_periods_are_utc_calendar_periods(period, now, start, end):
    assert tuple(period_of(Budget(1000, period), now)) == (start, end)


def test_r70_r73_a_burn_reaches_its_thresholds_exactly_and_is_spent_at_its_budget():
    budget = Budget(hours=10_000, period="day")  # 10 GPU-hours
    period = period_of(budget, utc(2026, 12, 4))
    reached = [Burn("dev", budget, period, used).reached for used in (5 * HOUR - 1, 5 * HOUR, 8 * HOUR, 10 * HOUR - 1)]
    assert reached == [0, 50, 80, 80]
    assert not Burn("dev", budget, period, 10 * HOUR - 1).spent and Burn("dev", budget, period, 10 * HOUR).spent
    burn = Burn("dev", budget, period, 10 * HOUR)
    assert crossings({"dev": burn}, {"dev": 50}) == [(burn, 80), (burn, 100)]
    assert crossings({"dev": burn}, {"dev": 100}) == []


def test_the_text_says_the_burn_the_budget_and_the_reset():
    budget = Budget(hours=1_000_000, period="month")
    burn = Burn("dev", budget, period_of(budget, utc(2026, 12, 4)), 612 * HOUR + HOUR // 2)
    assert burn.text == "612.5 of 1,000 GPU-hours this month, resets 1 Jan"


def test_r74_the_next_reset_is_the_earliest_budgets_period_end():
    cfg = config(replace(policy("a"), budget=Budget(1000, "month")), replace(policy("b"), budget=Budget(1000, "day")),
                 policy("c"))
    assert next_reset(cfg, utc(2026, 12, 4, 18)) == utc(2026, 12, 5)
    assert next_reset(config(policy("c")), utc(2026, 12, 4)) is None


# --- the document ---------------------------------------------------------------------------------

def document(budget: object) -> dict:
    return {"pools": [{"name": "dc", "capacity": {"gpu": 8}}],
            "profiles": [{"name": "job", "resources": {"gpu": 1}, "connections": [{"pool": "dc"}], "policies": ["dev"]}],
            "policies": [{"name": "dev", "group": "dev", "budget": budget}]}


def test_a_budget_reads_and_writes_back_with_its_defaults():
    parsed = parse_document(document({"hours": 1000.5, "period": "week"}))
    assert parsed.errors == ()
    assert parsed.config.policy["dev"].budget == Budget(hours=1_000_500, period="week", key="gpu", when_spent="refuse")
    written = to_document(parsed.config)["policies"][0]["budget"]
    assert written == {"key": "gpu", "hours": pytest.approx(1000.5), "period": "week", "when_spent": "refuse"}
    assert parse_document(to_document(parsed.config)).config == parsed.config


def test_a_policy_without_a_budget_writes_none():
    doc = document(None)
    del doc["policies"][0]["budget"]
    assert "budget" not in to_document(parse_document(doc).config)["policies"][0]


@pytest.mark.parametrize("budget, path, code", [
    ({"period": "month"}, "policies[0].budget.hours", "required"),
    ({"hours": -1, "period": "month"}, "policies[0].budget.hours", "invalid_quantity"),
    ({"hours": 10}, "policies[0].budget.period", "required"),
    ({"hours": 10, "period": "year"}, "policies[0].budget.period", "invalid_choice"),
    ({"hours": 10, "period": "day", "when_spent": "stop"}, "policies[0].budget.when_spent", "invalid_choice"),
    ({"hours": 10, "period": "day", "key": "GPU"}, "policies[0].budget.key", "invalid_key"),
    ({"hours": 10, "period": "day", "colour": 1}, "policies[0].budget.colour", "unknown_field"),
    ([10], "policies[0].budget", "invalid_type"),
])
def test_a_bad_budget_is_an_error_naming_its_field(budget, path, code):
    errors = parse_document(document(budget)).errors
    assert [(e.path, e.code) for e in errors] == [(path, code)]


def test_a_budget_change_is_a_diff_of_its_fields():
    before = parse_document(document({"hours": 10, "period": "day"})).config
    after = parse_document(document({"hours": 20, "period": "day", "when_spent": "idle"})).config
    (change,) = diff(before, after)
    assert [(f.field, f.before, f.after) for f in change.fields] == [
        ("budget.hours", 10, 20), ("budget.when_spent", "refuse", "idle")]


# --- served from idle capacity only -----------------------------------------------------------

CFG = config(pool("dc", gpu=4),
             profile("job", "dc", ("spent", "web"), dynamic=True, gpu=1),
             policy("spent", "dc:gpu 4/4", priority=10), policy("web", "dc:gpu 2/4", priority=0))


def test_r72_the_input_is_not_changed_and_nothing_changes_without_spent_policies():
    before = snapshot(CFG, req(1, "spent", "job", gpu=1))
    assert when_spent_idle(before, set()) is before
    after = when_spent_idle(before, {"spent"})
    assert before.config.policy["spent"].priority == 10 and after.config.policy["spent"].priority == -1
    assert [q.reserved for q in after.config.policy["spent"].quotas] == [None]
    assert after.config.policy["web"] == before.config.policy["web"]


def test_r72_a_spent_policy_is_served_after_every_other_whatever_its_priority():
    waiting = snapshot(CFG, req(1, "spent", "job", gpu=4), req(2, "web", "job", gpu=4))
    assert [g.request_id for g in plan(waiting).grants] == [1]  # without the budget: priority 10 first
    assert [g.request_id for g in plan(when_spent_idle(waiting, {"spent"})).grants] == [2]


def test_r72_a_spent_policy_still_takes_idle_capacity():
    alone = snapshot(CFG, req(1, "spent", "job", gpu=3))
    assert [g.request_id for g in plan(when_spent_idle(alone, {"spent"})).grants] == [1]


def test_r72_a_spent_policy_never_preempts_and_is_preempted_first():
    web_running = req(1, "web", "job", state=State.ALLOCATED, pool="dc", gpu=4)
    spent_waits = snapshot(CFG, web_running, req(2, "spent", "job", gpu=2))
    assert plan(spent_waits).preemptions  # priority 10 over 0: it would preempt
    assert not plan(when_spent_idle(spent_waits, {"spent"})).preemptions
    spent_running = req(1, "spent", "job", state=State.ALLOCATED, pool="dc", gpu=4)
    web_waits = snapshot(CFG, spent_running, req(2, "web", "job", gpu=2))
    assert not plan(web_waits).preemptions  # 0 below 10, and spent is in share: nobody may take it
    (victim,) = plan(when_spent_idle(web_waits, {"spent"})).preemptions
    assert (victim.request_id, victim.reason) == (1, Reason.PREEMPTED_BY_PRIORITY)


def test_r73_running_work_of_a_spent_policy_is_not_stopped():
    running = snapshot(CFG, req(1, "spent", "job", state=State.ALLOCATED, pool="dc", gpu=4))
    assert list(plan(when_spent_idle(running, {"spent"})).decisions()) == []


def test_r72_a_pending_non_preemptible_request_of_a_spent_policy_waits_unjudged():
    waiting = snapshot(CFG, req(1, "spent", "job", preemptible=False, gpu=1), req(2, "spent", "job", gpu=1))
    spent = when_spent_idle(waiting, {"spent"})
    assert [r.id for r in spent.requests] == [2]
    assert not plan(spent).rejections  # not rejected for the reservation it lost
