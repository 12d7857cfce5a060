"""Version history: the list with a one-line summary each, one version's document, the diff
between two versions field by field, and Restore into draft."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from poolweb.services.demo import demo_document
from poolweb.models import Draft
from poolweb.services.config import config_provision_document
from tests.browser.conftest import screenshot
from tests.browser.steps import button, card, confirm, say


@pytest.fixture
def two_versions(demo):
    """Version 2: h100 doubled, a new l4 pool, 8xgpu's connection renamed, dev without its mcpu quota."""
    document = demo_document()
    document["pools"][0]["capacity"]["gpu"] = 16
    document["pools"].append({"name": "l4", "description": "2 × L4", "capacity": {"gpu": 2}})
    document["profiles"][2]["connections"][0]["name"] = "whole H100"
    document["policies"][1]["quotas"].pop()
    return config_provision_document(document=document, author=demo.author, comment="more and different")


def test_the_list_shows_each_version_with_what_it_changed(visit, two_versions):
    page = visit(two_versions.author, "/versions/")

    rows = page.get_by_role("table", name="Provisioned versions").get_by_role("row")
    expect(rows).to_have_count(3)
    expect(rows.nth(1)).to_contain_text(re.compile(r"Version 2\s*live"))
    expect(rows.nth(1)).to_contain_text("more and different")
    expect(rows.nth(1)).to_contain_text("added pool l4; changed pool h100, profile 8xgpu and policy dev")
    expect(rows.nth(2)).to_contain_text("demo configuration")
    expect(rows.nth(2)).to_contain_text("added pools h100, a100, 4 profiles and policies research, dev")
    screenshot(page, "versions")


def test_one_version_shows_its_configuration(visit, two_versions):
    page = visit(two_versions.author, "/versions/")
    page.get_by_role("link", name="Version 1", exact=True).click()

    expect(page.get_by_role("heading", name="Version 1", level=1)).to_be_visible()
    expect(card(page, "Pool h100").get_by_label("Capacity of h100")).to_contain_text("gpu8")
    expect(card(page, "Pool l4")).to_have_count(0)
    expect(page.locator("svg.lines path")).to_have_count(7)
    page.get_by_text("The document (JSON)").click()
    expect(page.locator("details.document pre")).to_contain_text('"name": "h100"')
    screenshot(page, "version")


def test_two_versions_are_compared_field_by_field(visit, two_versions):
    page = visit(two_versions.author, "/versions/")
    compare = page.get_by_role("form", name="Compare versions")
    compare.get_by_label("From version").select_option("1")
    compare.get_by_label("To version").select_option("2")
    compare.get_by_role("button", name="Compare").click()

    expect(page).to_have_url(re.compile("/versions/1/diff/2/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Changes from version 1 to version 2")
    h100 = page.get_by_role("article", name="Pool h100 changed")
    expect(h100.get_by_role("row", name=re.compile("capacity.gpu"))).to_have_text(re.compile(r"capacity\.gpu\s*8\s*16"))
    expect(page.get_by_role("article", name="Pool l4 added")).to_contain_text("2 × L4")
    connection = page.get_by_role("article", name="Profile 8xgpu changed").get_by_role("row", name=re.compile("connections"))
    expect(connection).to_have_text(re.compile(r"connections\[h100\]\.name\s*'8 × H100'\s*'whole H100'"))
    expect(page.get_by_role("article", name="Policy dev changed")).to_contain_text("quotas[h100/mcpu].limit")
    screenshot(page, "diff")

    page.get_by_role("link", name="Swap direction").click()
    removed = page.get_by_role("article", name="Pool l4 removed")
    expect(removed).to_be_visible()
    expect_a_pill(removed.locator(".mark", has_text="Removed"))


def expect_a_pill(mark) -> None:
    """A mark is one small line with its word inside it (not a box styled as a section)."""
    expect(mark).to_be_visible()
    box = mark.bounding_box()
    assert box is not None and box["height"] <= 24, box
    assert mark.evaluate("m => m.scrollHeight <= m.clientHeight && getComputedStyle(m).paddingTop === '0px'")


def test_restore_puts_an_old_version_into_the_draft(visit, two_versions):
    page = visit(two_versions.author, "/versions/1/")

    button(page, "Restore into draft").click()

    expect(say(page)).to_contain_text("Editing the saved draft made from version 2")
    expect(card(page, "Pool h100")).to_contain_text("Changed: capacity")
    removed = page.get_by_role("region", name="Removed in this draft")
    expect(removed).to_contain_text("pool l4")
    expect_a_pill(removed.locator(".mark", has_text="Removed"))
    assert Draft.objects.get().base_version == 2

    page.goto("/versions/2/")
    button(page, "Restore into draft").click()
    confirm(page, "Replace the saved draft?", "Restore")
    expect(say(page)).to_contain_text("Editing the saved draft made from version 2")
    expect(page.get_by_text("Changed:")).to_have_count(0)
