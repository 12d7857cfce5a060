"""The shell of every page: the navigation, the signed-in user, the management switch, and the
pages the console's part 2 fills in."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from poolweb.models import SiteState
from tests.browser.steps import confirm

NAVIGATION = ["Configuration", "Queues", "Policies", "Usage", "Requests", "Versions", "Audit", "Tokens"]


def management_enabled() -> bool:
    return SiteState.objects.get(pk=1).management_enabled


def test_every_page_has_the_navigation_and_the_user(visit, demo):
    page = visit(demo.author)
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation.get_by_role("link")).to_have_text(NAVIGATION)
    expect(navigation.get_by_role("link", name="Configuration")).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("banner")).to_contain_text("alice")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    for name, heading in [("Queues", "Queues"), ("Policies", "Policies"), ("Usage", "Usage"), ("Requests", "Requests"),
                          ("Tokens", "Tokens"), ("Versions", "Versions"), ("Audit", "Audit")]:
        navigation.get_by_role("link", name=name).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(heading)
        expect(navigation.get_by_role("link", name=name)).to_have_attribute("aria-current", "page")


def test_an_admin_switches_management_off_and_on_after_confirming(visit, demo):
    page = visit(demo.author)
    switch = page.get_by_role("switch", name="Resource management")
    expect(switch).to_have_attribute("aria-checked", "true")

    switch.click()
    confirm(page, "Disable resource management?", "Cancel")
    expect(switch).to_have_attribute("aria-checked", "true")
    banner = page.locator("#management-banner")
    expect(banner).to_be_hidden()
    switch.click()
    confirm(page, "Disable resource management?", "Disable")
    expect(switch).to_have_attribute("aria-checked", "false")
    assert management_enabled() is False
    expect(switch).to_be_focused()  # back where the person was
    expect(banner).to_have_text(re.compile(r"^\s*Resource management is off\.\s+Turned off by alice just now\."))

    page.reload()
    expect(switch).to_have_attribute("aria-checked", "false")
    expect(banner).to_contain_text("Resource management is off. Turned off by alice just now.")
    for path in ("/queues/", "/policies/", "/requests/", "/versions/", "/account/tokens/"):
        page.goto(path)
        expect(banner).to_contain_text("Turned off by alice")
    switch.click()
    confirm(page, "Enable resource management?", "Enable")
    expect(switch).to_have_attribute("aria-checked", "true")
    expect(banner).to_be_hidden()
    assert management_enabled() is True


def test_a_member_sees_the_switch_change_but_cannot_flip_it(visit, demo, bob):
    page = visit(bob)
    switch = page.get_by_role("switch", name="Resource management")
    expect(switch).to_have_attribute("aria-disabled", "true")
    expect(page.get_by_role("status")).to_have_text("Live")

    switch.click(force=True)  # Playwright would refuse an aria-disabled control; a person could still click it
    expect(page.get_by_role("dialog")).to_have_count(0)

    admin = visit(demo.author)
    admin.get_by_role("switch", name="Resource management").click()
    confirm(admin, "Disable resource management?", "Disable")
    expect(switch).to_have_attribute("aria-checked", "false")  # from management.changed on bob's stream
    expect(page.locator("#management-banner")).to_contain_text("Turned off by alice just now.")


def test_the_favicon_is_the_logo(visit, demo):
    page = visit(demo.author)
    answer = page.goto("/favicon.ico")
    assert answer.ok and answer.headers["content-type"].startswith("image/svg+xml")


def test_no_page_scrolls_sideways_from_768_px_up_and_the_header_keeps_every_link(visit, demo):
    page = visit(demo.author)
    for width in (768, 820, 1024, 1229):
        page.set_viewport_size({"width": width, "height": 800})
        for path in ("/", "/queues/", "/queues/h100/", "/policies/", "/requests/", "/versions/", "/versions/1/",
                     "/account/tokens/"):
            page.goto(path)
            wider = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert wider == 0, f"{path} at {width} px scrolls sideways by {wider} px"
        for link in page.get_by_role("navigation", name="Main").get_by_role("link").all():
            expect(link).to_be_in_viewport(ratio=0.9)  # its underline sits on the border below


def test_a_printed_page_leaves_out_the_controls(visit, demo):
    page = visit(demo.author)
    page.emulate_media(media="print")
    expect(page.get_by_role("button", name="Open editor")).to_be_hidden()
    expect(page.get_by_role("switch", name="Resource management")).to_be_hidden()
    expect(page.get_by_role("region", name="Pool h100", exact=True)).to_be_visible()
