"""Signing in and out through the forms (docs/console.md: Username, Password, Sign in)."""

from __future__ import annotations

import re

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import User
from playwright.sync_api import expect

from tests.browser.conftest import VIEWPORT, screenshot


def test_signing_in_lands_on_the_configuration_and_signing_out_ends_the_session(browser, server, demo):
    # Hashed as the server checks it (the API tests make the test process hash with MD5, for speed).
    User.objects.filter(username="alice").update(password=PBKDF2PasswordHasher().encode("alice-password", "salt"))
    context = browser.new_context(viewport=VIEWPORT, base_url=server)
    page = context.new_page()

    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("didn't match")
    screenshot(page, "sign-in")
    page.get_by_label("Password").fill("alice-password")
    page.get_by_role("button", name="Sign in").click()

    expect(page).to_have_url(f"{server}/")
    expect(page.get_by_role("heading", name="Resource configuration")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="You are signed out")).to_be_visible()
    page.goto("/versions/")
    expect(page).to_have_url(re.compile("/accounts/login/"))
    context.close()
