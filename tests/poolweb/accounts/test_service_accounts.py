"""Service accounts (decisions 190-192): ``manage.py service_account create/list/token/revoke``,
each audited; a revoked account's tokens are 401 at once; no password or directory sign-in; the
permission to submit for others works through one."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from poolweb.models import ApiToken, AuditEntry, ServiceAccount, SignInFailure
from poolweb.selectors.service_accounts import is_service_account
from poolweb.services.directory import LocalAccountTaken, directory_oidc_sign_in
from poolweb.services.service_accounts import ServiceAccountInvalid, service_account_create

from tests.poolweb.conftest import signed_in

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("service_account", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue().strip()


def calls_with(token: str, path: str = "/api/v1/me") -> int:
    return APIClient().get(path, HTTP_AUTHORIZATION=f"Bearer {token}").status_code


def actions() -> list[tuple[str, str, str]]:
    return [(e.action, e.target, e.origin) for e in AuditEntry.objects.order_by("id")]


def test_create_makes_a_marked_account_without_a_password_and_prints_its_token_alone(provisioned):
    token, said = run("create", "slurm-bridge", "--description", "the Slurm bridge", "--submit-for-others")

    user = User.objects.get(username="slurm-bridge")
    assert is_service_account(user) and not user.has_usable_password() and not user.is_staff
    assert ServiceAccount.objects.get(user=user).description == "the Slurm bridge"
    assert "\n" not in token and ApiToken.objects.get(user=user).prefix == token[:8]
    assert "shown this once" in said
    assert calls_with(token) == 200
    assert user.has_perm("poolweb.submit_for_others")


def test_create_is_audited_with_the_grant_and_the_token_in_one_go(provisioned):
    before = AuditEntry.objects.count()
    token, _ = run("create", "slurm-bridge", "--admin", "--submit-for-others")

    assert actions()[before:] == [("service_account.create", "user:slurm-bridge", "manage.py"),
                                  ("permission.grant", "user:slurm-bridge", "manage.py"),
                                  ("token.create", f"token:{token[:8]}", "manage.py")]
    created = AuditEntry.objects.get(action="service_account.create")
    assert created.detail["rights"] == ["admin", "submit_for_others"] and created.actor_id is None


def test_a_name_that_is_taken_or_not_a_username_is_refused_and_creates_nothing(bob):
    with pytest.raises(CommandError, match="a user named 'Bob' exists already"):
        run("create", "Bob")
    with pytest.raises(CommandError, match="name may hold only letters"):
        run("create", "two words")
    with pytest.raises(ServiceAccountInvalid) as refused:
        service_account_create(name="ok", description="x" * 201)
    assert refused.value.field == "description"
    assert not ServiceAccount.objects.exists() and not AuditEntry.objects.exists()


def test_list_shows_rights_tokens_and_whether_active(provisioned):
    first, _ = run("create", "slurm-bridge", "--admin", "--submit-for-others", "--description", "bridge")
    second, _ = run("token", "slurm-bridge", "--name", "rotation")
    run("create", "exporter")
    calls_with(first)
    run("revoke", "exporter")

    listed = {row["name"]: row for row in json.loads(run("list", "--json")[0])}

    bridge = listed["slurm-bridge"]
    assert (bridge["active"], bridge["description"], bridge["rights"]) == (True, "bridge",
                                                                         ["admin", "poolweb.submit_for_others"])
    assert [(t["name"], t["prefix"]) for t in bridge["tokens"]] == [("rotation", second[:8]),
                                                                    ("service account", first[:8])]
    assert bridge["tokens"][1]["last_used_at"] is not None and bridge["tokens"][0]["last_used_at"] is None
    assert (listed["exporter"]["active"], listed["exporter"]["tokens"], listed["exporter"]["rights"]) == (False, [], [])
    assert listed["exporter"]["revoked_at"] is not None
    text = run("list")[0]
    assert "slurm-bridge (active) — bridge" in text and "exporter (revoked)" in text
    assert f"{second[:8]}… 'rotation', last used never" in text


def test_another_token_works_beside_the_first_and_is_audited(provisioned):
    first, _ = run("create", "slurm-bridge")
    second, _ = run("token", "slurm-bridge")

    assert first != second and calls_with(first) == calls_with(second) == 200
    assert actions()[-1] == ("token.create", f"token:{second[:8]}", "manage.py")


def test_token_and_revoke_refuse_a_persons_account(bob):
    with pytest.raises(CommandError, match="no service account named 'bob'"):
        run("token", "bob")
    with pytest.raises(CommandError, match="no service account named 'bob'"):
        run("revoke", "bob")
    assert User.objects.get(username="bob").is_active and not AuditEntry.objects.exists()


def test_revoke_makes_every_token_401_at_once_and_is_audited(provisioned):
    first, _ = run("create", "slurm-bridge", "--submit-for-others")
    second, _ = run("token", "slurm-bridge")
    before = AuditEntry.objects.count()

    assert run("revoke", "slurm-bridge")[0] == "revoked the service account slurm-bridge and its 2 token(s)"

    assert calls_with(first) == calls_with(second) == 401
    assert not User.objects.get(username="slurm-bridge").is_active
    assert actions()[before] == ("service_account.revoke", "user:slurm-bridge", "manage.py")
    assert sorted(actions()[before + 1:]) == sorted([("token.revoke", f"token:{first[:8]}", "manage.py"),
                                                     ("token.revoke", f"token:{second[:8]}", "manage.py")])


def test_revoking_twice_changes_and_records_nothing_and_a_revoked_account_gets_no_token(provisioned):
    run("create", "slurm-bridge")
    run("revoke", "slurm-bridge")
    recorded = AuditEntry.objects.count()

    assert run("revoke", "slurm-bridge")[0] == "slurm-bridge was revoked already"
    with pytest.raises(CommandError, match="is revoked: it gets no new token"):
        run("token", "slurm-bridge")
    assert AuditEntry.objects.count() == recorded and not ApiToken.objects.exists()


@pytest.mark.parametrize("login", ["/accounts/login/", "/admin/login/"])
def test_a_service_account_cannot_sign_in_with_a_password_even_one_set_by_hand(login):
    run("create", "slurm-bridge", "--admin")
    user = User.objects.get(username="slurm-bridge")
    user.set_password("set-by-hand")
    user.save()

    client = Client()
    response = client.post(login, {"username": "slurm-bridge", "password": "set-by-hand"})

    assert response.status_code == 200 and "_auth_user_id" not in client.session  # the form again, not a redirect
    assert SignInFailure.objects.filter(username="slurm-bridge").count() == 1  # counted as a wrong password is


def test_the_directory_never_takes_a_service_accounts_name():
    run("create", "slurm-bridge", "--admin")

    with pytest.raises(LocalAccountTaken, match="a service account is named 'slurm-bridge'"):
        directory_oidc_sign_in(claims={"sub": "77", "preferred_username": "slurm-bridge", "groups": []},
                               groups_claim="groups", username_claim="preferred_username")
    user = User.objects.get(username="slurm-bridge")
    assert not hasattr(user, "directory_account") and user.is_staff and not user.is_superuser


def test_its_permission_submits_for_another_user(provisioned, bob):
    token, _ = run("create", "slurm-bridge", "--submit-for-others")

    response = APIClient().post("/api/v1/requests", {"policy": "dev", "profile": "half", "owner": "bob"},
                                format="json", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 201, response.json()
    assert (response.json()["owner"], response.json()["submitted_by"]) == ("bob", "slurm-bridge")


def test_without_the_permission_it_may_not_submit_for_another_user(provisioned, bob):
    token, _ = run("create", "exporter", "--admin")

    response = APIClient().post("/api/v1/requests", {"policy": "dev", "profile": "half", "owner": "bob"},
                                format="json", HTTP_AUTHORIZATION=f"Bearer {token}")

    assert response.status_code == 403


def test_the_admin_lists_service_accounts_with_their_rights_and_tokens(alice):
    token, _ = run("create", "slurm-bridge", "--submit-for-others", "--description", "the Slurm bridge")
    client = Client()
    client.force_login(alice)

    page = client.get("/admin/poolweb/serviceaccount/").content.decode()
    users = client.get("/admin/auth/user/?service_account=yes").content.decode()

    assert "the Slurm bridge" in page and "poolweb.submit_for_others" in page and f"{token[:8]}… (never used)" in page
    assert "slurm-bridge" in users and "alice" not in users.split("result_list")[1]
    assert client.get(f"/admin/poolweb/serviceaccount/{ServiceAccount.objects.get().pk}/change/").status_code == 200


def test_granting_the_permission_to_a_person_works_with_a_warning(carol):
    out, err = StringIO(), StringIO()
    call_command("grant_submit_for_others", "carol", stdout=out, stderr=err)

    assert out.getvalue().strip() == "carol may submit requests for other users"
    assert "warning: carol is not a service account" in err.getvalue()
    assert User.objects.get(username="carol").has_perm("poolweb.submit_for_others")


def test_granting_it_to_a_service_account_needs_no_warning():
    run("create", "slurm-bridge")
    err = StringIO()
    call_command("grant_submit_for_others", "slurm-bridge", stdout=StringIO(), stderr=err)

    assert err.getvalue() == ""


def test_the_audit_page_says_what_was_done_to_a_service_account_and_filters_by_it(alice):
    run("create", "slurm-bridge")
    run("revoke", "slurm-bridge")

    html = signed_in(alice).get("/audit/", {"action": "service_account.revoke"}).content.decode()

    assert "revoked a service account" in html and "created a service account" not in html
    assert "1 matching" in html
