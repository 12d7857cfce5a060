"""Editor mode of the resource configuration page: add, edit and delete each kind; connect and
disconnect; the three orders by keyboard and by drag; save and find the draft again; errors at
their cards; a failed save that loses nothing; the unsaved-changes prompts; reset."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from poolweb.models import Draft
from tests.browser.conftest import expect_items, item_names, screenshot
from tests.browser.steps import (
    add_policy, add_pool, add_profile, button, card, confirm, connect, dialog, move, open_editor, save, say, settled,
)


@pytest.fixture
def page(visit, demo):
    """The demo's configuration page, signed in as alice, in editor mode."""
    page = visit(demo.author)
    open_editor(page)
    return page


def saved_draft() -> dict | None:
    draft = Draft.objects.filter(pk=1).first()
    return draft.document if draft else None


def test_a_pool_is_added_edited_and_deleted(page):

    add_pool(page, "l4", "2 × L4", gpu=2, mcpu=64000)
    l4 = card(page, "Pool l4")
    expect(l4).to_contain_text("Added")
    expect(l4.get_by_label("Capacity of l4")).to_contain_text("mcpu64000")
    expect(page.locator("#draft-state")).to_have_text("Unsaved changes")

    l4.get_by_role("button", name="Edit l4").click()
    form = dialog(page, "Edit pool l4")
    expect(form.get_by_label("gpu", exact=True)).to_have_value("2")
    form.get_by_label("gpu", exact=True).fill("4.5")
    form.get_by_role("button", name="Remove mcpu").click()
    form.get_by_role("button", name="Save").click()
    expect(l4.get_by_label("Capacity of l4")).to_have_text(re.compile(r"^\s*gpu\s*4\.5\s*$"))
    expect(page.get_by_role("button", name="Edit l4")).to_be_focused()

    l4.get_by_role("button", name="Delete l4").click()
    confirm(page, "Delete pool l4?", "Delete")
    expect(card(page, "Pool l4")).to_have_count(0)
    expect(button(page, "Add pool")).to_be_focused()
    assert saved_draft() is None  # nothing is stored until Save


def test_a_profile_is_added_connected_renamed_disconnected_and_deleted(page):

    add_profile(page, "4xgpu", "four GPUs", policies=("research",), gpu=4)
    profile = card(page, "Profile 4xgpu")
    expect(profile).to_contain_text("Not connected to any pool")
    connect(page, "4xgpu", "h100", "4 × H100")
    expect(profile.get_by_role("listitem", name="h100")).to_contain_text("4 × H100")
    expect(page.locator('svg.lines path[data-profile="4xgpu"][data-pool="h100"]')).to_have_count(1)
    assert item_names(page.get_by_role("list", name="Execution order of h100"))[-1] == "4xgpu"
    expect_items(profile.get_by_role("list", name="Policies of 4xgpu"), ["research"])

    profile.get_by_role("button", name="Edit 4xgpu").click()
    form = dialog(page, "Edit profile 4xgpu")
    form.get_by_label("Name", exact=True).fill("quad")
    form.get_by_role("checkbox", name="dev").check()
    form.get_by_role("button", name="Save").click()
    quad = card(page, "Profile quad")
    expect_items(quad.get_by_role("list", name="Policies of quad"), ["research", "dev"])
    assert "quad" in item_names(page.get_by_role("list", name="Execution order of h100"))

    quad.get_by_role("button", name="Disconnect 4 × H100").click()
    expect(quad).to_contain_text("Not connected to any pool")
    expect(quad.get_by_role("button", name="Connect quad")).to_be_focused()
    expect(page.locator('svg.lines path[data-profile="quad"]')).to_have_count(0)
    assert "quad" not in item_names(page.get_by_role("list", name="Execution order of h100"))

    quad.get_by_role("button", name="Delete quad").click()
    confirm(page, "Delete profile quad?", "Delete")
    expect(card(page, "Profile quad")).to_have_count(0)


