"""Tokens through the API (api.md §2 "Accounts and operations"): GET/POST /tokens and
DELETE /tokens/{id}; the secret is shown once, a revoked token stops working at once."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from poolweb.models import ApiToken
from poolweb.services.tokens import digest, token_create

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db

URL = "/api/v1/tokens"


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_creating_a_token_shows_its_secret_once_and_it_signs_in(bob):
    response = client_for(bob).post(URL, {"name": "laptop"}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "name", "created_at", "last_used_at", "token"}
    assert (body["name"], body["last_used_at"]) == ("laptop", None)
    assert response["Location"].endswith(f"/tokens/{body['id']}")
    assert ApiToken.objects.get(pk=body["id"]).digest == digest(body["token"])
    assert bearer(body["token"]).get("/api/v1/pools").status_code == 200


def test_the_list_shows_the_callers_tokens_newest_first_without_secrets(bob, carol):
    first, _ = token_create(user=bob, name="laptop")
    second, secret = token_create(user=bob, name="ci")
    token_create(user=carol, name="carols")
    bearer(secret).get("/api/v1/pools")

    body = client_for(bob).get(URL).json()

    assert body["count"] == 2
    assert [(t["id"], t["name"]) for t in body["results"]] == [(second.id, "ci"), (first.id, "laptop")]
    assert body["results"][0]["last_used_at"] is not None
    assert all(set(t) == {"id", "name", "created_at", "last_used_at"} for t in body["results"])
    assert secret not in str(body)


def test_a_revoked_token_stops_working_at_once(bob):
    row, secret = token_create(user=bob, name="laptop")
    assert bearer(secret).get("/api/v1/pools").status_code == 200

    response = bearer(secret).delete(f"{URL}/{row.id}")  # a token may revoke itself

    assert response.status_code == 204
    assert bearer(secret).get("/api/v1/pools").status_code == 401
    assert not ApiToken.objects.exists()


def test_a_user_cannot_revoke_another_users_token_and_learns_nothing_of_it(bob, carol):
    row, secret = token_create(user=carol, name="carols")

    hidden = client_for(bob).delete(f"{URL}/{row.id}")
    missing = client_for(bob).delete(f"{URL}/{row.id + 1000}")

    assert (hidden.status_code, missing.status_code) == (404, 404)  # alike, but for the id they repeat
    assert hidden.json() == {"detail": f"there is no token {row.id}"}
    assert bearer(secret).get("/api/v1/pools").status_code == 200


def test_an_admin_may_revoke_anyones_token(alice, carol):
    row, secret = token_create(user=carol, name="carols")

    assert client_for(alice).delete(f"{URL}/{row.id}").status_code == 204
    assert bearer(secret).get("/api/v1/pools").status_code == 401


@pytest.mark.parametrize("body, code", [
    ({}, "required"), ({"name": ""}, "blank"), ({"name": 42}, "invalid_type"), ({"name": "x" * 101}, "max_length"),
    ({"name": "a\x00b"}, "null_characters_not_allowed"), ({"name": "tab\there"}, "invalid_character"),
    ({"name": "ok", "scope": "admin"}, "unknown_field"),
])
def test_a_bad_token_name_is_refused_naming_the_field(bob, body, code):
    response = client_for(bob).post(URL, body, format="json")

    assert response.status_code == 400
    assert [e["code"] for e in response.json()["errors"]] == [code]
    assert not ApiToken.objects.exists()


def test_tokens_need_a_signed_in_caller(db):
    assert APIClient().get(URL).status_code == 401
    assert APIClient().post(URL, {"name": "x"}, format="json").status_code == 401
