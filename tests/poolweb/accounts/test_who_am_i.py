"""``GET /api/v1/me``: who the caller is (docs/api.md §5)."""

from __future__ import annotations

import pytest

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db


def test_a_member_learns_their_name_and_teams(bob):
    assert client_for(bob).get("/api/v1/me").json() == {"username": "bob", "is_admin": False, "groups": ["dev"]}


def test_an_admin_is_told_so(alice):
    assert client_for(alice).get("/api/v1/me").json()["is_admin"] is True


def test_nobody_signed_in_is_refused(db):
    assert client_for(None).get("/api/v1/me").status_code in (401, 403)