def test_a_policy_with_quotas_is_added_edited_and_deleted(page):

    add_policy(page, "ops", "dev", priority=5, quotas=(("h100", "gpu", 2, 4), ("*", "gpu", None, 6)))
    ops = card(page, "Policy ops")
    rows = ops.get_by_role("table", name="Quotas of ops").get_by_role("row")
    expect(rows).to_have_text([re.compile("Scope"), re.compile(r"h100\s*gpu\s*2\s*4"), re.compile(r"all pools\s*gpu\s*—\s*6")])
    expect(ops).to_contain_text("Priority5")

    ops.get_by_role("button", name="Edit ops").click()
    form = dialog(page, "Edit policy ops")
    expect(form.get_by_label("Limit of quota 1")).to_have_value("4")
    form.get_by_label("Limit of quota 1").fill("8")
    form.get_by_role("button", name="Remove quota 2").click()
    form.get_by_role("button", name="Save").click()
    expect(ops.get_by_role("table", name="Quotas of ops").get_by_role("row")).to_have_count(2)
    expect(ops.get_by_role("row").nth(1)).to_contain_text("8")

    # A policy used by a profile leaves its rank when deleted.
    card(page, "Policy dev").get_by_role("button", name="Delete dev").click()
    expect(dialog(page, "Delete policy dev?")).to_contain_text("its place in the policy rank of half, 2xgpu, job")
    confirm(page, "Delete policy dev?", "Delete")
    expect_items(page.get_by_role("list", name="Policies of half"), ["research"])


def test_a_policy_states_its_time_rules_in_the_policy_form(page):
    card(page, "Policy dev").get_by_role("button", name="Edit dev").click()
    form = dialog(page, "Edit policy dev")
    expect(form.get_by_role("textbox", name="Minimum run time (s)")).to_have_value("")
    form.get_by_role("textbox", name="Minimum run time (s)").fill("600")
    form.get_by_role("textbox", name="Maximum wait (s)").fill("7200")
    form.get_by_role("textbox", name="Run limit (s)").fill("3600")
    form.get_by_role("combobox", name="At the limit").select_option(label="Queue it again")
    form.get_by_role("checkbox", name="Requests must state a limit").press("Space")
    form.get_by_role("checkbox", name="Requests must state a limit").press("Enter")  # on a check box too, Enter saves
    expect(form).to_be_hidden()
    save(page)
    expect(page.locator("#draft-state")).to_have_text("Draft saved")
    dev = saved_draft()["policies"][1]
    assert (dev["min_runtime_seconds"], dev["max_wait_seconds"], dev["max_runtime_seconds"], dev["on_time_limit"],
            dev["require_max_runtime"]) == (600, 7200, 3600, "requeue", True)

    card(page, "Policy dev").get_by_role("button", name="Edit dev").click()
    form = dialog(page, "Edit policy dev")
    expect(form.get_by_role("textbox", name="Minimum run time (s)")).to_have_value("600")
    expect(form.get_by_role("combobox", name="At the limit")).to_have_value("requeue")
    expect(form.get_by_role("textbox", name="Maximum wait (s)")).to_have_value("7200")
    form.get_by_role("textbox", name="Minimum run time (s)").fill("")
    form.get_by_role("textbox", name="Maximum wait (s)").fill("")
    form.get_by_role("textbox", name="Run limit (s)").fill("")
    form.get_by_role("checkbox", name="Requests must state a limit").uncheck()
    form.get_by_role("combobox", name="At the limit").select_option(label="End the request")
    form.get_by_role("combobox", name="At the limit").press("Enter")  # and in a select
    expect(form).to_be_hidden()
    expect(page.locator("#draft-state")).to_have_text("Unsaved changes")
    save(page)
    expect(page.locator("#draft-state")).to_have_text("Draft saved")
    assert not {"min_runtime_seconds", "max_wait_seconds", "max_runtime_seconds", "on_time_limit",
                "require_max_runtime"} & saved_draft()["policies"][1].keys()


def test_each_order_is_changed_by_keyboard(page):

    move(page, "Execution order of h100", "2xgpu", "up")
    expect_items(page.get_by_role("list", name="Execution order of h100"), ["2xgpu", "8xgpu", "half", "job"])
    # At the top "up" is disabled, so the focus moved to its twin: Enter takes it back down.
    expect(page.get_by_role("list", name="Execution order of h100").get_by_role(
        "button", name="Move 2xgpu down")).to_be_focused()
    move(page, "Pools of half", "a100", "down")
    expect_items(page.get_by_role("list", name="Pools of half"), ["h100", "a100"])
    move(page, "Policies of half", "research", "up")
    expect_items(page.get_by_role("list", name="Policies of half"), ["research", "dev"])

    expect(card(page, "Pool h100")).to_contain_text("Changed: execution order")
    expect(card(page, "Profile half")).to_contain_text("Changed: connections, policy rank")
    solid = page.locator('svg.lines path[data-profile="half"]:not(.fallback)')
    expect(solid).to_have_attribute("data-pool", "h100")  # the preferred pool's line is the solid one
    save(page)
    document = saved_draft()
    assert document["pools"][0]["execution_order"] == ["2xgpu", "8xgpu", "half", "job"]
    assert [c["pool"] for c in document["profiles"][0]["connections"]] == ["h100", "a100"]
    assert document["profiles"][0]["policies"] == ["research", "dev"]
    screenshot(page, "editor")


