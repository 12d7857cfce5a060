"""POOLWEB_LDAP_… and POOLWEB_OIDC_…: off unless set, and a bad value stops the start naming it."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from poolweb.directory_config import ldap_settings, oidc_provider
from poolweb.env import ImproperlyConfigured

LDAP = {"POOLWEB_LDAP_URL": "ldap://directory.example.org", "POOLWEB_LDAP_USER_BASE": "ou=people,dc=example,dc=org"}
OIDC = {"POOLWEB_OIDC_ISSUER": "https://sso.example.org/realms/acme", "POOLWEB_OIDC_CLIENT_ID": "poolweb",
        "POOLWEB_OIDC_CLIENT_SECRET": "secret"}


needs_python_ldap = pytest.mark.skipif(not importlib.util.find_spec("ldap"),
                                       reason="python-ldap is not installed (pip install -e '.[ldap]'; .ci/run does)")


@pytest.fixture
def environment(monkeypatch):
    for name in [*LDAP, *OIDC, "POOLWEB_LDAP_STARTTLS", "POOLWEB_LDAP_GROUP_TYPE", "POOLWEB_OIDC_SCOPES"]:
        monkeypatch.delenv(name, raising=False)

    def set_(values: dict[str, str]) -> None:
        for name, value in values.items():
            monkeypatch.setenv(name, value)

    return set_


def test_without_python_ldap_the_start_says_which_extra_to_install(environment, monkeypatch):
    monkeypatch.setitem(sys.modules, "ldap", None)  # import ldap raises ImportError
    environment(LDAP)

    with pytest.raises(ImproperlyConfigured, match=r"pip install -e '\.\[ldap\]'"):
        ldap_settings()


def test_both_are_off_unless_configured(environment):
    assert ldap_settings() == {}
    assert oidc_provider() is None


@needs_python_ldap
def test_ldap_configured(environment):
    environment({**LDAP, "POOLWEB_LDAP_STARTTLS": "on", "POOLWEB_LDAP_GROUP_TYPE": "activeDirectory"})

    configured = ldap_settings()

    assert configured["AUTH_LDAP_SERVER_URI"] == "ldap://directory.example.org"
    assert configured["AUTH_LDAP_START_TLS"] is True
    assert type(configured["AUTH_LDAP_GROUP_TYPE"]).__name__ == "NestedActiveDirectoryGroupType"
    assert configured["AUTH_LDAP_GROUP_SEARCH"].filterstr == "(objectClass=group)"
    assert configured["AUTH_LDAP_USER_SEARCH"].base_dn == "ou=people,dc=example,dc=org"


@pytest.mark.parametrize(("values", "named"), [
    ({**LDAP, "POOLWEB_LDAP_URL": "http://directory.example.org"}, "POOLWEB_LDAP_URL"),
    ({"POOLWEB_LDAP_URL": "ldap://directory.example.org"}, "POOLWEB_LDAP_USER_BASE"),
    ({**LDAP, "POOLWEB_LDAP_URL": "ldaps://directory.example.org", "POOLWEB_LDAP_STARTTLS": "on"}, "POOLWEB_LDAP_STARTTLS"),
    ({**LDAP, "POOLWEB_LDAP_GROUP_TYPE": "groups"}, "POOLWEB_LDAP_GROUP_TYPE"),
])
@needs_python_ldap
def test_a_bad_ldap_setting_is_named(environment, values, named):
    environment(values)

    with pytest.raises(ImproperlyConfigured, match=named):
        ldap_settings()


def test_oidc_configured(environment):
    environment(OIDC)

    found = oidc_provider()

    assert found.discovery_url == "https://sso.example.org/realms/acme/.well-known/openid-configuration"
    assert (found.scopes, found.groups_claim, found.username_claim) == ("openid profile email", "groups",
                                                                       "preferred_username")


@pytest.mark.parametrize(("values", "named"), [
    ({**OIDC, "POOLWEB_OIDC_ISSUER": "sso.example.org"}, "POOLWEB_OIDC_ISSUER"),
    ({**OIDC, "POOLWEB_OIDC_CLIENT_SECRET": ""}, "POOLWEB_OIDC_CLIENT_SECRET"),
    ({**OIDC, "POOLWEB_OIDC_SCOPES": "profile email"}, "POOLWEB_OIDC_SCOPES"),
])
def test_a_bad_oidc_setting_is_named(environment, values, named):
    environment(values)

    with pytest.raises(ImproperlyConfigured, match=named):
        oidc_provider()
