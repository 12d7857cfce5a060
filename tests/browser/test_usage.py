"""The usage page: the chart is an image named by its heading whose text alternative is its
figures' table; the key-hours table under it; the period's form; linked from the navigation."""

from __future__ import annotations

from urllib.parse import urlencode

from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.poolweb.usage.histories import SINCE, UNTIL, the_day


def test_a_person_reads_the_gpu_hours_of_a_day_from_the_chart_and_the_tables(visit, alice, bob):
    the_day(alice, bob)
    page = visit(alice, "/usage/?" + urlencode({"since": SINCE, "until": UNTIL}))

    chart = page.get_by_role("img", name="GPU-hours per hour and policy")
    expect(chart).to_be_visible()
    expect(chart.locator("rect")).to_have_count(12)
    table = page.get_by_role("table", name="Key-hours by policy")
    expect(table.get_by_role("row", name="dev gpu 37.000 27.000 10.000")).to_be_visible()
    expect(page.get_by_role("table", name="Reserved and left idle").get_by_role(
        "row", name="dev all pools gpu 30.000 3.000")).to_be_visible()
    screenshot(page, "usage")

    page.get_by_text("The chart's figures", exact=True).click()
    figures = page.get_by_role("table", name="GPU-hours per hour and policy")
    expect(figures.get_by_role("row", name="2026-11-01 09:00 2.000 0.500")).to_be_visible()

    page.get_by_role("combobox", name="By").select_option("user")
    page.get_by_role("button", name="Show").click()
    expect(page.get_by_role("table", name="Key-hours by user").get_by_role(
        "row", name="bob gpu 22.000 14.000 8.000")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Usage")).to_have_attribute(
        "aria-current", "page")


def test_a_bad_period_says_which_field(visit, alice):
    page = visit(alice, "/usage/?since=2026-11-02&until=2026-11-01")

    expect(page.get_by_role("alert")).to_contain_text("until: until must be after since")
    expect(page.get_by_role("textbox", name="Until")).to_have_attribute("aria-invalid", "true")
