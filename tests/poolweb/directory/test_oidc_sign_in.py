"""The OIDC sign-in's edges that need no browser (the flow itself: tests/browser/test_sign_in_oidc.py):
a provider that does not answer, local passwords turned off or kept for administrators, what the
claims give."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from poolweb.directory_config import OidcProvider
from poolweb.models import DirectoryAccount, DirectoryGroup
from poolweb.ports import free_port
from poolweb.services.directory import LocalAccountTaken, directory_oidc_sign_in

pytestmark = pytest.mark.django_db


def provider(issuer: str) -> OidcProvider:
    return OidcProvider(name="Example SSO", issuer=issuer, client_id="poolweb", client_secret="secret",
                        scopes="openid profile email", groups_claim="groups", username_claim="preferred_username")


@pytest.fixture
def down(settings) -> OidcProvider:
    settings.OIDC = provider(f"http://127.0.0.1:{free_port()}/o")
    return settings.OIDC


def test_a_provider_that_does_not_answer_is_said_so_on_the_sign_in_page(down):
    client = Client()
    response = client.get("/accounts/oidc/login/", follow=True)

    assert response.redirect_chain == [("/accounts/login/", 302)]
    assert "The company directory cannot be reached right now" in response.content.decode()


def test_a_local_administrator_still_signs_in_while_it_is_down(down, settings):
    settings.LOCAL_SIGN_IN = "admins"
    User.objects.create_user("root", password="root-password", is_staff=True, is_superuser=True)
    User.objects.create_user("dana", password="dana-password")
    client = Client()

    assert client.post("/accounts/login/", {"username": "dana", "password": "dana-password"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "root", "password": "root-password"}).status_code == 302


def test_with_local_passwords_off_the_page_offers_only_the_provider_and_no_password_signs_in(down, settings):
    settings.LOCAL_SIGN_IN = "off"
    User.objects.create_user("root", password="root-password", is_staff=True, is_superuser=True)
    client = Client()

    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Example SSO" in page and 'name="password"' not in page
    assert client.post("/accounts/login/", {"username": "root", "password": "root-password"}).status_code == 200
    assert "_auth_user_id" not in client.session


def test_without_a_provider_its_pages_do_not_exist(settings):
    settings.OIDC = None

    assert Client().get("/accounts/oidc/login/").status_code == 404
    assert "Sign in with" not in Client().get("/accounts/login/").content.decode()


def test_it_goes_back_only_to_this_sites_pages(down):
    client = Client()
    client.get("/accounts/oidc/login/?next=https://elsewhere.example/")
    assert client.session["poolweb_oidc_next"] == "/"
    client.get("/accounts/oidc/login/?next=/requests/")
    assert client.session["poolweb_oidc_next"] == "/requests/"


CLAIMS = {"sub": "0f3c", "preferred_username": "ada", "email": "ada@example.org", "given_name": "Ada"}


def test_the_claims_name_the_user_and_the_groups_claim_maps_to_groups():
    dev = Group.objects.create(name="dev")
    DirectoryGroup.objects.create(name="/ml-team", group=dev)  # Keycloak's full group path

    user = directory_oidc_sign_in(claims={**CLAIMS, "groups": ["/ml-team", "/other"]}, groups_claim="groups",
                                  username_claim="preferred_username")

    assert (user.username, user.email, user.first_name) == ("ada", "ada@example.org", "Ada")
    assert set(user.groups.all()) == {dev}
    assert DirectoryAccount.objects.get(user=user).subject == "0f3c"


def test_the_subject_not_the_name_finds_the_user_again():
    first = directory_oidc_sign_in(claims={**CLAIMS, "groups": []}, groups_claim="groups", username_claim="preferred_username")
    renamed = directory_oidc_sign_in(claims={**CLAIMS, "preferred_username": "ada.l", "groups": "one-group"},
                                     groups_claim="groups", username_claim="preferred_username")

    assert renamed.pk == first.pk


def test_a_local_administrators_name_is_refused():
    User.objects.create_user("ada", is_staff=True, is_superuser=True)

    with pytest.raises(LocalAccountTaken):
        directory_oidc_sign_in(claims={**CLAIMS, "groups": []}, groups_claim="groups", username_claim="preferred_username")


def test_the_admins_sign_in_offers_the_provider(down):
    page = Client().get("/admin/login/?next=/admin/").content.decode()

    assert 'href="/accounts/oidc/login/?next=/admin/"' in page and "Sign in with Example SSO" in page


def test_the_admins_sign_in_without_a_provider_is_djangos(settings):
    settings.OIDC = None

    page = Client().get("/admin/login/").content.decode()

    assert "Sign in with" not in page and 'name="password"' in page


def test_another_subject_under_a_known_name_is_refused():
    first = directory_oidc_sign_in(claims={**CLAIMS, "groups": []}, groups_claim="groups", username_claim="preferred_username")

    with pytest.raises(LocalAccountTaken, match="an account of OpenID Connect is named 'ada'"):
        directory_oidc_sign_in(claims={**CLAIMS, "sub": "other", "groups": []}, groups_claim="groups",
                               username_claim="preferred_username")
    assert DirectoryAccount.objects.get().user == first and DirectoryAccount.objects.get().subject == "0f3c"


class Userinfo:
    def __init__(self, answer: dict) -> None:
        self.answer = answer

    def userinfo(self, token):
        return self.answer


@pytest.mark.parametrize(("token", "userinfo", "expected"), [
    ({"userinfo": {"sub": "0f3c", "groups": ["a"]}}, None, {"sub": "0f3c", "groups": ["a"]}),
    ({"userinfo": {"sub": "0f3c", "email": "ada@example.org"}}, {"sub": "0f3c", "groups": ["a"], "email": "x@y"},
     {"sub": "0f3c", "groups": ["a"], "email": "ada@example.org"}),
    ({"userinfo": {"sub": "0f3c"}}, {"sub": "someone-else", "groups": ["a"]}, "userinfo_subject_mismatch"),
    ({"access_token": "…"}, None, "no_id_token"),
])
def test_the_claims_come_from_the_id_token_and_userinfo_of_the_same_subject(monkeypatch, token, userinfo, expected):
    from authlib.integrations.base_client import OAuthError

    from poolweb.directory import oidc

    monkeypatch.setattr(oidc, "provider_client", lambda provider: Userinfo(userinfo))
    if isinstance(expected, str):
        with pytest.raises(OAuthError) as raised:
            oidc.checked_claims(provider("https://sso.example.org"), token)
        assert raised.value.error == expected
    else:
        assert oidc.checked_claims(provider("https://sso.example.org"), token) == expected
