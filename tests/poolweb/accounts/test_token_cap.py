"""A user may have at most ``POOLWEB_MAX_TOKENS_PER_USER`` API tokens: one more is refused with
what to do (revoke one) by the API, the tokens page and the command, and two creations at the
cap cannot both get in."""

from __future__ import annotations

import threading
from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from poolweb.models import ApiToken
from poolweb.services import tokens as services
from poolweb.services.tokens import TooManyTokens, token_create, token_issue

from tests.poolweb.conftest import client_for, run_together

CAP = 2


@pytest.fixture(autouse=True)
def cap_of_two(settings):
    settings.POOLWEB = {**settings.POOLWEB, "MAX_TOKENS_PER_USER": CAP}


@pytest.mark.django_db
def test_a_token_beyond_the_cap_is_409_saying_to_revoke_one_and_nothing_is_stored(bob):
    client = client_for(bob)
    created = [client.post("/api/v1/tokens", {"name": f"t{n}"}, format="json").status_code for n in range(CAP)]

    refused = client.post("/api/v1/tokens", {"name": "one more"}, format="json")

    assert created == [201] * CAP
    assert refused.status_code == 409
    assert "2 API tokens, the most one may have (POOLWEB_MAX_TOKENS_PER_USER)" in refused.json()["detail"]
    assert "revoke one" in refused.json()["detail"]
    assert ApiToken.objects.filter(user=bob).count() == CAP


@pytest.mark.django_db
def test_the_cap_is_per_user_and_revoking_one_makes_room(bob, carol):
    for _ in range(CAP):
        token_issue(user=carol)
    token_issue(user=bob)
    kept = token_create(user=bob, name="kept")[0]
    with pytest.raises(TooManyTokens):
        token_issue(user=bob)

    services.token_revoke(token_id=kept.pk, user=bob)

    assert token_issue(user=bob)


@pytest.mark.django_db
def test_the_command_exits_with_the_message_at_the_cap(bob):
    for _ in range(CAP):
        token_issue(user=bob)
    out = StringIO()

    with pytest.raises(CommandError, match=r"bob has 2 API tokens, the most one may have .*revoke one first"):
        call_command("create_api_token", "bob", stdout=out)

    assert out.getvalue() == "" and ApiToken.objects.count() == CAP


@pytest.mark.django_db
def test_the_tokens_page_says_how_many_one_may_have(bob):
    browser = Client()
    browser.force_login(bob)

    assert "You may have up to 2." in browser.get("/account/tokens/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_creations_at_the_last_free_place_let_only_one_in(bob):
    token_issue(user=bob)
    both_counted = threading.Barrier(2, timeout=1)
    real_count = services.tokens_held

    def count_then_wait(*, owner) -> int:
        held = real_count(owner=owner)
        try:
            both_counted.wait()  # without the lock, both see one free place and both take it
        except threading.BrokenBarrierError:
            pass  # the other waits for the lock: it counts after this one inserted
        return held

    outcomes = []

    def create() -> None:
        try:
            outcomes.append(token_create(user=bob, name="racer")[0].pk)
        except TooManyTokens:
            outcomes.append("refused")
        finally:
            connection.close()

    with mock.patch.object(services, "tokens_held", count_then_wait):
        run_together(create, create)

    assert sorted(outcomes, key=str).count("refused") == 1
    assert ApiToken.objects.filter(user=bob).count() == CAP
