"""The audit page: an admin finds who switched management off from the header's Audit link, filters
the log, and a bad filter says which; a member has no link and no page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from playwright.sync_api import expect

from poolweb.services import audit
from poolweb.services.request_batches import ActionItem, request_act_many
from poolweb.services.tokens import token_create
from tests.browser.conftest import screenshot
from tests.browser.steps import confirm
from tests.poolweb.conftest import request_row


@pytest.fixture
def bridge(transactional_db) -> User:
    user = User.objects.create_user("bridge", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    return user


@pytest.fixture
def log(demo, bob, bridge):
    """Bob's token, and the bridge renewing the leases of three of bob's jobs from its host."""
    token_create(user=bob, name="laptop")
    jobs = [request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100") for _ in range(3)]
    with audit.acting_from("10.20.0.5"):
        request_act_many(user=bridge, action="heartbeat", items=[ActionItem(job.pk) for job in jobs])


def test_an_admin_finds_who_switched_management_off(visit, log, alice):
    page = visit(alice)
    page.get_by_role("switch", name="Resource management").click()
    confirm(page, "Disable resource management?", "Disable")
    expect(page.get_by_role("switch", name="Resource management")).to_have_attribute("aria-checked", "false")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Audit")
    rows = page.get_by_role("table", name="Audit log").get_by_role("row")
    expect(rows).to_have_count(5)  # the head, the switch, the batch, the token, the demo's provision
    expect(rows.nth(1)).to_contain_text(re.compile(r"alice\s*127\.0\.0\.1"))
    expect(rows.nth(1)).to_contain_text("on → off")
    expect(rows.nth(2)).to_contain_text("3 requests of bob")
    expect(rows.nth(2).get_by_role("link", name=re.compile(r"^Request \d+$"))).to_have_count(3)
    screenshot(page, "audit")

    page.get_by_label("Action").select_option("config.provision")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    rows.nth(1).get_by_role("link", name="version:1").click()
    expect(page).to_have_url(re.compile(r"/versions/1/$"))


def test_a_bad_filter_says_which(visit, log, alice):
    page = visit(alice, "/audit/?since=yesterday")

    expect(page.get_by_role("alert")).to_contain_text("since: since is not an ISO 8601 time")
    expect(page.get_by_role("table", name="Audit log")).to_have_count(0)
    page.get_by_role("link", name="Clear filters").first.click()
    expect(page.get_by_role("table", name="Audit log")).to_be_visible()


def test_a_member_has_no_audit_link_and_no_page(visit, log, bob):
    page = visit(bob)

    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit")).to_have_count(0)
    response = page.goto("/audit/")
    assert response.status == 403
