"""The tokens page: create a named token (its secret shown once, with a copy button and the lines
that use it), use it against the API, see when it was last used, revoke it — and then it no
longer works."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from playwright.sync_api import expect

from poolweb.models import ApiToken
from poolweb.services.tokens import token_create
from tests.browser.conftest import screenshot
from tests.browser.steps import button, confirm


def call_api(server: str, token: str) -> int:
    """GET /api/v1/requests on the live server with ``token``; the status it answers."""
    request = urllib.request.Request(f"{server}/api/v1/requests", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_token_is_created_used_and_revoked(visit, server, demo, bob):
    token_create(user=bob, name="old laptop")
    page = visit(bob, "/account/tokens/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    tokens = page.get_by_role("table", name="Your tokens")
    expect(tokens.get_by_role("row")).to_have_count(2)
    expect(tokens).to_contain_text("never")

    page.get_by_label("Token name").fill("ci runner")
    button(page, "Create token").click()

    new = page.get_by_role("region", name="New token “ci runner”")
    expect(new).to_be_visible()
    secret = new.get_by_label("Token secret").input_value()
    assert len(secret) >= 40 and ApiToken.objects.get(name="ci runner").prefix == secret[:8]
    expect(new.locator("#curl-line")).to_have_text(
        f'curl -H "Authorization: Bearer {secret}" {server}/api/v1/requests')
    expect(new.locator("#poolctl-lines")).to_have_text(
        f"export POOLWEB_URL={server}\nexport POOLWEB_TOKEN={secret}\npoolctl list")
    new.get_by_role("button", name="Copy token").click()
    expect(new.get_by_role("status")).to_have_text("Token copied.")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    expect(tokens.get_by_role("row")).to_have_count(3)
    expect(tokens.get_by_role("row").nth(1)).to_contain_text(f"ci runner{secret[:8]}…just nownever")
    screenshot(page, "tokens")

    assert call_api(server, secret) == 200  # it works
    page.reload()
    expect(page.get_by_label("Token secret")).to_be_hidden()  # shown once: gone after a reload
    row = tokens.get_by_role("row").filter(has_text="ci runner")
    expect(row.locator("td").nth(2)).to_have_text("just now")  # last used

    row.get_by_role("button", name="Revoke ci runner").click()
    confirm(page, "Revoke token “ci runner”?", "Revoke")
    expect(row).to_have_count(0)
    expect(tokens.get_by_role("row")).to_have_count(2)
    assert call_api(server, secret) == 401  # it no longer works
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["old laptop"]


def test_a_token_needs_a_name_and_the_last_one_revoked_leaves_the_empty_state(visit, demo, bob):
    token_create(user=bob, name="laptop")
    page = visit(bob, "/account/tokens/")

    button(page, "Create token").click()
    expect(page.get_by_role("alert")).to_have_text("Name the token first: what you will know it by.")
    page.get_by_label("Token name").fill("bell\u0007")
    button(page, "Create token").click()
    expect(page.get_by_role("alert")).to_have_text("a name has no control characters")  # the API's words
    assert ApiToken.objects.count() == 1

    page.get_by_role("button", name="Revoke laptop").click()
    confirm(page, "Revoke token “laptop”?", "Revoke")
    expect(page.get_by_role("heading", name="No tokens yet")).to_be_visible()
    expect(page.get_by_role("table", name="Your tokens")).to_be_hidden()
    assert not ApiToken.objects.exists()


def test_at_the_cap_the_page_says_to_revoke_a_token_first(visit, demo, bob):
    ApiToken.objects.bulk_create(ApiToken(user=bob, name=f"t{n}", digest=f"{n:064x}", prefix=f"{n:08x}")
                                 for n in range(100))  # the server's POOLWEB_MAX_TOKENS_PER_USER
    page = visit(bob, "/account/tokens/")
    expect(page.get_by_text("You may have up to 100.")).to_be_visible()

    page.get_by_label("Token name").fill("one more")
    button(page, "Create token").click()

    expect(page.get_by_role("alert")).to_contain_text(
        "you have 100 API tokens, the most one may have (POOLWEB_MAX_TOKENS_PER_USER): revoke one you no longer use")
    assert ApiToken.objects.count() == 100
