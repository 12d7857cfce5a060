"""The password reset by mail exists only when mail is configured (``POOLWEB_EMAIL_URL``); without
it its pages are 404 and the sign-in page says to ask an administrator. Its asks are throttled
per address and per address asked for."""

from __future__ import annotations

import importlib

import pytest
from django.core import mail
from django.test import Client
from django.urls import clear_url_caches

import poolweb.urls
from poolweb.env import ImproperlyConfigured, MailServer, env_mail_server
from poolweb.services.signin import RESETS_PER_ADDRESS, RESETS_PER_EMAIL

RESET_PATHS = ["/accounts/password_reset/", "/accounts/password_reset/done/", "/accounts/reset/done/",
               "/accounts/reset/MQ/set-password/"]


def routes_again() -> None:
    """The paths as a process started with the current settings would have them."""
    importlib.reload(poolweb.urls)
    clear_url_caches()


@pytest.fixture
def mail_configured(settings):
    settings.MAIL_SERVER = MailServer("mail.example.org", 587, "", "", True, False, None)
    routes_again()
    yield
    settings.MAIL_SERVER = None
    routes_again()


def ask_reset(email: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post("/accounts/password_reset/", {"email": email})


@pytest.mark.django_db
@pytest.mark.parametrize("reset_path", RESET_PATHS)
def test_without_mail_there_is_no_password_reset(settings, reset_path):
    assert settings.MAIL_SERVER is None
    assert Client().get(reset_path).status_code == 404


@pytest.mark.django_db
def test_without_mail_the_sign_in_page_says_to_ask_an_administrator(settings):
    page = Client().get("/accounts/login/").content.decode()

    assert "Forgot your password? Ask an administrator to set a new one." in page
    assert "password_reset" not in page


@pytest.mark.django_db
def test_with_mail_the_sign_in_page_links_to_the_reset_which_mails_the_link(mail_configured, bob):
    page = Client().get("/accounts/login/").content.decode()

    form, asked = Client().get("/accounts/password_reset/"), ask_reset("bob@example.com")

    assert '<a href="/accounts/password_reset/">Forgot your password?</a>' in page
    assert form.status_code == 200 and asked.status_code == 302
    assert [m.to for m in mail.outbox] == [["bob@example.com"]] and "/accounts/reset/" in mail.outbox[0].body


@pytest.mark.django_db
def test_resets_asked_from_one_address_are_throttled_before_any_mail(mail_configured, bob):
    for n in range(RESETS_PER_ADDRESS):
        assert ask_reset(f"someone{n}@example.com").status_code == 302

    refused = ask_reset("bob@example.com")

    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 3600
    assert refused.content.decode().startswith("Too many password resets asked: try again in 60 minutes")
    assert mail.outbox == []


@pytest.mark.django_db
def test_resets_for_one_email_are_throttled_whatever_the_address_and_case(mail_configured, bob):
    for n in range(RESETS_PER_EMAIL):
        assert ask_reset("bob@example.com", address=f"10.0.1.{n}").status_code == 302

    refused = ask_reset("BOB@example.com", address="10.0.2.1")

    assert refused.status_code == 429
    assert len(mail.outbox) == RESETS_PER_EMAIL
    assert ask_reset("carol@example.com", address="10.0.2.1").status_code == 302


@pytest.mark.parametrize("url, expected", [
    ("smtp://mail.example.org", MailServer("mail.example.org", 25, "", "", False, False, None)),
    ("smtp+tls://poolweb:p%40ss@mail.example.org:2525?from=poolweb@example.org",
     MailServer("mail.example.org", 2525, "poolweb", "p@ss", True, False, "poolweb@example.org")),
    ("smtps://mail.example.org", MailServer("mail.example.org", 465, "", "", False, True, None)),
])
def test_the_mail_url_reads_server_login_security_and_sender(monkeypatch, url, expected):
    monkeypatch.setenv("POOLWEB_EMAIL_URL", url)
    assert env_mail_server("POOLWEB_EMAIL_URL") == expected


@pytest.mark.parametrize("url", ["mail.example.org", "http://mail.example.org", "smtp://", "smtp://h:port"])
def test_a_mail_url_that_is_not_one_fails_loudly_without_echoing_a_password(monkeypatch, url):
    monkeypatch.setenv("POOLWEB_EMAIL_URL", url)
    with pytest.raises(ImproperlyConfigured, match="POOLWEB_EMAIL_URL must be smtp://"):
        env_mail_server("POOLWEB_EMAIL_URL")
