"""The requests pages: one's own requests (admins: everyone's) with filters, Cancel and Release
through the REST API after a confirmation, and a request's page following its history live —
through a preemption, the eviction after the grace and the grant of its next attempt."""

from __future__ import annotations

import re
from datetime import timedelta
from unittest import mock

from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import expect

from poolweb.models import Request, SiteState
from poolweb.services.config import config_provision_document
from poolweb.services.reconciler import reconcile_pass
from tests.browser.conftest import screenshot
from tests.browser.steps import confirm, release, submit

# One GPU, two policies of the same team: high preempts low.
PREEMPTIBLE = {
    "pools": [{"name": "p", "description": "one GPU", "capacity": {"gpu": 1}}],
    "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "p"}], "policies": ["low", "high"]}],
    "policies": [{"name": "low", "group": "dev", "priority": 1}, {"name": "high", "group": "dev", "priority": 2}],
}


def row(page, request: Request):
    return page.get_by_role("table", name="Requests").get_by_role("row").filter(
        has=page.get_by_role("link", name=f"#{request.pk}", exact=True))


def cells(found) -> list[str]:
    return [text.strip() for text in found.get_by_role("cell").all_inner_texts()]


def state(request: Request) -> str:
    request.refresh_from_db()
    return request.state


def management(enabled: bool) -> None:
    SiteState.objects.filter(pk=1).update(management_enabled=enabled)


def test_a_member_releases_and_cancels_their_requests_from_the_console(visit, demo, bob):
    running = submit(bob, "dev", "half")
    management(False)  # what is submitted now waits
    waiting = submit(bob, "dev", "2xgpu")
    page = visit(bob, "/requests/")
    expect(page.get_by_role("status")).to_have_text("Live")
    expect(row(page, running)).to_contain_text("allocated")
    expect(row(page, running)).to_contain_text("0.5 gpu · 8000 mcpu")
    expect(row(page, waiting)).to_contain_text("pending")
    expect(row(page, waiting)).to_contain_text("ManagementDisabled")
    expect(row(page, waiting).get_by_role("button", name="Release")).to_be_hidden()
    screenshot(page, "requests")

    row(page, running).get_by_role("button", name="Release").click()
    confirm(page, f"Release request #{running.pk}?", "Keep it")
    assert state(running) == "allocated"
    before = page.get_by_role("table", name="Requests").bounding_box()
    row(page, running).get_by_role("button", name="Release").click()
    confirm(page, f"Release request #{running.pk}?", "Release")
    expect(row(page, running)).to_contain_text("released")
    expect(row(page, running).get_by_role("button", name="Cancel")).to_be_hidden()
    assert page.get_by_role("table", name="Requests").bounding_box() == before  # nothing moved
    assert state(running) == "released"

    row(page, waiting).get_by_role("button", name="Cancel").click()
    confirm(page, f"Cancel request #{waiting.pk}?", "Cancel request")
    expect(row(page, waiting)).to_contain_text("cancelled")
    expect(row(page, waiting)).to_contain_text("CancelledByUser")
    assert state(waiting) == "cancelled"


def test_the_page_of_an_allocated_request_says_how_release_and_cancel_differ(visit, demo, bob):
    running = submit(bob, "dev", "half")
    page = visit(bob, f"/requests/{running.pk}/")
    expect(page.get_by_role("status")).to_have_text("Live")
    actions = page.locator(".page-actions")

    expect(actions).to_contain_text("Release when its job is done; Cancel to withdraw work that should not go on.")
    # Preemptible with max_retries 0, the defaults: the page says what a preemption would do (decision 117).
    expect(page.locator("#notices")).to_contain_text("Warning: it is preemptible with max_retries 0")
    expect(actions.get_by_role("button", name="Release")).to_be_visible()
    expect(actions.get_by_role("button", name="Cancel")).to_be_visible()

    release(running)
    expect(page.get_by_role("heading", level=1)).to_contain_text("released")
    expect(actions.get_by_text("Release when its job is done")).to_be_hidden()


def test_an_action_the_api_refuses_shows_its_message(visit, demo, bob):
    running = submit(bob, "dev", "half")
    page = visit(bob, "/requests/")
    expect(page.get_by_role("status")).to_have_text("Live")
    running.owner = User.objects.create_user("dora")  # it is no longer bob's: the API answers 404
    running.save()

    row(page, running).get_by_role("button", name="Cancel").click()
    confirm(page, f"Cancel request #{running.pk}?", "Cancel request")

    expect(page.get_by_role("alert")).to_have_text(
        f"Request #{running.pk} was not cancelled: there is no request {running.pk}")
    expect(row(page, running)).to_contain_text("allocated")  # as it is stored


def test_a_row_follows_the_stream(visit, demo, bob):
    management(False)
    waiting = submit(bob, "dev", "half")
    page = visit(bob, "/requests/")
    expect(page.get_by_role("status")).to_have_text("Live")
    expect(row(page, waiting)).to_contain_text("pending")

    management(True)
    reconcile_pass()

    expect(row(page, waiting)).to_contain_text("allocated")
    expect(row(page, waiting)).to_contain_text("Granted")
    expect(row(page, waiting)).to_contain_text("a100")

    newer = submit(bob, "dev", "half")  # said above the rows, not slipped in under the reader's eyes
    expect(page.get_by_text("1 newer request since this page was loaded.")).to_be_visible()
    expect(row(page, newer)).to_have_count(0)
    page.get_by_role("button", name="Show them").click()
    expect(row(page, newer)).to_contain_text("allocated")


