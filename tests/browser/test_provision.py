"""Preview impact and Provision from the editor: what provisioning would do to current requests, a
version with its comment under Versions, a stale draft refused until confirmed — and the whole
demo configuration rebuilt by hand from an empty install (docs/console.md)."""

from __future__ import annotations

import re

from django.contrib.auth.models import Group
from playwright.sync_api import expect

from poolweb.services.demo import DEMO_GROUPS, demo_document
from poolweb.models import ConfigVersion, Request
from poolweb.selectors.versions import config_live_document
from poolweb.services.config import config_provision_document
from reconcile.document import parse_document
from reconcile.document_writer import to_document
from tests.browser.conftest import expect_items, screenshot
from tests.browser.steps import (
    add_policy, add_pool, add_profile, button, card, connect, dialog, move, open_editor, say, submit,
)


def h100_widened(page):
    """``page`` with the editor open and h100 widened from 8 to 16 GPUs in the draft."""
    open_editor(page)
    card(page, "Pool h100").get_by_role("button", name="Edit h100").click()
    form = dialog(page, "Edit pool h100")
    form.get_by_label("gpu", exact=True).fill("16")
    form.get_by_role("button", name="Save").click()
    expect(card(page, "Pool h100")).to_contain_text("Changed: capacity")
    return page


def provision_dialog(page):
    """The Provision dialog, opened."""
    button(page, "Provision").click()
    return dialog(page, "Provision")


def test_preview_shows_what_provisioning_would_do(visit, demo):
    # h100 is full with a whole-box job, a100 with two 2-GPU ones; a third waits.
    submit(demo.author, "research", "8xgpu")
    for _ in range(3):
        waiting = submit(demo.author, "dev", "2xgpu")
    assert [r.state for r in Request.objects.order_by("id")] == ["allocated", "allocated", "allocated", "pending"]
    page = h100_widened(visit(demo.author))

    button(page, "Preview impact").click()

    preview = dialog(page, "Preview")
    expect(preview.get_by_role("heading", name=re.compile("^Granted"))).to_have_text("Granted — 1 request would start running")
    granted = preview.get_by_role("table").first
    expect(granted).to_contain_text(f"#{waiting.id}")
    expect(granted).to_contain_text("alice")
    usage = preview.locator(".usage-table tr.is-changed")
    expect(usage.filter(has_text="dev").first).to_contain_text(re.compile(r"4 used.*6 used", re.S))
    screenshot(page, "preview")
    preview.get_by_role("button", name="Close").click()
    expect(preview).to_be_hidden()
    assert Request.objects.get(pk=waiting.id).state == "pending"  # a preview changes nothing


def test_provision_with_a_comment_shows_under_versions(visit, demo):
    page = h100_widened(visit(demo.author))

    form = provision_dialog(page)
    expect(form.get_by_role("region", name="Preview")).to_contain_text("Granted")
    form.get_by_label("Comment").fill("two more H100 boxes")
    screenshot(page, "provision")
    form.get_by_role("button", name="Confirm provision").click()

    expect(page.locator(".notice.success")).to_have_text("Version 2 is provisioned and live.")
    expect(page.locator(".notice.success")).to_be_focused()  # not the page's body
    expect(page.locator("#version-meta")).to_contain_text("Version 2")
    expect(card(page, "Pool h100").get_by_role("meter", name="gpu in use on h100")).to_have_attribute(
        "aria-valuetext", "0 of 16 gpu in use")
    page.get_by_role("link", name="Versions").click()
    row = page.get_by_role("row", name=re.compile("Version 2"))
    expect(row).to_contain_text("alice")
    expect(row).to_contain_text("two more H100 boxes")
    expect(row).to_contain_text("changed pool h100")


def test_the_comment_and_buttons_stay_in_sight_and_a_long_preview_says_there_is_more(visit, demo):
    page = visit(demo.author)
    page.set_viewport_size({"width": 1024, "height": 600})
    h100_widened(page)

    form = provision_dialog(page)
    expect(form.get_by_role("region", name="Preview")).to_contain_text("Usage before and after")

    expect(form.get_by_text("More below: scroll the preview.")).to_be_visible()
    for control in (form.get_by_label("Comment"), form.get_by_role("button", name="Confirm provision")):
        expect(control).to_be_in_viewport(ratio=1)
    form.get_by_role("region", name="Preview").evaluate("body => body.scrollTo(0, body.scrollHeight)")
    expect(form.get_by_text("More below: scroll the preview.")).to_be_hidden()


