"""The Django admin: requests and configuration versions to read (never to change), tokens to
list and revoke, as an operator looks at a running service."""

from __future__ import annotations

import pytest
from django.test import Client

from poolweb.models import ApiToken
from poolweb.services.tokens import token_create

from tests.poolweb.conftest import request_row

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def test_requests_are_listed_filterable_and_searchable(operator, provisioned, bob, carol):
    mine = request_row(bob, "dev", "half", 0.5)
    mine.name = "train-42"
    mine.save()
    request_row(carol, "research", "4xgpu", 4, state="allocated", pool="h100")

    listing = operator.get("/admin/poolweb/request/").content.decode()
    filtered = operator.get("/admin/poolweb/request/?state__exact=allocated&policy=research").content.decode()
    by_name = operator.get("/admin/poolweb/request/?q=train").content.decode()
    by_id = operator.get(f"/admin/poolweb/request/?q={mine.id}").content.decode()

    assert "train-42" in listing and "carol" in listing
    assert "carol" in filtered and "train-42" not in filtered
    assert "train-42" in by_name and "train-42" in by_id
    assert operator.get("/admin/poolweb/request/?q=not-a-number").status_code == 200
    assert operator.get(f"/admin/poolweb/request/?owner__id__exact={bob.id}").status_code == 200


def test_a_request_is_shown_read_only(operator, provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5)

    page = operator.get(f"/admin/poolweb/request/{row.id}/change/")
    posted = operator.post(f"/admin/poolweb/request/{row.id}/change/", {"state": "released"})

    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert posted.status_code == 403
    assert operator.get("/admin/poolweb/request/add/").status_code == 403


def test_a_configuration_version_shows_its_rows_and_author(operator, provisioned):
    page = operator.get(f"/admin/poolweb/configversion/{provisioned.id}/change/").content.decode()

    assert "h100" in page and "a100" in page and "4xgpu" in page and "research" in page
    assert "alice" in page
    assert 'name="_save"' not in page


def test_tokens_are_listed_with_user_name_and_times_and_revoked_by_deleting(operator, bob):
    row, _ = token_create(user=bob, name="laptop")

    listing = operator.get("/admin/poolweb/apitoken/").content.decode()
    revoked = operator.post("/admin/poolweb/apitoken/", {"action": "delete_selected", "_selected_action": [row.id],
                                                          "post": "yes"})

    assert "laptop" in listing and "bob" in listing and "Revoke the selected tokens" in listing
    assert revoked.status_code == 302
    assert not ApiToken.objects.exists()
    assert operator.get("/admin/poolweb/apitoken/add/").status_code == 403
