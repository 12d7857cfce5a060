"""Failed sign-ins are throttled per client address and per account — wrong bearer tokens (REST
API and event stream) and wrong passwords (the login page, the admin's). While an address or an
account is throttled, every attempt for it gets the same 429 whether its credential is right or
not, saying how to get back in; an administrator can end a lockout early."""

from __future__ import annotations

import datetime as dt
import logging
from io import StringIO
from unittest import mock

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from poolweb import settings as configured
from poolweb.models import SignInFailure
from poolweb.services.signin import sign_in_failed, sign_in_wait
from poolweb.services.tokens import token_issue

from ..events.streams import connect, in_event_loop, refusal

ALLOWED = 3  # per address
ACCOUNT_ALLOWED = 5  # per account, from any addresses: coarser


@pytest.fixture(autouse=True)
def few_failures(settings):
    settings.POOLWEB = {**settings.POOLWEB, "AUTH_FAILURES": ALLOWED, "AUTH_ACCOUNT_FAILURES": ACCOUNT_ALLOWED,
                        "AUTH_FAILURE_WINDOW_SECONDS": 60}


@pytest.fixture
def frozen_clock():
    """Every answer within one instant, so two of them can be compared to the byte."""
    with mock.patch("django.utils.timezone.now", return_value=timezone.now()):
        yield


def get_pools(token: str, address: str = "10.0.0.1", **headers):
    return APIClient().get("/api/v1/pools", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address, **headers)


def sign_in(password: str, *, address: str = "10.0.0.1", login: str = "/accounts/login/", username: str = "alice"):
    return Client(REMOTE_ADDR=address).post(login, {"username": username, "password": password})


# --- tokens -----------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_wrong_tokens_from_one_address_get_429_with_retry_after_past_the_allowance(bob):
    assert [get_pools("wrong").status_code for _ in range(ALLOWED)] == [401] * ALLOWED

    throttled = get_pools("wrong")

    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert "Too many failed sign-ins: try again in 1 minute" in throttled.json()["detail"]


@pytest.mark.django_db
def test_a_throttled_address_gets_the_same_429_for_a_valid_token_and_others_are_not_throttled(bob, frozen_clock):
    token = token_issue(user=bob)
    for _ in range(ALLOWED):
        get_pools("wrong")

    wrong, right = get_pools("wrong"), get_pools(token)

    assert (right.status_code, right["Retry-After"], right.content) == (429, wrong["Retry-After"], wrong.content)
    assert get_pools(token, address="10.0.0.2").status_code == 200
    assert SignInFailure.objects.count() == ALLOWED  # a throttled attempt writes nothing


@pytest.mark.django_db(transaction=True)
@in_event_loop
async def test_wrong_tokens_on_the_event_stream_count_too_and_then_a_valid_one_is_refused_unchecked(bob):
    for _ in range(ALLOWED):
        stream = await connect()
        await stream.send_json_to({"token": "wrong"})
        assert await refusal(stream) == ("unauthenticated", 4401)
    token = await database_sync_to_async(token_issue)(user=bob)

    stream = await connect()
    await stream.send_json_to({"token": token})

    assert await refusal(stream) == ("too_many_failures", 4429)


@pytest.mark.django_db(transaction=True)
@in_event_loop
async def test_a_token_that_is_not_text_on_the_event_stream_is_a_bad_token_and_counts(bob):
    stream = await connect()
    await stream.send_to(text_data='{"token": "\\ud800"}')  # a lone surrogate: valid JSON, no UTF-8

    assert await refusal(stream) == ("unauthenticated", 4401)
    assert await database_sync_to_async(SignInFailure.objects.count)() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("secret", ["\xff\xfe", "\x00", "\x7f\x1b[2J", "é"])
def test_a_bearer_header_with_odd_bytes_is_a_bad_token_and_counts(bob, secret):
    response = get_pools(secret)

    assert response.status_code == 401
    assert SignInFailure.objects.count() == 1


