"""What an administrator does in the editor, step by step, as a person would: by the controls'
roles and names (docs/console.md). Shared by the editor, provision and versions tests."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect
from rest_framework.test import APIClient

from poolweb.models import Request


def card(page: Page, name: str) -> Locator:
    """The card named ``Pool h100``, ``Profile half`` or ``Policy dev``."""
    return page.get_by_role("region", name=name, exact=True)


def dialog(page: Page, name: str) -> Locator:
    return page.get_by_role("dialog", name=name)


def button(page: Page, name: str) -> Locator:
    return page.get_by_role("button", name=name, exact=True)


def settled(page: Page) -> None:
    """Until the board shows the draft as it is now (it is aria-busy while a re-render is on its way)."""
    expect(page.locator("#board")).not_to_have_attribute("aria-busy", "true")


def open_editor(page: Page) -> None:
    button(page, "Open editor").click()
    expect(button(page, "Exit editor")).to_be_visible()
    expect(page.locator("#editor-message")).not_to_be_empty()


def _resources(form: Locator, amounts: dict[str, object]) -> None:
    for key, amount in amounts.items():
        field = form.get_by_label(key, exact=True)
        if not field.count():
            form.get_by_label("New resource key").fill(key)
            form.get_by_role("button", name="Add key").click()
        field.fill(str(amount))


def fill_pool(form: Locator, name: str, description: str = "", **capacity: object) -> None:
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Description").fill(description)
    _resources(form, capacity)


def add_pool(page: Page, name: str, description: str = "", **capacity: object) -> None:
    button(page, "Add pool").click()
    form = dialog(page, "Add pool")
    fill_pool(form, name, description, **capacity)
    form.get_by_role("button", name="Create").click()
    expect(card(page, f"Pool {name}")).to_be_visible()


def add_profile(page: Page, name: str, description: str = "", policies: tuple[str, ...] = (), dynamic: bool = False,
                **resources: object) -> None:
    button(page, "Add profile").click()
    form = dialog(page, "Add profile")
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Description").fill(description)
    form.get_by_label("Dynamic").set_checked(dynamic)
    _resources(form, resources)
    for policy in policies:
        form.get_by_role("checkbox", name=policy, exact=True).check()
    form.get_by_role("button", name="Create").click()
    expect(card(page, f"Profile {name}")).to_be_visible()


def add_policy(page: Page, name: str, group: str, priority: int = 0, description: str = "",
               quotas: tuple[tuple[str, str, object, object], ...] = ()) -> None:
    """``quotas``: (scope, key, reserved, limit) rows; scope "*" for all pools, None for no amount."""
    button(page, "Add policy").click()
    form = dialog(page, "Add policy")
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Group").fill(group)
    form.get_by_label("Priority").fill(str(priority))
    form.get_by_label("Description").fill(description)
    for n, (scope, key, reserved, limit) in enumerate(quotas, start=1):
        form.get_by_role("button", name="Add quota").click()
        form.get_by_label(f"Scope of quota {n}").select_option(scope)
        form.get_by_label(f"Key of quota {n}").fill(key)
        form.get_by_label(f"Reserved of quota {n}").fill("" if reserved is None else str(reserved))
        form.get_by_label(f"Limit of quota {n}").fill("" if limit is None else str(limit))
    form.get_by_role("button", name="Create").click()
    expect(card(page, f"Policy {name}")).to_be_visible()


def connect(page: Page, profile: str, pool: str, name: str = "") -> None:
    card(page, f"Profile {profile}").get_by_role("button", name=f"Connect {profile}").click()
    form = dialog(page, f"Connect {profile}")
    form.get_by_label("Pool").select_option(pool)
    form.get_by_label("Connection name").fill(name)
    form.get_by_role("button", name="Connect", exact=True).click()
    expect(page.get_by_role("list", name=f"Pools of {profile}").get_by_role("listitem", name=pool)).to_be_visible()


def move(page: Page, list_name: str, item: str, direction: str) -> None:
    """``Move <item> up/down`` in the list named ``list_name``, by keyboard: focus it, press Enter."""
    settled(page)
    control = page.get_by_role("list", name=list_name).get_by_role("button", name=f"Move {item} {direction}")
    control.focus()
    page.keyboard.press("Enter")
    settled(page)


def say(page: Page) -> Locator:
    """The editor's message line."""
    return page.locator("#editor-message")


def save(page: Page) -> None:
    button(page, "Save").click()
    expect(say(page)).to_have_text("Draft saved.")


def confirm(page: Page, title: str, choice: str) -> None:
    found = dialog(page, title)
    expect(found).to_be_visible()
    found.get_by_role("button", name=choice, exact=True).click()
    expect(found).to_be_hidden()


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def submit(user, policy: str, profile: str, **fields) -> Request:
    """A request submitted through the REST API, as a job's client would (its pass runs inline);
    ``fields``: more of the submission (``max_retries``, ``name``, ``labels``…)."""
    response = api_as(user).post("/api/v1/requests", {"policy": policy, "profile": profile, **fields}, format="json")
    assert response.status_code == 201, response.content
    return Request.objects.get(pk=response.json()["id"])


def release(request: Request) -> None:
    """Its owner releases it through the REST API (its pass runs inline)."""
    assert api_as(request.owner).post(f"/api/v1/requests/{request.pk}/release").status_code == 200
