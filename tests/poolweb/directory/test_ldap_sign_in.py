"""Signing in with the directory's LDAP password, against a real slapd (tests/slapd.py): the
user is created with the groups the admin's mapping gives, follows the directory at each sign-in
and, for tokens, at each re-check; a disabled user is refused; a directory that is down is said
so, and a local administrator may still sign in."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from poolweb.models import DirectoryAccount, SignInFailure
from poolweb.ports import free_port
from poolweb.realtime.auth import Credential, refusal
from poolweb.services.service_accounts import service_account_create
from poolweb.services.tokens import token_issue
from tests.slapd import BASE, password

from .conftest import point_at

ldap = pytest.importorskip("ldap", reason="python-ldap is not installed (pip install -e '.[ldap]'; .ci/run does)")
pytestmark = pytest.mark.django_db


def sign_in(username: str, secret: str | None = None) -> tuple[Client, object]:
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": secret or password(username)})
    return client, response


def groups_of(username: str) -> set[str]:
    return set(User.objects.get(username=username).groups.values_list("name", flat=True))


@pytest.fixture
def membership(directory):
    """``membership(user, group, present)`` changes the directory; undone after the test."""
    undo = []

    def change(user: str, group: str, present: bool) -> None:
        dn, member = f"cn={group},ou=groups,{BASE}", [f"uid={user},ou=people,{BASE}".encode()]
        directory.modify(dn, [(ldap.MOD_ADD if present else ldap.MOD_DELETE, "member", member)])
        undo.append((dn, [(ldap.MOD_DELETE if present else ldap.MOD_ADD, "member", member)]))

    yield change
    for dn, changes in reversed(undo):
        directory.modify(dn, changes)


@pytest.fixture
def lock(directory):
    """``lock(user)`` disables the user in the directory; unlocked after the test."""
    locked = []

    def disable(user: str) -> None:
        dn = f"uid={user},ou=people,{BASE}"
        directory.modify(dn, [(ldap.MOD_ADD, "pwdAccountLockedTime", [b"000001010000Z"])])
        locked.append(dn)

    yield disable
    for dn in locked:
        directory.modify(dn, [(ldap.MOD_DELETE, "pwdAccountLockedTime", None)])


def test_the_first_sign_in_creates_the_user_with_the_groups_the_mapping_gives(directory):
    client, response = sign_in("bea")

    assert response.status_code == 302 and response["Location"] == "/"
    bea = User.objects.get(username="bea")
    assert groups_of("bea") == {"dev", "vision"}  # ml-team by name, vision by its DN
    assert (bea.is_active, bea.is_staff, bea.is_superuser) == (True, False, False)
    assert (bea.first_name, bea.last_name, bea.email) == ("Bea", "Example", "bea@example.org")
    assert not bea.has_usable_password()
    account = DirectoryAccount.objects.get(user=bea)
    assert (account.source, account.subject) == ("ldap", f"uid=bea,ou=people,{BASE}")
    assert client.get("/").status_code == 200


def test_the_name_is_kept_in_lower_case_whatever_case_is_typed(directory):
    assert sign_in("BEA", password("bea"))[1].status_code == 302
    assert sign_in("bea")[1].status_code == 302

    assert list(User.objects.values_list("username", flat=True)) == ["bea"]


def test_a_directory_group_that_makes_admins_makes_an_administrator(directory):
    sign_in("ada")

    ada = User.objects.get(username="ada")
    assert (ada.is_staff, ada.is_superuser) == (True, True)
    assert groups_of("ada") == {"dev"}


def test_a_wrong_password_is_refused_and_counted(directory):
    client, response = sign_in("bea", "not-her-password")

    assert response.status_code == 200
    assert "didn&#x27;t match" in response.content.decode()
    assert not User.objects.filter(username="bea").exists()
    assert SignInFailure.objects.filter(username="bea").count() == 1  # once, though two backends tried


def test_a_group_removed_in_the_directory_is_removed_at_the_next_sign_in(directory, membership):
    sign_in("bea")
    hand_filled = Group.objects.create(name="reviewers")  # no mapping names it: the admin's
    User.objects.get(username="bea").groups.add(hand_filled)

    membership("bea", "vision", present=False)
    sign_in("bea")

    assert groups_of("bea") == {"dev", "reviewers"}


def test_a_disabled_directory_user_cannot_sign_in(directory):
    _, response = sign_in("cyd")

    assert response.status_code == 200
    assert "didn&#x27;t match" in response.content.decode()
    assert not User.objects.filter(username="cyd").exists()


def test_a_disabled_users_tokens_stop_working_at_the_next_re_check(directory, lock, settings):
    sign_in("bea")
    bea = User.objects.get(username="bea")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=bea)}")
    stream = Credential(bea.pk, False, token_id=bea.api_tokens.get().pk)

    lock("bea")
    assert api.get("/api/v1/me").status_code == 200  # the directory answered less than 5 minutes ago
    DirectoryAccount.objects.filter(user=bea).update(checked_at=timezone.now() - timedelta(minutes=5))

    assert api.get("/api/v1/me").status_code == 401
    bea.refresh_from_db()
    assert not bea.is_active and groups_of("bea") == set()
    assert type(refusal(stream)).__name__ == "AccountDisabled"  # an open stream closes at its next check
    assert sign_in("bea")[1].status_code == 200  # and no sign-in


def test_an_open_stream_re_checks_the_directory_itself(directory, lock):
    sign_in("bea")
    bea = User.objects.get(username="bea")
    stream = Credential(bea.pk, False, token_id=None)
    lock("bea")
    assert refusal(stream) is None
    DirectoryAccount.objects.filter(user=bea).update(checked_at=timezone.now() - timedelta(minutes=6))

    assert type(refusal(stream)).__name__ == "AccountDisabled"


def test_a_token_re_check_follows_the_groups_too(directory, membership):
    sign_in("bea")
    bea = User.objects.get(username="bea")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=bea)}")
    membership("bea", "gpu-admins", present=True)
    membership("bea", "ml-team", present=False)
    DirectoryAccount.objects.filter(user=bea).update(checked_at=timezone.now() - timedelta(minutes=5))

    assert api.get("/api/v1/me").json()["is_admin"] is True
    assert groups_of("bea") == {"vision"}


def test_a_directory_that_is_down_is_said_so_and_a_local_admin_still_signs_in(directory, settings, monkeypatch):
    point_at(settings, monkeypatch, directory.environment(POOLWEB_LDAP_URL=f"ldap://127.0.0.1:{free_port()}"))
    settings.LOCAL_SIGN_IN = "admins"
    User.objects.create_user("root", password="root-password", is_staff=True, is_superuser=True)
    User.objects.create_user("dana", password="dana-password")  # local, not an admin

    _, response = sign_in("bea")
    assert response.status_code == 200
    assert "The company directory cannot be reached right now" in response.content.decode()
    _, response = sign_in("dana", "dana-password")
    assert "cannot be reached" in response.content.decode()  # a local member: not with LOCAL_SIGN_IN=admins
    assert "_auth_user_id" not in response.wsgi_request.session

    client, response = sign_in("root", "root-password")
    assert response.status_code == 302
    assert client.get("/").status_code == 200


def test_while_the_directory_is_down_a_token_keeps_its_last_answer(directory, settings, monkeypatch):
    sign_in("bea")
    bea = User.objects.get(username="bea")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=bea)}")
    point_at(settings, monkeypatch, directory.environment(POOLWEB_LDAP_URL=f"ldap://127.0.0.1:{free_port()}"))
    old = timezone.now() - timedelta(minutes=10)
    DirectoryAccount.objects.filter(user=bea).update(checked_at=old)

    assert api.get("/api/v1/me").status_code == 200
    assert DirectoryAccount.objects.get(user=bea).checked_at == old  # asked again at the next use


def test_a_local_administrators_name_is_not_taken_over_by_the_directory(directory):
    User.objects.create_user("ada", password="local-password", is_staff=True, is_superuser=True)

    _, response = sign_in("ada")

    assert "a local administrator account is named" in response.content.decode()
    assert not DirectoryAccount.objects.exists()


def test_a_service_accounts_name_is_not_taken_over_by_the_directory(directory):
    service_account_create(name="ada", admin=True)

    _, response = sign_in("ada")

    assert "a service account is named" in response.content.decode()
    assert not DirectoryAccount.objects.exists()
    ada = User.objects.get(username="ada")
    assert (ada.is_staff, ada.is_superuser, ada.has_usable_password()) == (True, False, False)


def test_a_local_member_of_that_name_is_adopted(directory):
    bea = User.objects.create_user("bea", password="local-password")

    sign_in("bea")

    assert DirectoryAccount.objects.get().user == bea
    bea.refresh_from_db()
    assert not bea.has_usable_password()
    assert sign_in("bea", "local-password")[1].status_code == 200  # the old password no longer signs in


@pytest.mark.parametrize("tls", ["starttls", "ldaps"])
def test_it_signs_in_over_tls_checking_the_servers_certificate(directory, settings, monkeypatch, tls):
    url = directory.url if tls == "starttls" else directory.tls_url
    point_at(settings, monkeypatch, directory.environment(
        POOLWEB_LDAP_URL=url, POOLWEB_LDAP_STARTTLS="on" if tls == "starttls" else "off",
        POOLWEB_LDAP_CA_FILE=directory.ca_file))

    assert sign_in("bea")[1].status_code == 302


def test_a_certificate_it_cannot_check_is_no_sign_in(directory, settings, monkeypatch, tmp_path):
    other_ca = tmp_path / "other.pem"
    from tests.slapd import write_certificates
    write_certificates(tmp_path)
    other_ca.write_bytes((tmp_path / "ca.pem").read_bytes())
    point_at(settings, monkeypatch, directory.environment(
        POOLWEB_LDAP_URL=directory.tls_url, POOLWEB_LDAP_CA_FILE=str(other_ca)))

    _, response = sign_in("bea")

    assert response.status_code == 200 and not User.objects.filter(username="bea").exists()


def test_a_team_member_from_the_directory_submits_to_the_teams_policy_until_removed(directory, membership, provisioned):
    """The issue's "done when": no admin touches users or groups; the directory decides."""
    sign_in("bea")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=User.objects.get(username='bea'))}")
    submission = {"policy": "dev", "profile": "half"}

    assert api.post("/api/v1/requests", submission, format="json").status_code == 201
    membership("bea", "ml-team", present=False)
    DirectoryAccount.objects.update(checked_at=timezone.now() - timedelta(minutes=5))

    refused = api.post("/api/v1/requests", submission, format="json")
    assert refused.status_code == 403, refused.json()
    assert groups_of("bea") == {"vision"}


def test_the_admins_sign_in_says_the_directory_is_down_too(directory, settings, monkeypatch):
    point_at(settings, monkeypatch, directory.environment(POOLWEB_LDAP_URL=f"ldap://127.0.0.1:{free_port()}"))

    response = Client().post("/admin/login/", {"username": "ada", "password": password("ada"), "next": "/admin/"})

    assert response.status_code == 200
    assert "The company directory cannot be reached right now" in response.content.decode()
