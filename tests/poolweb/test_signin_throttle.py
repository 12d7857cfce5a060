"""Failed sign-ins are throttled per client address — wrong bearer tokens (REST API and event
stream) and wrong passwords (the login page, the admin's) — and a valid credential never is."""

from __future__ import annotations

import datetime as dt

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from poolweb.models import SignInFailure
from poolweb.services.signin import sign_in_failed
from poolweb.services.tokens import token_issue

from .streams import connect, in_event_loop, refusal

ALLOWED = 3


@pytest.fixture(autouse=True)
def few_failures(settings):
    settings.POOLWEB = {**settings.POOLWEB, "AUTH_FAILURES": ALLOWED, "AUTH_FAILURE_WINDOW_SECONDS": 60}


def get_pools(token: str, address: str = "10.0.0.1"):
    return APIClient().get("/api/v1/pools", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address)


@pytest.mark.django_db
def test_wrong_tokens_from_one_address_get_429_with_retry_after_past_the_allowance(bob):
    assert [get_pools("wrong").status_code for _ in range(ALLOWED)] == [401] * ALLOWED

    throttled = get_pools("wrong")

    assert throttled.status_code == 429
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert "too many failed sign-ins" in throttled.json()["detail"]


@pytest.mark.django_db
def test_a_valid_token_is_never_throttled_and_other_addresses_are_not_either(bob):
    for _ in range(ALLOWED + 2):
        get_pools("wrong")

    assert get_pools(token_issue(user=bob)).status_code == 200
    assert get_pools("wrong", address="10.0.0.2").status_code == 401


@pytest.mark.django_db
def test_failures_count_only_within_the_window_and_throttled_ones_add_nothing(db):
    start = timezone.now()
    for _ in range(ALLOWED):
        assert sign_in_failed(address="10.0.0.1", now=start) is None

    assert sign_in_failed(address="10.0.0.1", now=start + dt.timedelta(seconds=15)) == 45
    assert SignInFailure.objects.count() == ALLOWED
    assert sign_in_failed(address="10.0.0.1", now=start + dt.timedelta(seconds=61)) is None
    assert SignInFailure.objects.count() == 1  # those that left the window are forgotten


@pytest.mark.django_db
@pytest.mark.parametrize("login", ["/accounts/login/", "/admin/login/"])
def test_wrong_passwords_get_429_past_the_allowance_and_the_right_one_still_signs_in(alice, login):
    browser = Client(REMOTE_ADDR="10.0.0.1")
    wrong = [browser.post(login, {"username": "alice", "password": "guess"}).status_code for _ in range(ALLOWED)]

    throttled = browser.post(login, {"username": "alice", "password": "guess"})
    signed_in = browser.post(login, {"username": "alice", "password": "alice-password"})

    assert wrong == [200] * ALLOWED  # the form again, with its error
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) >= 1
    assert signed_in.status_code == 302


@pytest.mark.django_db(transaction=True)
@in_event_loop
async def test_wrong_tokens_on_the_event_stream_count_too(bob):
    for _ in range(ALLOWED):
        stream = await connect()
        await stream.send_json_to({"token": "wrong"})
        assert await refusal(stream) == ("unauthenticated", 4401)

    stream = await connect()
    await stream.send_json_to({"token": "wrong"})
    assert await refusal(stream) == ("too_many_failures", 4429)

    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect()
    await stream.send_json_to({"token": token, "resume_from": None})
    assert await stream.receive_nothing(timeout=0.2)  # signed in
    await stream.disconnect()


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
