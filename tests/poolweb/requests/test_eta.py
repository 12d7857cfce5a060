"""R-54 in the service: each pass stores a pending request's estimated start with its basis, and
the request object (``GET /requests/{id}``, lists, queues) shows it with its confidence."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from poolweb.models import Request
from poolweb.selectors.runtimes import observed_run_seconds
from tests.poolweb.conftest import ONE_GPU, client_for

pytestmark = pytest.mark.django_db


def parsed_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ran(owner, seconds: int, *, profile: str = "one", ended_ago: timedelta = timedelta(hours=1),
        state: str = "released") -> Request:
    """A finished run of ``profile`` that lasted ``seconds``."""
    finished = timezone.now() - ended_ago
    return Request.objects.create(policy="low", profile=profile, owner=owner, resources={"gpu": 1000, "step_run": 1000},
                                  state=state, reason="Released", allocated_at=finished - timedelta(seconds=seconds),
                                  finished_at=finished)


def queue_two(alice, bob) -> tuple[dict, dict]:
    """bob's first request runs on the one gpu, his second waits: both as the API answers them."""
    admin, user = client_for(alice), client_for(bob)
    assert admin.put("/api/v1/config/draft", ONE_GPU, format="json").status_code == 200
    assert admin.post("/api/v1/config/draft/provision", {}, format="json").status_code == 200
    first = user.post("/api/v1/requests", {"policy": "low", "profile": "one"}, format="json").json()
    second = user.post("/api/v1/requests", {"policy": "low", "profile": "one"}, format="json").json()
    return user.get(f"/api/v1/requests/{first['id']}").json(), user.get(f"/api/v1/requests/{second['id']}").json()


def test_r54_the_observed_run_times_are_the_profiles_runs_ended_this_week(bob):
    for seconds in (600, 900, 4000):
        ran(bob, seconds)
    ran(bob, 10, ended_ago=timedelta(days=8))  # too old
    ran(bob, 50, state="cancelled")  # did not run to its end
    for seconds in (60, 70):
        ran(bob, seconds, profile="few")  # fewer than 3 runs: none
    assert observed_run_seconds(timezone.now()) == {"one": (600, 900, 4000)}

    for seconds in range(100, 2100, 100):
        ran(bob, seconds, profile="many")  # 20 more, 21 and up: every 5th percentile
    ran(bob, 2100, profile="many")
    ran(bob, 5000, profile="many")
    assert len(observed_run_seconds(timezone.now())["many"]) == 21


def test_r54_a_waiting_request_starts_when_the_run_ahead_is_expected_to_end(alice, bob):
    for seconds in (600, 900, 4000):
        ran(bob, seconds)
    running, waiting = queue_two(alice, bob)
    assert running["state"] == "allocated" and waiting["state"] == "pending"
    assert parsed_time(waiting["eta"]) == parsed_time(running["allocated_at"]) + timedelta(seconds=900)
    assert (waiting["eta_basis"], waiting["eta_confidence"]) == ("observed_runtimes", "low")
    assert (running["eta"], running["eta_basis"], running["eta_confidence"]) == (None, None, None)
    listed = client_for(bob).get("/api/v1/requests?state=pending").json()["results"]
    assert [entry["eta"] for entry in listed] == [waiting["eta"]]


def test_r54_without_limits_or_history_the_start_is_unknown(alice, bob, carol):
    _, waiting = queue_two(alice, bob)
    assert (waiting["eta"], waiting["eta_basis"], waiting["eta_confidence"]) == (None, "unknown", "none")
    queue = client_for(carol).get("/api/v1/pools/p/queue").json()["results"]
    assert [(e["id"], e["eta_basis"], e["eta_confidence"]) for e in queue] == [(waiting["id"], "unknown", "none")]


def test_r54_a_granted_request_keeps_no_estimate(alice, bob):
    for seconds in (600, 900, 4000):
        ran(bob, seconds)
    running, waiting = queue_two(alice, bob)
    user = client_for(bob)
    assert user.post(f"/api/v1/requests/{running['id']}/release", {}, format="json").status_code == 200
    granted = user.get(f"/api/v1/requests/{waiting['id']}").json()
    assert granted["state"] == "allocated"
    stored = Request.objects.get(pk=waiting["id"])
    assert (stored.eta, stored.eta_basis, stored.position) == (None, "", None)


def test_r54_with_a_run_limit_ahead_the_start_is_when_that_run_ends_and_sure(alice, bob):
    admin, user = client_for(alice), client_for(bob)
    assert admin.put("/api/v1/config/draft", ONE_GPU, format="json").status_code == 200
    assert admin.post("/api/v1/config/draft/provision", {}, format="json").status_code == 200
    first = user.post("/api/v1/requests", {"policy": "low", "profile": "one", "max_runtime_seconds": 600},
                      format="json").json()
    second = user.post("/api/v1/requests", {"policy": "low", "profile": "one"}, format="json").json()
    running = user.get(f"/api/v1/requests/{first['id']}").json()
    waiting = user.get(f"/api/v1/requests/{second['id']}").json()
    assert parsed_time(waiting["eta"]) == parsed_time(running["time_limit_at"])
    assert (waiting["eta_basis"], waiting["eta_confidence"]) == ("run_limits", "high")
