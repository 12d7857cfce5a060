"""A real OpenLDAP server for the package (tests/slapd.py), and Poolweb pointed at it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from poolweb.directory_config import ldap_settings
from poolweb.models import DirectoryGroup
from tests import slapd as slapd_server


@pytest.fixture(scope="package")
def slapd(tmp_path_factory):
    missing = slapd_server.available()
    if missing:
        pytest.skip(missing)
    with slapd_server.running_slapd(tmp_path_factory.mktemp("slapd")) as server:
        yield server


def point_at(settings, monkeypatch, environment: dict[str, str]) -> None:
    """Settings as poolweb/settings.py builds them from ``environment`` (POOLWEB_LDAP_…)."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    for name, value in ldap_settings().items():
        setattr(settings, name, value)
    settings.LDAP_ENABLED = True
    settings.AUTHENTICATION_BACKENDS = ["poolweb.accounts.ThrottledModelBackend",
                                        "poolweb.directory.ldap.DirectoryLdapBackend"]


@pytest.fixture
def directory(slapd, settings, monkeypatch, db):
    """Poolweb signing in with the package's slapd, and the admin's mapping: ml-team → dev,
    vision → vision, gpu-admins → administrators."""
    point_at(settings, monkeypatch, slapd.environment())
    dev, vision = Group.objects.create(name="dev"), Group.objects.create(name="vision")
    DirectoryGroup.objects.create(name="ml-team", group=dev)
    DirectoryGroup.objects.create(name=f"cn=vision,ou=groups,{slapd_server.BASE}", group=vision)  # a DN works too
    DirectoryGroup.objects.create(name="GPU-Admins", makes_admin=True)  # case does not matter
    return slapd