def test_each_order_is_changed_by_drag(page):

    def drag(list_name: str, item: str, onto: str) -> None:
        found = page.get_by_role("list", name=list_name)
        found.get_by_role("listitem", name=item).drag_to(found.get_by_role("listitem", name=onto),
                                                        target_position={"x": 20, "y": 3})
        settled(page)

    drag("Execution order of h100", "job", "8xgpu")
    expect(page.get_by_role("list", name="Execution order of h100").get_by_role("listitem").first).to_have_attribute(
        "aria-label", "job")
    expect_items(page.get_by_role("list", name="Execution order of h100"), ["job", "8xgpu", "2xgpu", "half"])
    drag("Pools of 2xgpu", "a100", "h100")
    expect(page.get_by_role("list", name="Pools of 2xgpu").get_by_role("listitem").first).to_have_attribute(
        "aria-label", "a100")
    drag("Policies of job", "research", "dev")
    expect(page.get_by_role("list", name="Policies of job").get_by_role("listitem").first).to_have_attribute(
        "aria-label", "research")
    save(page)
    document = saved_draft()
    assert document["pools"][0]["execution_order"] == ["job", "8xgpu", "2xgpu", "half"]
    assert [c["pool"] for c in document["profiles"][1]["connections"]] == ["a100", "h100"]
    assert document["profiles"][3]["policies"] == ["research", "dev"]


def test_a_profile_dragged_onto_a_pool_is_connected_to_it(page):

    card(page, "Profile 8xgpu").locator("[data-connector]").drag_to(card(page, "Pool a100"))
    form = dialog(page, "Connect 8xgpu")
    expect(form.get_by_label("Pool")).to_have_value("a100")
    form.get_by_role("button", name="Connect", exact=True).click()
    expect_items(page.get_by_role("list", name="Pools of 8xgpu"), ["h100", "a100"])


def test_a_saved_draft_is_found_again_after_a_reload(page):
    add_pool(page, "l4", gpu=2)
    save(page)
    assert Draft.objects.get().base_version == 1

    page.reload()  # at /#editor: the editor opens again, on the saved draft
    expect(say(page)).to_contain_text("Editing the saved draft made from version 1")
    expect(card(page, "Pool l4")).to_contain_text("Added")

    page.goto("/")
    expect(page.locator("#draft-notice")).to_contain_text("A draft is saved — by alice")
    expect(page.locator("#draft-notice")).to_contain_text("made from version 1")
    expect(card(page, "Pool l4")).to_have_count(0)  # the page shows the live version
    open_editor(page)
    expect(card(page, "Pool l4")).to_contain_text("Added")


def test_validation_errors_show_at_the_card_they_concern(page):
    add_profile(page, "orphan", gpu=1)  # no connection: api.md refuses it at provision

    button(page, "Validate").click()

    alert = card(page, "Profile orphan").get_by_role("alert")
    expect(alert).to_contain_text("profile orphan has no connection: connect it to at least one pool")
    expect(page.get_by_role("region", name="Problems")).to_contain_text("1 error")
    expect(say(page)).to_contain_text("1 error")
    expect(card(page, "Pool h100").get_by_role("alert")).to_have_count(0)
    screenshot(page, "editor-errors")


def test_a_failed_save_keeps_the_edits_and_says_why(page):
    card(page, "Pool a100").get_by_role("button", name="Edit a100").click()
    form = dialog(page, "Edit pool a100")
    form.get_by_label("gpu", exact=True).fill("lots")
    form.get_by_role("button", name="Save").click()

    button(page, "Save").click()

    expect(say(page)).to_contain_text("Not saved: gpu must be a decimal number")
    expect(say(page)).to_contain_text("Your changes are kept")
    a100 = card(page, "Pool a100")
    expect(a100.get_by_role("alert")).to_contain_text("pools[1].capacity.gpu")
    expect(a100.get_by_label("Capacity of a100")).to_contain_text("lots")
    expect(page.locator("#draft-state")).to_have_text("Unsaved changes")
    assert saved_draft() is None


