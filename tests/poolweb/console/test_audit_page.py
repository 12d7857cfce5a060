"""The audit page (``/audit/``): admins only, linked from their header, the entries newest first,
filtered as ``GET /api/v1/audit`` and paged."""

from __future__ import annotations

import pytest

from poolweb.models import AuditEntry
from poolweb.services.config import management_set
from poolweb.services.tokens import token_create

from tests.poolweb.conftest import signed_in

pytestmark = pytest.mark.django_db
URL = "/audit/"


@pytest.fixture
def log(provisioned, alice, bob):
    management_set(enabled=False, user=alice)
    token_create(user=bob, name="laptop")


def test_an_admin_sees_every_entry_newest_first_with_links_to_its_objects(log, alice):
    response = signed_in(alice).get(URL)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("created an API token") < html.index("switched resource management") < html.index(
        "provisioned a configuration version")
    assert '<a href="/versions/1/">version:1</a>' in html
    assert "on → off" in html and "0 → 1" in html
    assert '<a href="/audit/" aria-current="page">Audit</a>' in html


def test_a_filter_narrows_the_table(log, alice):
    html = signed_in(alice).get(URL, {"action": "management.switch"}).content.decode()

    assert "switched resource management" in html and "created an API token" not in html
    assert "1 matching" in html


def test_a_bad_filter_is_400_naming_it_and_shows_nothing(log, alice):
    response = signed_in(alice).get(URL, {"since": "yesterday"})

    html = response.content.decode()
    assert response.status_code == 400
    assert "<b>since</b>" in html and 'role="alert"' in html and "Audit log" not in html


def test_a_member_is_refused_and_has_no_link(log, bob):
    member = signed_in(bob)

    assert member.get(URL).status_code == 403
    assert 'href="/audit/"' not in member.get("/requests/").content.decode()


def test_an_admin_has_the_link(log, alice):
    assert '<a href="/audit/">Audit</a>' in signed_in(alice).get("/requests/").content.decode()


def test_a_stranger_is_sent_to_sign_in(db, client):
    response = client.get(URL)

    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_pages_of_fifty(log, alice):
    AuditEntry.objects.bulk_create([AuditEntry(actor="alice", origin="manage.py", action="draft.reset",
                                               target="draft") for _ in range(60)])

    first = signed_in(alice).get(URL).content.decode()
    second = signed_in(alice).get(URL, {"page": 2}).content.decode()

    assert "Page 1 of 2" in first and first.count("<tr>") == 51  # the head's row and 50
    assert second.count("<tr>") == 1 + 63 - 50
