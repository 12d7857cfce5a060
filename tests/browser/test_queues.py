"""The live queues (/queues/, /queues/<pool>/): a request appears in "Pending for <pool>" and moves
to "Running on <pool>" without reload; the live indicator across a server restart; privacy as the
API's; "Why it waits" with its reason and what is ahead; a preempting request's preemptor and grace."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client
from playwright.sync_api import expect
from rest_framework.test import APIClient

from poolweb.models import Request
from tests.browser.conftest import VIEWPORT, screenshot
from tests.browser.steps import submit
from tests.live_server import LiveServer
from tests.poolweb import processes


COUNTDOWN = re.compile(r"^in [1-5]?[0-9] s$")  # the server's grace is 30 s


def release(user: User, request: Request) -> None:
    client = APIClient()
    client.force_authenticate(user)
    assert client.post(f"/api/v1/requests/{request.id}/release").status_code == 200


def fill_the_pools(alice: User) -> Request:
    """h100 full with research's 8xgpu (returned), a100 with dev's reserved 4 gpu: a dev request
    then waits and preempts nobody (research's priority is higher, dev is beyond its share)."""
    whole = submit(alice, "research", "8xgpu")
    for _ in range(2):
        submit(alice, "dev", "2xgpu")  # on a100, h100 being full
    return whole


def pending(page, pool: str = "h100"):
    return page.get_by_role("table", name=f"Pending for {pool}", exact=True)


def running(page, pool: str = "h100"):
    return page.get_by_role("table", name=f"Running on {pool}", exact=True)


def row(table, request: Request):
    return table.locator(f'tbody tr[data-id="{request.id}"]')


@pytest.fixture
def rita(transactional_db) -> User:
    user = User.objects.create_user("rita", "rita@example.com")
    user.groups.add(Group.objects.get_or_create(name="research")[0])
    return user


_RECORD_FRESH = """() => {
  window.freshRows = new Set();
  const note = (node) => {
    if (node.matches?.("tr.is-fresh")) window.freshRows.add(node.dataset.id);
    node.querySelectorAll?.("tr.is-fresh").forEach((row) => window.freshRows.add(row.dataset.id));
  };
  new MutationObserver((changes) => changes.forEach((change) => {
    note(change.target);
    change.addedNodes.forEach(note);
  })).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["class"]});
}"""


def test_a_request_waits_then_runs_without_reload(visit, demo):
    whole = fill_the_pools(demo.author)
    page = visit(demo.author, "/queues/h100/")
    expect(page.get_by_role("status")).to_have_text("Live")
    expect(row(running(page), whole)).to_contain_text("allocated")
    page.evaluate(_RECORD_FRESH)

    waiting = submit(demo.author, "dev", "2xgpu")  # through the API: h100 and a100 are full
    entry = row(pending(page), waiting)
    expect(entry).to_be_visible()
    expect(entry.locator('[data-cell="position"]')).to_have_text("1")
    expect(entry.locator('[data-cell="reason"]')).to_contain_text("pool h100 is short of 2 gpu")
    expect(entry.locator('[data-cell="resources"]')).to_have_text("2 gpu · 32000 mcpu")
    # It arrived live: highlighted a moment (1.5 s, which a loaded machine may spend before the
    # checks above are done: the page records every row it highlighted).
    assert str(waiting.id) in page.evaluate("[...window.freshRows]")
    expect(entry).not_to_have_class(re.compile("is-fresh"))
    screenshot(page, "queue")

    release(demo.author, whole)
    expect(row(running(page), waiting)).to_contain_text("allocated")
    expect(row(pending(page), waiting)).to_have_count(0)
    expect(row(running(page), whole)).to_have_count(0)
    shown = row(running(page), waiting).inner_text()
    page.reload()  # the row looks the same rendered by the server
    assert row(running(page), waiting).inner_text() == shown


def test_positions_renumber_in_place_when_the_head_is_granted(visit, demo):
    whole = fill_the_pools(demo.author)
    waiting = [submit(demo.author, "dev", "2xgpu") for _ in range(3)]
    page = visit(demo.author, "/queues/h100/")
    rows = pending(page).locator("tbody tr")
    expect(rows).to_have_count(3)
    page.evaluate("""() => { window.moved = 0; new MutationObserver((changes) => {
        for (const c of changes) window.moved += [...c.addedNodes].filter((n) => n.tagName === 'TR').length; })
        .observe(document.querySelector('table[data-table="pending"] tbody'), { childList: true }); }""")

    release(demo.author, whole)  # two run on h100; the third would pass dev's limit of 8 and moves up
    expect(rows).to_have_count(1)
    last = row(pending(page), waiting[-1])
    expect(last.locator('[data-cell="position"]')).to_have_text("1")
    expect(last.locator('[data-cell="reason"]')).to_contain_text("limit")
    assert page.evaluate("window.moved") == 0  # no row was taken out and put back


def test_a_heartbeat_reads_no_rows_again(visit, demo):
    whole = fill_the_pools(demo.author)
    page = visit(demo.author, "/queues/h100/")  # an admin's: its stream has every request.updated
    expect(page.get_by_role("status")).to_have_text("Live")
    reads: list[str] = []
    page.on("request", lambda request: reads.append(request.url) if "/rows/" in request.url else None)
    events: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda frame: events.append(frame)))
    page.reload()
    expect(page.get_by_role("status")).to_have_text("Live")

    client = APIClient()
    client.force_authenticate(demo.author)
    for _ in range(3):  # the lease renewed: nothing a queue row shows
        assert client.post(f"/api/v1/requests/{whole.id}/heartbeat").status_code == 200
    deadline = page.evaluate("Date.now()") + 10_000
    while sum(bool(re.search(rf'"id": ?{whole.id}\b', frame)) for frame in events) < 3:
        assert page.evaluate("Date.now()") < deadline, events
        page.wait_for_timeout(50)
    page.wait_for_timeout(500)  # many times the gathering of events before a re-read
    assert reads == []  # each request.updated was its row's, shown unchanged but for the lease

    waiting = submit(demo.author, "dev", "2xgpu")  # and the page still follows what does change
    expect(row(pending(page), waiting)).to_be_visible()
    assert reads