def test_leaving_with_unsaved_changes_asks_first(page):
    move(page, "Execution order of a100", "job", "up")

    button(page, "Exit editor").click()
    confirm(page, "Leave the editor?", "Keep editing")
    expect(button(page, "Exit editor")).to_be_visible()

    asked = []
    page.once("dialog", lambda prompt: (asked.append(prompt.type), prompt.dismiss()))
    page.get_by_role("link", name="Versions").click()
    page.wait_for_timeout(500)
    assert asked == ["beforeunload"]
    assert page.url.endswith("/#editor")

    button(page, "Exit editor").click()
    confirm(page, "Leave the editor?", "Discard changes")
    expect(button(page, "Open editor")).to_be_visible()
    expect_items(page.get_by_role("list", name="Execution order of a100"), ["2xgpu", "half", "job"])


def test_reset_discards_the_draft_after_asking(page):
    add_pool(page, "l4", gpu=2)
    save(page)

    button(page, "Reset").click()
    confirm(page, "Reset the draft?", "Cancel")
    assert saved_draft() is not None
    button(page, "Reset").click()
    confirm(page, "Reset the draft?", "Reset")

    expect(say(page)).to_have_text("The draft is discarded: you are editing the live configuration again.")
    expect(card(page, "Pool l4")).to_have_count(0)
    expect(page.get_by_text("Added")).to_have_count(0)
    assert saved_draft() is None


def test_enter_in_a_dialog_does_its_main_action_and_escape_cancels(page):
    button(page, "Add pool").click()
    form = dialog(page, "Add pool")
    form.get_by_label("Name", exact=True).fill("l4")
    form.get_by_label("gpu", exact=True).fill("2")
    form.get_by_label("gpu", exact=True).press("Enter")
    expect(form).to_be_hidden()
    expect(card(page, "Pool l4").get_by_label("Capacity of l4")).to_contain_text("gpu2")

    card(page, "Pool l4").get_by_role("button", name="Edit l4").click()
    form = dialog(page, "Edit pool l4")
    form.get_by_label("gpu", exact=True).fill("3")
    form.get_by_label("gpu", exact=True).press("Escape")
    expect(form).to_be_hidden()
    expect(card(page, "Pool l4").get_by_label("Capacity of l4")).to_contain_text("gpu2")

    button(page, "Add policy").click()
    form = dialog(page, "Add policy")
    form.get_by_label("Name", exact=True).fill("ops")
    form.get_by_label("Group").fill("ops")
    form.get_by_label("Group").press("Enter")
    expect(card(page, "Policy ops")).to_be_visible()

    card(page, "Profile half").get_by_role("button", name="Connect half").click()
    form = dialog(page, "Connect half")
    form.get_by_label("Connection name").fill("on l4")
    form.get_by_role("button", name="Cancel").click()
    expect(form).to_be_hidden()
    expect(page.get_by_role("list", name="Pools of half")).not_to_contain_text("on l4")


def test_connect_says_why_when_no_pool_is_left_to_choose(page):
    card(page, "Profile 2xgpu").get_by_role("button", name="Connect 2xgpu").click()  # on h100 and a100 already
    form = dialog(page, "Connect 2xgpu")

    expect(form).to_contain_text("2xgpu is connected to every pool already: add a pool first, or disconnect one.")
    expect(form.get_by_role("button", name="Connect", exact=True)).to_be_disabled()
    form.get_by_role("button", name="Cancel").click()

    add_pool(page, "l4", gpu=2)
    card(page, "Profile 2xgpu").get_by_role("button", name="Connect 2xgpu").click()
    expect(form.get_by_role("button", name="Connect", exact=True)).to_be_enabled()
    expect(form.get_by_text("connected to every pool")).to_be_hidden()


def test_a_validation_with_only_warnings_reads_as_a_warning(page):
    add_policy(page, "ops", "nobody-is-in-this-group")

    button(page, "Validate").click()

    problems = page.get_by_role("region", name="Problems")
    expect(problems).to_contain_text(re.compile(r"0 errors, \d+ warnings"))  # the demo's groups are empty too
    expect(problems).to_have_class(re.compile(r"\bwarnings-only\b"))
    expect(say(page)).to_have_text(re.compile(r"^The draft is valid \(\d+ warnings\): it can be provisioned\.$"))
    expect(say(page)).to_have_class(re.compile(r"\bwarning\b"))


