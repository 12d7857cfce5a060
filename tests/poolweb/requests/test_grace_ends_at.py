"""``grace_ends_at`` of the request object (api.md §3): when a preempting request's eviction grace
ends (R-44) — ``preempted_at`` plus ``POOLWEB_EVICTION_GRACE_SECONDS`` — in the REST API and in
the ``request.updated`` a pass sends; null in every other state."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from poolweb.models import Event, Request
from tests.poolweb.conftest import ONE_GPU, client_for

pytestmark = pytest.mark.django_db



def parsed_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def preempted(alice, bob, settings):
    """bob's ``low`` preempting for his ``high`` (grace 45 s): (low, high) as the API answered."""
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 45}
    admin, user = client_for(alice), client_for(bob)
    assert admin.put("/api/v1/config/draft", ONE_GPU, format="json").status_code == 200
    assert admin.post("/api/v1/config/draft/provision", {}, format="json").status_code == 200
    low = user.post("/api/v1/requests", {"policy": "low", "profile": "one"}, format="json").json()
    high = user.post("/api/v1/requests", {"policy": "high", "profile": "one"}, format="json").json()
    return user.get(f"/api/v1/requests/{low['id']}").json(), user.get(f"/api/v1/requests/{high['id']}").json()


def test_a_preempting_request_says_when_its_grace_ends(preempted):
    low, high = preempted
    assert low["state"] == "preempting" and low["preempted_by"] == high["id"]
    stored = Request.objects.get(pk=low["id"]).preempted_at
    assert parsed_time(low["grace_ends_at"]) == stored + timedelta(seconds=45)


def test_the_grace_end_is_null_unless_preempting(preempted, bob):
    _, high = preempted
    assert high["state"] == "pending" and high["grace_ends_at"] is None
    listed = client_for(bob).get("/api/v1/requests?state=pending").json()["results"]
    assert [entry["grace_ends_at"] for entry in listed] == [None]


def test_the_pass_that_preempts_announces_the_grace_end(preempted):
    low, _ = preempted
    announced = [data for data in map(json.loads, Event.objects.filter(type="request.updated").order_by("seq")
                                      .values_list("data", flat=True))
                 if data["id"] == low["id"] and data["state"] == "preempting"]
    assert [data["grace_ends_at"] for data in announced] == [low["grace_ends_at"]]


def test_the_grace_end_follows_the_setting_read_now(preempted, bob, settings):
    low, _ = preempted
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 10}
    again = client_for(bob).get(f"/api/v1/requests/{low['id']}").json()
    assert parsed_time(again["grace_ends_at"]) == parsed_time(low["grace_ends_at"]) - timedelta(seconds=35)


def test_others_see_the_grace_end_of_a_request_they_cannot_read_in_full(preempted, carol):
    """A time, like the other public fields: how soon capacity frees, not whose it is or for whom."""
    low, _ = preempted
    entries = client_for(carol).get("/api/v1/pools/p/running").json()["results"]
    assert [(e["id"], e["grace_ends_at"]) for e in entries] == [(low["id"], low["grace_ends_at"])]
    assert "preempted_by" not in entries[0] and "owner" not in entries[0]
