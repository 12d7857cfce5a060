"""``GET /pools/{name}/running`` (api.md §4, decision 51): a pool's live requests, oldest grant
first, with the privacy of its queue — so a console page or a script can show who runs where."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from poolweb.models import Request as RequestRow

from tests.poolweb.conftest import client_for
from .test_live_state_api import PUBLIC, fixed, go_live, queue_document

pytestmark = pytest.mark.django_db


def running_as(user: User, pool: str = "h100", query: str = "") -> dict:
    response = client_for(user).get(f"/api/v1/pools/{pool}/running{query}")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def running(alice, bob) -> dict[str, RequestRow]:
    go_live(queue_document(), alice)
    first = fixed(bob, "dev/4xgpu", name="bobs-job")
    second = fixed(alice, "research/4xgpu", name="alices-job")
    assert first.pool == second.pool == "h100"
    return {"bob": first, "alice": second}


def test_the_running_requests_come_oldest_grant_first(running, alice):
    RequestRow.objects.filter(pk=running["bob"].pk).update(allocated_at=timezone.now() + timedelta(seconds=5))
    body = running_as(alice)
    assert body["count"] == 2
    assert [e["id"] for e in body["results"]] == [running["alice"].id, running["bob"].id]
    assert {e["state"] for e in body["results"]} == {"allocated"}


def test_a_member_sees_their_own_whole_and_others_public(running, bob, carol):
    entries = {e["id"]: e for e in running_as(bob)["results"]}
    assert entries[running["bob"].id]["name"] == "bobs-job"
    assert set(entries[running["alice"].id]) == PUBLIC
    assert all(set(e) == PUBLIC for e in running_as(carol)["results"])
    assert "alices-job" not in str(running_as(carol))


def test_pending_and_finished_requests_are_not_running(running, bob):
    client_for(bob).post(f"/api/v1/requests/{running['bob'].id}/release")
    waiting = fixed(bob, "dev/4xgpu")
    waiting_too = fixed(bob, "dev/4xgpu")
    ids = [e["id"] for e in running_as(bob)["results"]]
    assert running["bob"].id not in ids and waiting_too.id not in ids and running["alice"].id in ids
    assert waiting.state == "allocated" and waiting.id in ids


def test_the_running_list_is_paginated_and_refuses_a_bad_limit(running, bob):
    body = running_as(bob, query="?limit=1")
    assert len(body["results"]) == 1 and body["next"] is not None
    response = client_for(bob).get("/api/v1/pools/h100/running?limit=zero")
    assert response.status_code == 400 and "limit" in response.content.decode()


def test_an_unknown_pool_is_a_404_and_anonymous_callers_a_401(running, bob):
    assert client_for(bob).get("/api/v1/pools/nowhere/running").status_code == 404
    assert client_for(None).get("/api/v1/pools/h100/running").status_code == 401