def test_a_display_name_suggests_the_name_and_the_dialog_says_at_once_what_a_name_may_contain(page):
    button(page, "Add pool").click()
    form = dialog(page, "Add pool")
    form.get_by_label("Display name").fill("H100 Half a Superpod")
    expect(form.get_by_label("Name", exact=True)).to_have_value("h100-half-a-superpod")

    form.get_by_label("Name", exact=True).fill("H100 Half")
    hint = form.locator("[data-name-hint]")
    expect(hint).to_have_text("“H100 Half” cannot be a name: a name has 1 to 63 lower-case letters, digits, "
                              "'.', '_' or '-', the first a letter or digit.")
    expect(form.get_by_label("Name", exact=True)).to_have_attribute("aria-invalid", "true")
    form.get_by_label("Name", exact=True).fill("h100-half")
    expect(hint).not_to_contain_text("cannot be a name")
    form.get_by_label("gpu", exact=True).fill("4")
    form.get_by_role("button", name="Create").click()

    half = card(page, "Pool h100-half")
    expect(half.get_by_role("heading", level=3)).to_have_text("H100 Half a Superpod h100-half")
    save(page)
    assert saved_draft()["pools"][-1]["display_name"] == "H100 Half a Superpod"


def test_a_pools_labels_are_added_in_its_dialog_and_shown_on_its_card(page):
    h100 = card(page, "Pool h100")
    expect(h100.get_by_label("Labels of h100")).to_have_count(0)
    h100.get_by_role("button", name="Edit h100").click()
    form = dialog(page, "Edit pool h100")
    form.get_by_role("button", name="Add label").click()
    expect(form.get_by_label("Key of label 1")).to_be_focused()
    form.get_by_label("Key of label 1").fill("slurm_partition")
    form.get_by_label("Value of label 1").fill("gpu-h100")
    form.get_by_role("button", name="Add label").click()
    form.get_by_label("Key of label 2").fill("rack")
    form.get_by_label("Value of label 2").fill("b7")
    form.get_by_role("button", name="Save").click()

    labels = h100.get_by_label("Labels of h100")
    expect(labels).to_have_text(re.compile(r"^\s*rack\s*b7\s*slurm_partition\s*gpu-h100\s*$"))
    expect(h100).to_contain_text("Changed")
    save(page)
    assert saved_draft()["pools"][0]["labels"] == {"slurm_partition": "gpu-h100", "rack": "b7"}

    h100.get_by_role("button", name="Edit h100").click()
    form = dialog(page, "Edit pool h100")
    expect(form.get_by_label("Value of label 1")).to_have_value("gpu-h100")
    form.get_by_role("button", name="Remove label 2").click()
    form.get_by_role("button", name="Save").click()
    expect(labels).to_have_text(re.compile(r"^\s*slurm_partition\s*gpu-h100\s*$"))


def test_a_policys_budget_is_set_in_its_dialog_and_removed_by_leaving_its_hours_empty(page):
    card(page, "Policy dev").get_by_role("button", name="Edit dev").click()
    form = dialog(page, "Edit policy dev")
    expect(form.get_by_label("Budget hours")).to_have_value("")
    form.get_by_label("Budget hours").fill("1000")
    form.get_by_label("Budget period").select_option("week")
    form.get_by_label("When the budget is spent").select_option("idle")
    screenshot(page, "editor-budget")
    form.get_by_role("button", name="Save").click()
    save(page)
    dev = next(p for p in saved_draft()["policies"] if p["name"] == "dev")
    assert dev["budget"] == {"key": "gpu", "hours": 1000, "period": "week", "when_spent": "idle"}

    card(page, "Policy dev").get_by_role("button", name="Edit dev").click()
    form = dialog(page, "Edit policy dev")
    expect(form.get_by_label("Budget hours")).to_have_value("1000")
    expect(form.get_by_label("When the budget is spent")).to_have_value("idle")
    form.get_by_label("Budget hours").fill("")
    form.get_by_role("button", name="Save").click()
    save(page)
    for _ in range(50):  # the notice of the first save may still show: wait for the second to land
        if "budget" not in next(p for p in saved_draft()["policies"] if p["name"] == "dev"):
            break
        page.wait_for_timeout(100)
    assert "budget" not in next(p for p in saved_draft()["policies"] if p["name"] == "dev")
