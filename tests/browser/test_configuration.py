"""The resource configuration page (/) in view mode: the demo's cards, the lines between them,
live usage, what a member sees, the first-run state and the notice of another provision."""

from __future__ import annotations

import re

from django.db import transaction
from playwright.sync_api import expect

from poolweb.services.demo import demo_document
from poolweb.services.config import config_provision_document
from poolweb.services.events import POOL_UPDATED, publish
from tests.browser.conftest import expect_items, screenshot
from tests.browser.steps import submit

EDITOR_BUTTONS = ("Open editor", "Add pool", "Add profile", "Add policy", "Save", "Validate", "Preview impact",
                  "Provision", "Reset", "Exit editor")


def line_ends(page, profile: str, pool: str) -> tuple[float, float, float, float]:
    d = page.locator(f'svg.lines path[data-profile="{profile}"][data-pool="{pool}"]').get_attribute("d")
    numbers = [float(n) for n in re.findall(r"-?[0-9.]+", d)]
    return numbers[0], numbers[1], numbers[-2], numbers[-1]


def box(page, role_name: str):
    board = page.locator("#board").bounding_box()
    found = page.get_by_role("region", name=role_name, exact=True).bounding_box()
    return {**found, "x": found["x"] - board["x"], "y": found["y"] - board["y"]}


# How many different tops the cards of each lane have.
LANE_TOPS = """() => [...document.querySelectorAll("#board .cards")].map(
  (lane) => new Set([...lane.children].map((card) => Math.round(card.getBoundingClientRect().top))).size)"""


def assert_line_joins(page, profile: str, pool: str) -> None:
    x1, y1, x2, y2 = line_ends(page, profile, pool)
    top, bottom = box(page, f"Pool {pool}"), box(page, f"Profile {profile}")
    assert abs(y1 - (top["y"] + top["height"])) < 2 and top["x"] <= x1 <= top["x"] + top["width"]
    assert abs(y2 - bottom["y"]) < 2 and bottom["x"] <= x2 <= bottom["x"] + bottom["width"]


def test_the_demo_shows_as_cards_joined_by_lines(visit, demo):
    submit(demo.author, "research", "2xgpu")  # on h100, its preferred pool
    for _ in range(3):
        submit(demo.author, "dev", "half")  # on a100
    page = visit(demo.author)

    for pool in ("h100", "a100"):
        expect(page.get_by_role("region", name=f"Pool {pool}", exact=True)).to_be_visible()
    h100 = page.get_by_role("region", name="Pool h100", exact=True)
    expect(h100.get_by_role("meter", name="gpu in use on h100")).to_have_attribute("aria-valuetext", "2 of 8 gpu in use")
    expect(h100.get_by_role("meter", name="mcpu in use on h100")).to_have_attribute(
        "aria-valuetext", "32000 of 256000 mcpu in use")
    a100 = page.get_by_role("region", name="Pool a100", exact=True)
    expect(a100.get_by_role("meter", name="gpu in use on a100")).to_have_attribute("aria-valuetext", "1.5 of 4 gpu in use")
    expect(a100).to_contain_text("3 running")
    expect_items(h100.get_by_role("list", name="Execution order of h100"), ["8xgpu", "2xgpu", "half", "job"])
    half = page.get_by_role("region", name="Profile half", exact=True)
    pools_of_half = half.get_by_role("list", name="Pools of half")
    expect_items(pools_of_half, ["a100", "h100"])
    expect(pools_of_half.get_by_role("listitem", name="a100")).to_contain_text("½ A100")
    expect_items(half.get_by_role("list", name="Policies of half"), ["dev", "research"])
    expect(half).to_contain_text("0 queued")
    expect(half).to_contain_text("3 running")
    expect(half).to_contain_text("0.5")  # as the API writes it, not 0.500
    research = page.get_by_role("region", name="Policy research", exact=True)
    expect(research.get_by_role("table", name="Quotas of research").get_by_role("row")).to_have_count(3)
    expect(research).to_contain_text("research")  # the group
    # At 1280 px each lane is one row, its cards top-aligned: the lines leave from a row's bottom.
    assert page.evaluate(LANE_TOPS) == [1, 1, 1]
    # One line per connection: half, 2xgpu and job on both pools, 8xgpu on h100.
    expect(page.locator("svg.lines path")).to_have_count(7)
    assert_line_joins(page, "half", "a100")
    assert_line_joins(page, "8xgpu", "h100")
    expect(page.get_by_role("status")).to_have_text("Live")
    screenshot(page, "configuration")


def test_the_lines_follow_the_cards_when_the_window_resizes(visit, demo):
    page = visit(demo.author)
    expect(page.locator("svg.lines path")).to_have_count(7)
    before = line_ends(page, "job", "h100")

    page.set_viewport_size({"width": 900, "height": 800})

    page.wait_for_function("([x]) => { const d = document.querySelector("
                           "'svg.lines path[data-profile=job][data-pool=h100]').getAttribute('d');"
                           " return parseFloat(d.split(' ')[1]) !== x; }", arg=[before[0]])
    assert line_ends(page, "job", "h100") != before
    assert_line_joins(page, "job", "h100")


