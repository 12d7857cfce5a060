"""The policies page: per policy, scope and key, usage against reserved and limit as a bar with
the reserved mark, the borrowed share, queued and running counts — the numbers of
GET /api/v1/policies — and its running requests; live from policy.updated; everyone signed in
sees every policy (decision 118)."""

from __future__ import annotations

from django.contrib.auth.models import User
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.steps import api_as, card, release, submit

FIGURES = ("usage", "reserved", "limit", "borrowed", "pending", "running")


def shown(number) -> str:
    return "—" if number is None else str(number)


def expect_as_the_api(page, user) -> None:
    """Every policy card shows what GET /api/v1/policies answers now, figure by figure."""
    for policy in api_as(user).get("/api/v1/policies").json():
        found = card(page, f"Policy {policy['name']}")
        expect(found.locator("[data-policy-running]")).to_have_text(str(policy["running"]))
        expect(found.locator("[data-policy-pending]")).to_have_text(str(policy["pending"]))
        rows = found.get_by_role("table", name=f"Usage of {policy['name']}").locator("tbody tr")
        expect(rows).to_have_count(len(policy["scopes"]))
        for n, scope in enumerate(policy["scopes"]):
            row = rows.nth(n)
            expect(row).to_have_attribute("data-scope", scope["scope"])
            expect(row).to_have_attribute("data-key", scope["key"])
            for figure in FIGURES:
                expect(row.locator(f'[data-figure="{figure}"]')).to_have_text(shown(scope[figure]))
            expect(row.get_by_role("meter")).to_have_attribute("aria-valuetext", (
                f"{shown(scope['usage'])} {scope['key']} in use, {shown(scope['borrowed'])} borrowed; "
                f"reserved {scope['reserved'] if scope['reserved'] is not None else 'none'}, "
                f"limit {scope['limit'] if scope['limit'] is not None else 'none'}"))


def bar_widths(page, policy: str, scope: str, key: str) -> tuple[str, str, str | None]:
    row = card(page, f"Policy {policy}").locator(f'tr[data-scope="{scope}"][data-key="{key}"]')
    mark = row.locator(".reserved-mark")
    return (row.locator(".within").evaluate("n => n.style.width"), row.locator(".beyond").evaluate("n => n.style.width"),
            None if mark.is_hidden() else mark.evaluate("n => n.style.left"))


def test_the_bars_match_the_api(visit, demo, alice, bob):
    for _ in range(5):
        submit(bob, "dev", "2xgpu")  # 4 of dev's 4 reserved on h100, then borrowing
    submit(alice, "research", "8xgpu")  # waits: h100 is taken
    submit(alice, "research", "half", name="notebook")
    page = visit(alice, "/policies/")
    expect(page.get_by_role("status")).to_have_text("Live")

    expect_as_the_api(page, alice)
    # dev on all pools: 8 of the limit 8 gpu in use, 4 within the reservation of 4, 4 borrowed.
    assert bar_widths(page, "dev", "*", "gpu") == ("50%", "50%", "50%")
    dev = card(page, "Policy dev")
    expect(dev.get_by_role("table", name="Running under dev").locator("tbody tr")).to_have_count(4)
    research = card(page, "Policy research")
    expect(research.get_by_role("table", name="Running under research")).to_contain_text("notebook")
    screenshot(page, "policies")


def test_the_page_follows_policy_updates(visit, demo, alice, bob):
    first = submit(bob, "dev", "half")
    page = visit(alice, "/policies/")
    expect(page.get_by_role("status")).to_have_text("Live")
    dev = card(page, "Policy dev")
    expect(dev.locator("[data-policy-running]")).to_have_text("1")

    second = submit(bob, "dev", "2xgpu", name="fine-tune")
    expect(dev.locator("[data-policy-running]")).to_have_text("2")
    expect(dev.get_by_role("table", name="Running under dev")).to_contain_text("fine-tune")
    expect_as_the_api(page, alice)

    release(second)
    release(first)
    expect(card(page, "Policy dev").locator("[data-policy-running]")).to_have_text("0")
    expect(card(page, "Policy dev")).to_contain_text("Nothing runs under dev now.")
    expect_as_the_api(page, alice)


def test_a_member_sees_every_teams_policy(visit, demo, bob):
    page = visit(bob, "/policies/")
    expect(card(page, "Policy dev")).to_be_visible()
    expect(card(page, "Policy research")).to_be_visible()
    assert page.goto("/policies/research/card/").status == 200

    carol = User.objects.create_user("carol")
    page = visit(carol, "/policies/")
    expect(card(page, "Policy research")).to_be_visible()
    expect(card(page, "Policy dev")).to_be_visible()


def test_a_budget_shows_its_burn_down_as_a_bar_and_a_sentence(visit, demo, alice, bob):
    from datetime import timedelta

    from django.utils import timezone

    from poolweb.models import Request, RequestChange
    from poolweb.selectors.versions import config_live_document
    from poolweb.services.config import config_provision_document
    from reconcile.budgets import period_of
    from reconcile.model import Budget

    document = config_live_document()
    del document["version"]
    dev = next(p for p in document["policies"] if p["name"] == "dev")
    dev["budget"] = {"hours": 10, "period": "month", "when_spent": "idle"}
    config_provision_document(document=document, author=alice)
    start = period_of(Budget(1, "month"), timezone.now()).start
    row = Request.objects.create(owner=bob, policy="dev", profile="2xgpu", state="released", reason="Released",
                                 resources={"gpu": 2000, "step_run": 1000}, submitted_at=start,
                                 finished_at=start + timedelta(hours=3))
    for at, state, pool in ((start, "pending", None), (start, "allocated", "h100"),
                            (start + timedelta(hours=3), "released", None)):
        RequestChange.objects.create(request=row, at=at, state=state, reason="Granted", attempt=1, pool=pool)
    from poolweb.models import UsageDay
    from poolweb.selectors.burns import SETTLED_TODAY

    UsageDay.objects.all().delete()
    SETTLED_TODAY.clear()
    reset = period_of(Budget(1, "month"), timezone.now()).end

    page = visit(bob, "/policies/")
    meter = card(page, "Policy dev").get_by_role("meter", name="Budget of dev")
    sentence = f"6 of 10 GPU-hours this month, resets {reset.day} {reset:%b}"
    expect(meter).to_have_attribute("aria-valuetext", sentence)
    expect(meter).to_have_attribute("aria-valuenow", "60")
    expect(card(page, "Policy dev")).to_contain_text(sentence)
    expect(card(page, "Policy research").get_by_role("meter", name="Budget of research")).to_have_count(0)
    screenshot(page, "policies-budget")


def test_a_policy_s_time_rules_show_beside_its_group_and_priority(visit, demo, alice, bob):
    from poolweb.selectors.versions import config_live_document
    from poolweb.services.config import config_provision_document

    document = config_live_document()
    del document["version"]
    research = next(p for p in document["policies"] if p["name"] == "research")
    research.update(min_runtime_seconds=1800, max_wait_seconds=7200, max_runtime_seconds=86400, on_time_limit="requeue")
    config_provision_document(document=document, author=alice)

    page = visit(bob, "/policies/")
    chips = card(page, "Policy research").locator(".time-rule")
    expect(chips).to_have_text(["protected for its first 30 min", "reserves after waiting 2 h",
                                "runs at most 1 d, then queued again"])
    expect(card(page, "Policy dev").locator(".time-rule")).to_have_count(0)