def test_the_overview_shows_every_pool_with_its_use_and_counts_live(visit, demo):
    submit(demo.author, "research", "2xgpu")
    page = visit(demo.author, "/queues/")
    h100 = page.get_by_role("region", name="Pool h100", exact=True)
    expect(h100.get_by_role("meter", name="gpu in use on h100")).to_have_attribute("aria-valuetext", "2 of 8 gpu in use")
    expect(h100.locator('.bar-row[data-key="gpu"] [data-free]')).to_have_text("6")
    expect(h100).to_contain_text("1 running")
    expect(page.get_by_role("status")).to_have_text("Live")

    submit(demo.author, "research", "2xgpu")
    expect(h100.get_by_role("meter", name="gpu in use on h100")).to_have_attribute("aria-valuetext", "4 of 8 gpu in use")
    expect(h100.locator('.bar-row[data-key="gpu"] [data-free]')).to_have_text("4")
    expect(h100).to_contain_text("2 running")
    screenshot(page, "queues")
    h100.get_by_role("link", name="Open queue of h100").click()
    expect(page).to_have_url(f"{page.url.split('/queues/')[0]}/queues/h100/")
    expect(running(page)).to_be_visible()


def test_an_unknown_pool_is_a_404_page(visit, demo):
    page = visit(demo.author, "/queues/nowhere/")
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    expect(page.get_by_text("There is no pool nowhere in the live configuration.")).to_be_visible()


def test_a_member_sees_their_own_names_and_others_anonymised(visit, demo, bob, rita):
    fill_the_pools(demo.author)
    theirs = submit(rita, "research", "2xgpu")
    Request.objects.filter(pk=theirs.pk).update(name="ritas-secret-run")
    mine = submit(bob, "dev", "2xgpu")
    Request.objects.filter(pk=mine.pk).update(name="bobs-run")
    page = visit(bob, "/queues/h100/")

    own = row(pending(page), mine)
    expect(own.locator('[data-cell="name"]')).to_have_text("bobs-run")
    expect(own.locator('[data-cell="owner"]')).to_have_text("bob")
    expect(own.locator('[data-cell="reason"]')).not_to_be_empty()
    other = row(pending(page), theirs)
    for cell in ("name", "owner", "reason"):
        expect(other.locator(f'[data-cell="{cell}"]')).to_have_text("private")
    expect(other.locator('[data-cell="policy"]')).to_have_text("research")
    expect(page.locator("body")).not_to_contain_text("ritas-secret-run")
    expect(page.locator("body")).not_to_contain_text("rita")
    # alice's running requests (research, not bob's team) are anonymised too
    expect(running(page).locator("tbody tr").first.locator('[data-cell="owner"]')).to_have_text("private")


def test_why_it_waits_shows_the_reason_the_position_and_what_is_ahead(visit, demo, bob):
    fill_the_pools(demo.author)
    first = submit(demo.author, "dev", "2xgpu")
    Request.objects.filter(pk=first.pk).update(name="ahead-of-bob")
    mine = submit(bob, "dev", "2xgpu")
    page = visit(bob, "/queues/h100/")
    button = page.get_by_role("button", name=f"Why request {mine.id} waits")
    button.focus()
    page.keyboard.press("Enter")  # by keyboard

    expect(button).to_have_attribute("aria-expanded", "true")
    panel = page.locator(f"#why-{mine.id}")
    expect(panel.get_by_role("heading", name="Why it waits")).to_be_visible()
    expect(panel).to_contain_text(Request.objects.get(pk=mine.pk).message)
    expect(panel).to_contain_text("2 in the order the next pass serves, waiting for h100")
    expect(panel).to_contain_text("1 request, needing 2 gpu · 32000 mcpu")
    expect(panel).to_contain_text("a later request may still go ahead of it: one of a higher priority (research")
    ahead = panel.get_by_role("table", name=f"Ahead of request {mine.id}")
    expect(ahead.locator("tbody tr")).to_have_count(1)
    expect(ahead).to_contain_text(f"#{first.id}")
    expect(ahead).to_contain_text("ahead-of-bob")  # dev is bob's team: shown whole
    screenshot(page, "why-it-waits")
    button.click()
    expect(panel).to_have_count(0)


