"""A user may have at most ``POOLWEB_MAX_PENDING_PER_USER`` pending requests: one more is a 429
that names the cap, before the body is even read."""

from __future__ import annotations

import pytest

from poolweb.models import Request as RequestRow

from tests.poolweb.conftest import client_for, request_row

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests"


@pytest.fixture
def cap_of_two(settings):
    settings.POOLWEB = {**settings.POOLWEB, "MAX_PENDING_PER_USER": 2}


def test_a_submission_beyond_the_pending_cap_is_429_naming_the_cap(provisioned, cap_of_two, bob):
    for _ in range(2):
        request_row(bob, "dev", "4xgpu", 4)

    response = client_for(bob).post(URL, {"policy": "dev", "profile": "half"}, format="json")

    assert response.status_code == 429
    assert "2 is the most" in response.json()["detail"]
    assert "POOLWEB_MAX_PENDING_PER_USER" in response.json()["detail"]
    assert RequestRow.objects.count() == 2


def test_the_cap_counts_only_pending_requests_of_that_user(provisioned, cap_of_two, bob, alice):
    request_row(bob, "dev", "4xgpu", 4)
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    request_row(alice, "dev", "4xgpu", 4)
    request_row(alice, "dev", "4xgpu", 4)

    response = client_for(bob).post(URL, {"policy": "dev", "profile": "half"}, format="json")

    assert response.status_code == 201


def test_a_retried_submission_at_the_cap_still_returns_its_request(provisioned, cap_of_two, bob):
    client = client_for(bob)
    first = client.post(URL, {"policy": "dev", "profile": "4xgpu"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    for _ in range(2):
        request_row(bob, "dev", "4xgpu", 4)
    assert client.post(URL, {"policy": "dev", "profile": "4xgpu"}, format="json").status_code == 429

    again = client.post(URL, {"policy": "dev", "profile": "4xgpu"}, format="json", HTTP_IDEMPOTENCY_KEY="k")

    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])


def test_the_default_cap_is_ten_thousand(settings):
    assert settings.POOLWEB["MAX_PENDING_PER_USER"] == 10_000
