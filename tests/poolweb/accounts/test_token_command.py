"""Bearer tokens: ``manage.py create_api_token USERNAME`` and ``Authorization: Bearer <token>``."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import ManagementUtility, call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from poolweb.models import ApiToken

pytestmark = pytest.mark.django_db

PATH = "/api/v1/pools"




def create_token(username: str) -> str:
    out, err = StringIO(), StringIO()
    call_command("create_api_token", username, stdout=out, stderr=err)
    return out.getvalue().strip()


def get_with(authorization: str | bytes):
    return APIClient().get(PATH, HTTP_AUTHORIZATION=authorization)


def test_the_printed_token_authenticates_its_user(bob):
    token = create_token("bob")

    response = get_with(f"Bearer {token}")

    assert response.status_code == 200
    assert ApiToken.objects.get().last_used_at is not None


def test_the_command_prints_the_token_alone_on_one_line(bob):
    out = StringIO()
    call_command("create_api_token", "bob", stdout=out)

    lines = out.getvalue().splitlines()

    assert len(lines) == 1 and len(lines[0]) >= 40 and " " not in lines[0]


def test_only_the_sha256_of_the_token_is_stored(bob):
    token = create_token("bob")

    stored = ApiToken.objects.get(user=bob)

    assert stored.digest == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {stored.digest, stored.prefix}
    assert token.startswith(stored.prefix) and len(stored.prefix) < len(token)


def test_each_run_prints_a_new_token_and_both_keep_working(bob):
    first, second = create_token("bob"), create_token("bob")

    assert first != second
    assert ApiToken.objects.filter(user=bob).count() == 2
    assert get_with(f"Bearer {first}").status_code == 200
    assert get_with(f"Bearer {second}").status_code == 200


def test_an_unknown_user_is_a_command_error_naming_it(db):
    with pytest.raises(CommandError, match="nobody") as raised:
        call_command("create_api_token", "nobody")

    assert raised.value.returncode == 1
    assert not ApiToken.objects.exists()


def test_an_unknown_user_exits_with_status_1_from_the_command_line(db, capsys):
    with pytest.raises(SystemExit) as exited:
        ManagementUtility(["manage.py", "create_api_token", "nobody"]).execute()

    assert exited.value.code == 1
    assert "nobody" in capsys.readouterr().err


def test_the_username_is_required(db):
    with pytest.raises(CommandError):
        call_command("create_api_token")


@pytest.mark.parametrize("authorization", [
    "Bearer not-a-token",
    "Bearer",  # no token
    "Bearer two tokens",
    "Bearer " + "x" * 5000,
    b"Bearer \xff\xfe",  # not UTF-8
])
def test_a_wrong_or_malformed_bearer_header_is_401(bob, authorization):
    create_token("bob")

    response = get_with(authorization)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("authorization", ["Token abc", "Basic Ym9iOmJvYi1wYXNzd29yZA==", "bearer-ish"])
def test_another_scheme_is_not_authentication_and_gets_401(bob, authorization):
    response = get_with(authorization)

    assert response.status_code == 401


def test_a_token_stops_working_when_its_user_is_deleted(bob):
    token = create_token("bob")
    User.objects.filter(pk=bob.pk).delete()

    assert get_with(f"Bearer {token}").status_code == 401


def test_an_inactive_users_token_is_401(bob):
    token = create_token("bob")
    bob.is_active = False
    bob.save()

    assert get_with(f"Bearer {token}").status_code == 401


def test_a_token_made_for_an_inactive_user_warns_and_only_works_once_active(bob):
    bob.is_active = False
    bob.save()
    out, err = StringIO(), StringIO()
    call_command("create_api_token", "bob", stdout=out, stderr=err)
    token = out.getvalue().strip()

    assert "inactive" in err.getvalue()
    assert get_with(f"Bearer {token}").status_code == 401
    bob.is_active = True
    bob.save()
    assert get_with(f"Bearer {token}").status_code == 200


def test_a_bearer_token_needs_no_csrf_token_for_writes(bob):
    token = create_token("bob")
    client = APIClient(enforce_csrf_checks=True)

    response = client.post("/api/v1/requests", {"policy": "nope", "profile": "nope"}, format="json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code != 403  # judged on its content (400: unknown queue), not refused for CSRF


def test_a_browser_session_must_send_the_csrf_token_for_writes(bob):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="bob", password="bob-password")

    response = client.post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json")

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


# --- names, listing and revoking from the command line ----------------------------------------

def test_a_token_is_named_by_the_command_unless_told_otherwise(bob):
    create_token("bob")
    call_command("create_api_token", "bob", "--name", "ci", stdout=StringIO())

    assert sorted(ApiToken.objects.values_list("name", flat=True)) == ["ci", "create_api_token"]


def test_the_list_command_prints_one_tab_separated_line_per_token_and_never_a_secret(bob, carol):
    secret = create_token("bob")
    call_command("create_api_token", "carol", "--name", "laptop", stdout=StringIO())
    everyone, bobs = StringIO(), StringIO()

    call_command("list_api_tokens", stdout=everyone)
    call_command("list_api_tokens", "bob", stdout=bobs)

    rows = [line.split("\t") for line in everyone.getvalue().splitlines()]
    assert [(row[1], row[2], row[4]) for row in rows] == [("carol", "laptop", "never"), ("bob", "create_api_token", "never")]
    assert len(bobs.getvalue().splitlines()) == 1
    assert secret not in everyone.getvalue()


def test_the_revoke_command_revokes_by_id_or_every_token_of_a_user(bob, carol):
    first, second = create_token("bob"), create_token("bob")
    carols = create_token("carol")
    first_id = ApiToken.objects.get(digest=hashlib.sha256(first.encode()).hexdigest()).pk

    call_command("revoke_api_token", str(first_id), stdout=StringIO())
    assert (get_with(f"Bearer {first}").status_code, get_with(f"Bearer {second}").status_code) == (401, 200)
    call_command("revoke_api_token", "--user", "bob", stdout=StringIO())
    assert get_with(f"Bearer {second}").status_code == 401
    assert get_with(f"Bearer {carols}").status_code == 200


def test_revoking_an_unknown_id_is_an_error_and_revokes_nothing(bob):
    token = create_token("bob")
    known = ApiToken.objects.get().pk

    with pytest.raises(CommandError, match="no token 999"):
        call_command("revoke_api_token", str(known), "999")

    assert get_with(f"Bearer {token}").status_code == 200