def test_a_preempting_request_shows_its_preemptor_and_a_grace_countdown(visit, demo, bob):
    victim = submit(bob, "dev", "2xgpu")  # on h100
    assert victim.pool == "h100"
    preemptor = submit(demo.author, "research", "8xgpu")  # needs the whole h100: dev's priority is lower
    assert Request.objects.get(pk=victim.pk).state == "preempting"
    page = visit(bob, "/queues/h100/")

    entry = row(running(page), victim)
    expect(entry.locator('[data-cell="state"]')).to_contain_text(re.compile(r"preempting\s+grace ends in \d+ s"))
    countdown = entry.locator("time[data-countdown]")
    expect(countdown).to_have_text(COUNTDOWN)
    first = countdown.inner_text()
    page.wait_for_timeout(1200)
    assert countdown.inner_text() != first  # it counts down
    page.get_by_role("button", name=f"Why request {victim.id} is preempted").click()
    panel = page.locator(f"#why-{victim.id}")
    expect(panel.get_by_role("heading", name="Why it is preempted")).to_be_visible()
    expect(panel).to_contain_text(f"request #{preemptor.id}")
    expect(panel).to_contain_text("policy research, profile 8xgpu")
    expect(panel.locator("time[data-countdown]")).to_have_text(COUNTDOWN)


# --- the stream across a restart of the server -----------------------------------------------------

@pytest.fixture
def own_server(demo, tmp_path) -> Iterator[LiveServer]:
    """A server of this test's own, which the test stops and starts again on the same port."""
    with processes.live_server(tmp_path, web_only=True, POOLWEB_PASSES="inline", POOLWEB_EVENT_POLL_MS="20") as server:
        yield server


def test_the_indicator_shows_reconnecting_while_the_server_is_down_and_no_row_is_lost(browser, own_server, demo):
    whole = fill_the_pools(demo.author)
    first = submit(demo.author, "dev", "2xgpu")
    client = Client()
    client.force_login(demo.author)
    context = browser.new_context(viewport=VIEWPORT, base_url=own_server.url)
    context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": own_server.url,
                          "value": client.cookies[settings.SESSION_COOKIE_NAME].value}])
    try:
        page = context.new_page()
        page.goto("/queues/h100/")
        live = page.get_by_role("status")
        expect(live).to_have_text("Live")
        expect(row(pending(page), first)).to_be_visible()

        own_server.stop()
        expect(live).to_have_text("Reconnecting…")
        later = submit(demo.author, "dev", "2xgpu")  # while the page is cut off: it waits behind first
        release(demo.author, whole)  # both run now, on h100
        own_server.start()

        expect(live).to_have_text("Live", timeout=30_000)
        for granted in (first, later):
            expect(row(running(page), granted)).to_contain_text("allocated")
        expect(row(running(page), whole)).to_have_count(0)
        expect(pending(page).locator("tbody tr")).to_have_count(0)
    finally:
        context.close()


def test_r54_the_queue_and_the_request_page_say_when_a_request_starts(visit, demo):
    from datetime import timedelta

    from django.utils import timezone

    fill_the_pools(demo.author)
    first, second = submit(demo.author, "dev", "2xgpu"), submit(demo.author, "dev", "2xgpu")
    # No run limit and no history: the pass said "unknown"; then one as a pass with limits says it.
    assert Request.objects.get(pk=first.pk).eta_basis == "unknown"
    eta = (timezone.now() + timedelta(hours=1)).replace(second=0, microsecond=0)
    Request.objects.filter(pk=second.pk).update(eta=eta, eta_basis="run_limits")
    page = visit(demo.author, "/queues/h100/")
    expect(row(pending(page), first).locator('[data-cell="eta"]')).to_have_text("start unknown")
    when = f"{eta:%H:%M}" if eta.date() == timezone.now().date() else f"{eta:%Y-%m-%d %H:%M}"
    note = row(pending(page), second).get_by_role(
        "note", name=f"Estimated start: {when} UTC, from run limits, high confidence")
    expect(note).to_have_text(f"starts ≈ {when} UTC (run limits, high)")
    screenshot(page, "queue-starts")

    page = visit(demo.author, f"/requests/{second.id}/")
    expect(page.get_by_role("note", name=f"Estimated start: {when} UTC, from run limits, high confidence")).to_be_visible()
    screenshot(page, "request-starts")
    # Written by the page's script from the request object, it reads the same.
    shown = page.locator('[data-field="eta"]').inner_html()
    page.evaluate("""async (id) => {
        const { showRequest } = await import('/static/console/shared/request_view.js');
        const r = await (await fetch(`/api/v1/requests/${id}`, { credentials: 'same-origin' })).json();
        document.querySelector('[data-field="eta"]').replaceChildren();
        showRequest(document, r); }""", second.id)
    expect(page.locator('[data-field="eta"]')).to_have_text(f"starts ≈ {when} UTC (run limits, high)")
    assert page.locator('[data-field="eta"]').inner_html() == shown
