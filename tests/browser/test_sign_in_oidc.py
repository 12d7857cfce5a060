"""Signing in with an OpenID Connect provider through the real browser flow: Poolweb's sign-in
page, the provider's own page (tests/oidc_provider: django-oauth-toolkit, PKCE required), back
to Poolweb signed in, with the groups the admin's mapping gives (docs/sign-in.md)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import requests
from django.contrib.auth.models import Group, User
from django.utils import timezone
from playwright.sync_api import expect

from poolweb.models import DirectoryAccount, DirectoryGroup
from poolweb.ports import free_port
from poolweb.services.tokens import token_issue
from tests.browser.conftest import VIEWPORT, screenshot
from tests.oidc_provider.running import Provider, running_provider
from tests.poolweb import processes

PEOPLE = {"ada": {"password": "ada-company-password", "groups": ["ml-team", "vision"]},
          "cyd": {"password": "cyd-company-password", "groups": ["ml-team"], "active": False}}


@pytest.fixture(scope="module")
def sso(django_db_setup, tmp_path_factory):
    """A Poolweb server pointed at a provider, and the provider, each its own process."""
    port = free_port()
    issuer = Provider(tmp_path_factory.mktemp("provider"), port)
    with processes.live_server(tmp_path_factory.mktemp("server"), web_only=True, POOLWEB_PASSES="inline",
                               POOLWEB_LOCAL_SIGN_IN="admins", **issuer.environment()) as server:
        with running_provider(issuer.directory, f"{server.url}/accounts/oidc/callback/", PEOPLE, port) as provider:
            yield server.url, provider


@pytest.fixture
def mapping(transactional_db, sso):
    """The admin's mapping: ml-team → dev, vision → vision; the provider's people as PEOPLE says."""
    sso[1].people(PEOPLE)
    for name in ("dev", "vision"):
        DirectoryGroup.objects.create(name=name if name != "dev" else "ml-team", group=Group.objects.create(name=name))


@pytest.fixture
def page(browser, sso):
    """A page of its own browser context on the Poolweb server, closed after the test."""
    context = browser.new_context(viewport=VIEWPORT, base_url=sso[0])
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    yield opened


def groups_of(username: str) -> set[str]:
    return set(User.objects.get(username=username).groups.values_list("name", flat=True))


def sign_in_at_the_provider(page, username: str, password: str) -> None:
    page.get_by_role("link", name="Sign in with Example SSO").click()
    expect(page.get_by_role("heading", name="Example company sign-in")).to_be_visible()
    page.get_by_label("Company username").fill(username)
    page.get_by_label("Company password").fill(password)
    page.get_by_role("button", name="Continue").click()


def test_signing_in_with_the_provider_creates_the_user_and_follows_its_groups(page, sso, mapping):
    url, provider = sso

    page.goto("/requests/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/requests/$"))
    expect(page.get_by_role("link", name="Sign in with Example SSO")).to_be_visible()
    expect(page.get_by_label("Username")).to_be_visible()  # local administrators still may (LOCAL_SIGN_IN=admins)
    screenshot(page, "sign-in-oidc")
    sign_in_at_the_provider(page, "ada", PEOPLE["ada"]["password"])

    expect(page).to_have_url(f"{url}/requests/")
    expect(page.get_by_text("directory", exact=True)).to_be_visible()  # the shell's mark
    ada = User.objects.get(username="ada")
    assert groups_of("ada") == {"dev", "vision"}
    assert (ada.email, ada.is_staff, ada.has_usable_password()) == ("ada@example.org", False, False)
    assert DirectoryAccount.objects.get(user=ada).source == "oidc"

    provider.people({**PEOPLE, "ada": {**PEOPLE["ada"], "groups": ["ml-team"]}})  # left vision
    page.get_by_role("button", name="Sign out").click()
    page.goto("/accounts/login/")
    sign_in_at_the_provider(page, "ada", PEOPLE["ada"]["password"])  # her password was set again: a new session

    expect(page).to_have_url(f"{url}/")
    assert groups_of("ada") == {"dev"}


def test_an_api_token_follows_the_provider_and_stops_when_it_disables_the_user(page, sso, mapping):
    url, provider = sso
    page.goto("/accounts/login/")
    sign_in_at_the_provider(page, "ada", PEOPLE["ada"]["password"])
    expect(page).to_have_url(f"{url}/")
    ada = User.objects.get(username="ada")
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {token_issue(user=ada)}"
    kept = DirectoryAccount.objects.get(user=ada).refresh_token
    assert kept and "ada" not in kept  # sealed

    provider.people({**PEOPLE, "ada": {**PEOPLE["ada"], "groups": ["vision"]}})
    assert api.get(f"{url}/api/v1/me").status_code == 200
    assert groups_of("ada") == {"dev", "vision"}  # asked less than 5 minutes ago: the last answer
    long_ago()
    assert api.get(f"{url}/api/v1/me").status_code == 200
    assert groups_of("ada") == {"vision"}  # the provider's groups now, through the refresh grant
    assert DirectoryAccount.objects.get(user=ada).refresh_token != kept  # the provider rotated it

    provider.people({**PEOPLE, "ada": {**PEOPLE["ada"], "active": False}})
    long_ago()
    assert api.get(f"{url}/api/v1/me").status_code == 401
    ada.refresh_from_db()
    assert not ada.is_active
    page.goto("/requests/")  # her session ended with her deactivation
    expect(page).to_have_url(re.compile("/accounts/login/"))


def long_ago() -> None:
    DirectoryAccount.objects.update(checked_at=timezone.now() - timedelta(minutes=5))


def test_a_user_the_provider_disabled_cannot_sign_in(page, sso, mapping):
    url, _ = sso
    page.goto("/accounts/login/")

    sign_in_at_the_provider(page, "cyd", PEOPLE["cyd"]["password"])

    expect(page.get_by_role("alert")).to_contain_text("Wrong username or password")  # the provider's page
    assert not User.objects.filter(username="cyd").exists()


def test_a_refusal_at_the_provider_is_said_on_the_sign_in_page(page, sso, mapping):
    url, _ = sso
    page.goto("/accounts/oidc/callback/?error=access_denied&state=forged")

    expect(page).to_have_url(f"{url}/accounts/login/")
    expect(page.get_by_role("alert")).to_contain_text("The sign-in with Example SSO did not complete (access_denied)")