def test_the_history_of_a_preempted_and_requeued_request_follows_on_its_page(visit, alice, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 30}
    config_provision_document(document=PREEMPTIBLE, author=alice, comment="preemption")
    low = submit(bob, "low", "one", max_retries=1, name="nightly-eval", labels={"team": "dev", "run": "42"})
    page = visit(bob, f"/requests/{low.pk}/")
    expect(page.get_by_role("status")).to_have_text("Live")
    history = page.get_by_role("table", name=f"History of request {low.pk}")
    expect(history.get_by_role("row")).to_have_count(3)  # the head, Submitted, Granted
    expect(page.get_by_role("heading", level=1)).to_contain_text("allocated")
    expect(page.get_by_role("region", name="Details")).to_contain_text("team=dev")

    high = submit(bob, "high", "one")  # low is asked to stop for it

    expect(page.get_by_role("heading", level=1)).to_contain_text("preempting")
    expect(history.get_by_role("row")).to_have_count(4)
    expect(history.get_by_role("row").nth(3)).to_contain_text(f"preempted by request {high.pk} on pool p")
    expect(page.locator('[data-field="preempted_by"]')).to_have_text(f"#{high.pk}")
    why = page.get_by_role("region", name="Why it waits")
    expect(why.get_by_role("heading", name="Why it is preempted")).to_be_visible()
    expect(why).to_contain_text(f"request #{high.pk}")
    expect(why.locator("time[data-countdown]")).to_have_text(re.compile(r"^in (30|[12]?\d) s$"))
    expect(why.locator(".grace")).to_have_text(re.compile(r"^Grace ends at \d\d:\d\d:\d\d UTC, in (30|[12]?\d) s\.$"))

    with mock.patch("django.utils.timezone.now", return_value=timezone.now() + timedelta(seconds=31)):
        reconcile_pass()  # the grace is over: low is evicted and queued again as attempt 2

    expect(history.get_by_role("row")).to_have_count(5)
    expect(page.get_by_role("heading", level=1)).to_contain_text("pending")
    expect(page.locator('[data-field="attempt"]')).to_have_text("2")
    assert cells(history.get_by_role("row").nth(4))[1:] == [
        "pending", "PreemptedByPriority", "not released within the grace period; queued again (attempt 2)", "2", "—"]
    expect(why.get_by_role("heading", name="Why it waits")).to_be_visible()
    expect(why).to_contain_text("1 in the order the next pass serves, waiting for p")

    release(high)  # low is granted again
    expect(history.get_by_role("row")).to_have_count(6)
    expect(page.get_by_role("heading", level=1)).to_contain_text("allocated")
    states = history.locator("tbody tr td:nth-child(2)").all_inner_texts()
    assert states == ["pending", "allocated", "preempting", "pending", "allocated"]
    expect(page.locator('[data-field="where"]')).to_have_text("p")
    expect(why).to_be_hidden()  # it no longer waits
    screenshot(page, "request")


def test_a_member_does_not_see_another_users_request(visit, demo, alice, bob):
    theirs = submit(alice, "research", "half")
    page = visit(bob, f"/requests/{theirs.pk}/")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_text(f"There is no request {theirs.pk}")).to_be_visible()

    page.goto("/requests/")
    expect(page.get_by_role("table", name="Requests")).to_have_count(0)
    expect(page.get_by_role("heading", name="You have no requests yet")).to_be_visible()
    expect(page.get_by_role("link", name="Create a token")).to_be_visible()


def test_bad_filter_values_show_a_message(visit, demo, alice, bob):
    submit(bob, "dev", "half")
    page = visit(bob, "/requests/?state=bogus")
    expect(page.get_by_role("alert")).to_contain_text("'bogus' is not a state: use pending, allocated")
    page.goto("/requests/?policy=no%20such")
    expect(page.get_by_role("alert")).to_contain_text("policy is not a valid name")
    page.goto("/requests/?owner=alice")  # members see only their own requests
    expect(page.get_by_text("Only administrators filter by owner")).to_be_visible()
    expect(page.get_by_role("table", name="Requests").get_by_role("row")).to_have_count(2)
    screenshot_filters = visit(alice, "/requests/?state=bogus&pool=a100")
    expect(screenshot_filters.get_by_role("alert")).to_be_visible()
    expect(screenshot_filters.get_by_role("search", name="Filter requests").get_by_label("Pool")).to_have_value("a100")


def test_an_admin_filters_everyones_requests(visit, demo, alice, bob):
    mine = submit(alice, "research", "2xgpu")
    bobs = [submit(bob, "dev", "half") for _ in range(2)]
    page = visit(alice, "/requests/")
    table = page.get_by_role("table", name="Requests")
    expect(table.get_by_role("row")).to_have_count(4)
    ids = table.locator("tbody .request-id").all_inner_texts()
    assert ids == [f"#{r.pk}" for r in sorted([mine, *bobs], key=lambda r: -r.pk)]  # newest first

    filters = page.get_by_role("search", name="Filter requests")
    filters.get_by_label("Owner").fill("bob")
    filters.get_by_label("Policy").select_option("dev")
    filters.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"owner=bob"))
    expect(table.get_by_role("row")).to_have_count(3)
    expect(table).not_to_contain_text("research")

    filters.get_by_label("State").select_option("released")
    filters.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("heading", name="No request matches these filters")).to_be_visible()
    page.get_by_role("link", name="Clear filters").first.click()
    expect(table.get_by_role("row")).to_have_count(4)