# --- passwords -------------------------------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("login", ["/accounts/login/", "/admin/login/"])
def test_while_throttled_the_right_password_gets_the_same_answer_as_a_wrong_one(alice, login, frozen_clock):
    wrong = [sign_in("guess", login=login).status_code for _ in range(ALLOWED)]

    guessed, right = sign_in("guess", login=login), sign_in("alice-password", login=login)

    assert wrong == [200] * ALLOWED  # the form again, with its error
    assert (guessed.status_code, int(guessed["Retry-After"])) == (429, 60)
    assert (right.status_code, right["Retry-After"], right.content) == (429, guessed["Retry-After"], guessed.content)
    assert right.content.decode() == ("Too many failed sign-ins: try again in 1 minute, "
                                      "or ask an administrator to clear the lockout.\n")


@pytest.mark.django_db
def test_an_account_is_throttled_for_every_address_once_guessed_at_from_many(alice):
    for n in range(ACCOUNT_ALLOWED):
        assert sign_in("guess", address=f"10.0.1.{n}").status_code == 200  # under each address's allowance

    assert sign_in("alice-password", address="10.0.2.1").status_code == 429
    assert sign_in("bob-password", address="10.0.2.1", username="bob").status_code == 200  # not bob's account


def test_by_default_an_account_allows_more_failures_than_an_address():
    assert (configured.POOLWEB["AUTH_FAILURES"], configured.POOLWEB["AUTH_ACCOUNT_FAILURES"]) == (20, 100)


@pytest.mark.django_db
def test_failures_count_only_within_the_window_and_throttled_ones_add_nothing(db):
    start = timezone.now()
    for _ in range(ALLOWED):
        assert sign_in_wait(address="10.0.0.1", now=start) is None
        sign_in_failed(address="10.0.0.1", now=start)

    assert sign_in_wait(address="10.0.0.1", now=start + dt.timedelta(seconds=15)) == 45
    assert sign_in_wait(address="10.0.0.1", now=start + dt.timedelta(seconds=61)) is None
    sign_in_failed(address="10.0.0.1", now=start + dt.timedelta(seconds=61))
    assert SignInFailure.objects.count() == 1  # those that left the window are forgotten


@pytest.mark.django_db
def test_a_lockout_is_logged_with_the_address_and_the_account(alice, caplog):
    with caplog.at_level(logging.WARNING, logger="poolweb.services.signin"):
        for _ in range(ALLOWED):
            sign_in("guess", address="192.0.2.7")

    assert caplog.messages == ["sign-ins throttled for 60 s after a failure from 192.0.2.7 for the account 'alice'"]


# --- getting back in -------------------------------------------------------------------------------

@pytest.mark.django_db
def test_an_administrator_ends_an_accounts_lockout_with_the_command(alice):
    for n in range(ACCOUNT_ALLOWED):
        sign_in("guess", address=f"10.0.1.{n}")
    out = StringIO()

    call_command("clear_sign_in_failures", "alice", stdout=out)

    assert out.getvalue() == f"forgot {ACCOUNT_ALLOWED} failed sign-in(s); the lockout is over\n"
    assert sign_in("alice-password", address="10.0.2.1").status_code == 302


@pytest.mark.django_db
def test_the_command_ends_an_addresss_lockout_and_needs_one_or_the_other(bob):
    for _ in range(ALLOWED):
        get_pools("wrong")

    call_command("clear_sign_in_failures", "--address", "10.0.0.1", stdout=StringIO())

    assert get_pools(token_issue(user=bob)).status_code == 200
    with pytest.raises(CommandError, match="give a USERNAME, --address ADDRESS, or both"):
        call_command("clear_sign_in_failures")


@pytest.mark.django_db
def test_an_administrator_sees_failures_in_the_admin_and_deleting_them_ends_the_lockout(alice, bob):
    for _ in range(ALLOWED):
        sign_in("guess", username="bob")
    operator = Client()
    operator.force_login(alice)

    listed = operator.get("/admin/poolweb/signinfailure/", {"q": "bob"})
    ids = list(SignInFailure.objects.values_list("pk", flat=True))
    operator.post("/admin/poolweb/signinfailure/",
                  {"action": "delete_selected", "_selected_action": ids, "post": "yes"})

    assert listed.status_code == 200 and "10.0.0.1" in listed.content.decode()
    assert sign_in("bob-password", username="bob").status_code == 302