# Every line's points, sampled along it, that fall inside a card other than the two it joins.
LINES_THROUGH_CARDS = """() => {
  const cards = [...document.querySelectorAll("#board .card")].map((card) => ({ card, box: card.getBoundingClientRect() }));
  const crossings = [];
  for (const path of document.querySelectorAll("svg.lines path")) {
    const own = [`[data-pool="${path.dataset.pool}"]`, `[data-profile="${path.dataset.profile}"]`];
    const matrix = path.getScreenCTM();
    for (let at = 0; at <= path.getTotalLength(); at += 4) {
      const point = path.getPointAtLength(at).matrixTransform(matrix);
      const hit = cards.find(({ card, box }) => !own.some((mine) => card.matches(mine))
        && point.x > box.left + 1 && point.x < box.right - 1 && point.y > box.top + 1 && point.y < box.bottom - 1);
      if (hit) { crossings.push(`${path.dataset.profile} → ${path.dataset.pool} crosses ${hit.card.getAttribute("aria-label")}`); break; }
    }
  }
  return crossings;
}"""


def test_lines_go_round_the_cards_when_they_wrap_into_rows(visit, demo):
    page = visit(demo.author)
    for width in (768, 1024, 1229):  # a tablet, a small laptop, 1536 px at 125 %
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # the lines are redrawn on the next frame
        expect(page.locator("svg.lines path")).to_have_count(7)
        assert page.evaluate(LINES_THROUGH_CARDS) == [], width


def test_usage_bars_follow_the_event_stream(visit, demo):
    page = visit(demo.author)
    expect(page.get_by_role("status")).to_have_text("Live")
    h100 = page.get_by_role("region", name="Pool h100", exact=True)

    with transaction.atomic():
        publish(POOL_UPDATED, {"name": "h100", "capacity": {"gpu": 8, "mcpu": 256000}, "used": {"gpu": 2.5, "mcpu": 8000},
                               "free": {"gpu": 5.5, "mcpu": 248000}, "overcommitted": {}, "held": {},
                               "pending": 3, "running": 2})

    gpu = h100.get_by_role("meter", name="gpu in use on h100")
    expect(gpu).to_have_attribute("aria-valuetext", "2.5 of 8 gpu in use")
    expect(h100.locator('.bar-row[data-key="gpu"]')).to_contain_text("2.5 / 8")
    assert gpu.locator(".bar-fill").evaluate("node => node.style.width") == "31%"
    expect(h100).to_contain_text("2 running")
    expect(h100).to_contain_text("3 pending")


def test_a_member_sees_the_configuration_read_only(visit, demo, bob):
    page = visit(bob)

    expect(page.get_by_role("region", name="Profile half", exact=True)).to_be_visible()
    for name in EDITOR_BUTTONS:
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("^(Edit|Delete|Move|Connect|Disconnect) "))).to_have_count(0)
    expect(page.get_by_role("link", name="Versions")).to_have_count(0)
    expect(page.get_by_role("switch", name="Resource management")).to_have_attribute("aria-disabled", "true")
    expect(page.locator("svg.lines path")).to_have_count(7)
    screenshot(page, "configuration-member")


def test_before_anything_is_provisioned_the_page_says_what_to_do(visit, alice, bob):
    page = visit(alice)
    expect(page.get_by_role("heading", name="No pools yet")).to_be_visible()
    expect(page.get_by_text("Open the editor and add your first pool")).to_be_visible()
    expect(page.get_by_role("button", name="Open editor")).to_be_visible()
    screenshot(page, "first-run")

    member = visit(bob)
    expect(member.get_by_text("An administrator has not set up any pools yet")).to_be_visible()


def test_a_version_provisioned_elsewhere_is_announced_with_a_reload(visit, demo):
    page = visit(demo.author)
    expect(page.get_by_role("status")).to_have_text("Live")
    document = demo_document()
    document["pools"][1]["capacity"] = {"gpu": 8}

    config_provision_document(document=document, author=demo.author, comment="a100 doubled")

    notice = page.locator("#provisioned-notice")
    expect(notice).to_contain_text("Version 2 was provisioned by alice (“a100 doubled”)")
    notice.get_by_role("button", name="Reload").click()
    expect(page.get_by_role("region", name="Pool a100", exact=True).get_by_role("meter")).to_have_attribute(
        "aria-valuetext", "0 of 8 gpu in use")


def test_after_a_drop_the_stream_resumes_without_losing_an_event(visit, demo):
    page = visit(demo.author)
    sockets, blocked = [], []

    def through(socket) -> None:  # the page's stream, passed on to the server unless we cut it
        sockets.append(socket)
        if blocked:
            socket.close()
        else:
            socket.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/events/"), through)
    page.reload()
    live = page.get_by_role("status")
    expect(live).to_have_text("Live")

    blocked.append(True)
    sockets[-1].close()
    expect(live).to_have_text("Reconnecting…")
    with transaction.atomic():  # while the page is cut off
        publish(POOL_UPDATED, {"name": "a100", "capacity": {"gpu": 4}, "used": {"gpu": 3}, "free": {"gpu": 1},
                               "overcommitted": {}, "held": {}, "pending": 0, "running": 3})
    blocked.clear()

    expect(live).to_have_text("Live", timeout=20_000)
    expect(page.get_by_role("region", name="Pool a100", exact=True).get_by_role("meter")).to_have_attribute(
        "aria-valuetext", "3 of 4 gpu in use")
    # The first connection already starts where the page was rendered, the second where it left off.
    assert all("resume_from=" in socket.url for socket in sockets)