def test_a_draft_equal_to_the_live_version_is_not_provisioned_and_the_editor_says_so(visit, demo):
    page = visit(demo.author)
    open_editor(page)

    provision_dialog(page).get_by_role("button", name="Confirm provision").click()

    expect(say(page)).to_have_text("Nothing provisioned: the draft configures exactly what version 1 does.")
    expect(say(page)).to_be_focused()
    assert ConfigVersion.objects.count() == 1


def test_a_draft_made_before_another_provision_asks_before_it_replaces_it(visit, demo):
    page = h100_widened(visit(demo.author))
    button(page, "Save").click()
    expect(say(page)).to_have_text("Draft saved.")
    elsewhere = demo_document()
    elsewhere["pools"][1]["capacity"] = {"gpu": 8}
    config_provision_document(document=elsewhere, author=demo.author, comment="a100 doubled elsewhere")
    expect(page.locator("#provisioned-notice")).to_contain_text("Version 2 was provisioned by alice")

    form = provision_dialog(page)
    form.get_by_role("button", name="Confirm provision").click()

    stale = form.locator("[data-stale]")
    expect(stale).to_contain_text("This draft was made from version 1, but version 2 is live now.")
    expect(stale).to_contain_text("pool a100 changed: capacity.gpu 4 → 8")
    assert ConfigVersion.objects.count() == 2
    form.get_by_role("button", name="Provision anyway").click()
    expect(page.locator(".notice.success")).to_have_text("Version 3 is provisioned and live.")
    assert config_live_document()["pools"][0]["capacity"] == {"gpu": 16, "mcpu": 256000}


def test_an_administrator_rebuilds_the_demo_by_hand_and_provisions_it(visit, alice):
    for name in DEMO_GROUPS:
        Group.objects.get_or_create(name=name)
    page = visit(alice)
    expect(page.get_by_role("heading", name="No pools yet")).to_be_visible()
    open_editor(page)

    add_pool(page, "h100", "8 × H100 80GB, 256 CPUs", gpu=8, mcpu=256000)
    add_pool(page, "a100", "4 × A100 40GB", gpu=4)
    add_policy(page, "research", "research", priority=10, description="the research team",
               quotas=(("*", "gpu", 6, 12), ("h100", "gpu", None, 8)))
    add_policy(page, "dev", "dev", description="the product team",
               quotas=(("*", "gpu", 4, 8), ("h100", "mcpu", None, 128000)))
    add_profile(page, "half", "half a GPU, for notebooks and small inference", ("research", "dev"), gpu=0.5, mcpu=8000)
    add_profile(page, "2xgpu", "two GPUs, for fine-tuning", ("research", "dev"), gpu=2, mcpu=32000)
    add_profile(page, "8xgpu", "a whole H100 box, for pre-training", ("research",), gpu=8, mcpu=128000)
    add_profile(page, "job", "a batch job that states its own gpu, mcpu and memory_mb", ("research", "dev"),
                dynamic=True, gpu=1, mcpu=4000)
    connect(page, "half", "a100", "½ A100")
    connect(page, "half", "h100", "½ H100")
    connect(page, "2xgpu", "h100", "2 × H100")
    connect(page, "2xgpu", "a100", "2 × A100")
    connect(page, "8xgpu", "h100", "8 × H100")
    connect(page, "job", "a100")
    connect(page, "job", "h100")
    for profile in ("half", "job"):
        move(page, f"Policies of {profile}", "dev", "up")
        expect_items(page.get_by_role("list", name=f"Policies of {profile}"), ["dev", "research"])
    expect_items(page.get_by_role("list", name="Execution order of h100"), ["2xgpu", "8xgpu", "half", "job"])
    move(page, "Execution order of h100", "8xgpu", "up")
    expect_items(page.get_by_role("list", name="Execution order of h100"), ["8xgpu", "2xgpu", "half", "job"])

    button(page, "Validate").click()
    # Valid; the warnings say the demo's groups have no members yet.
    expect(say(page)).to_have_text("The draft is valid (2 warnings): it can be provisioned.")
    expect(card(page, "Policy dev")).to_contain_text("group 'dev' of policy dev has no members yet")
    button(page, "Preview impact").click()
    expect(dialog(page, "Preview")).to_contain_text("No current request would be granted")
    dialog(page, "Preview").get_by_role("button", name="Close").click()
    form = provision_dialog(page)
    form.get_by_label("Comment").fill("the demo, by hand")
    form.get_by_role("button", name="Confirm provision").click()

    expect(page.locator(".notice.success")).to_have_text("Version 1 is provisioned and live.")
    expect(page.locator("svg.lines path")).to_have_count(7)
    built = parse_document(config_live_document()).config
    assert to_document(built) == to_document(parse_document(demo_document()).config)
    page.get_by_role("link", name="Versions").click()
    expect(page.get_by_role("row", name=re.compile("Version 1"))).to_contain_text("the demo, by hand")
