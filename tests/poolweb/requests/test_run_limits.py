"""Run limits through the service (docs/scheduling.md R-52, R-53; api.md §3): ``max_runtime_seconds``
on ``POST /requests``, checked against its policy; ``time_limit_at`` set by the grant; a grace
before it the holder is told (``TimeLimitNear``, a ``request.updated``), and at it the run ends."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from poolweb.models import Event, Request
from poolweb.services import triggers
from poolweb.services.reconciler import reconcile_pass
from tests.poolweb.conftest import ONE_GPU, client_for

pytestmark = pytest.mark.django_db


def parsed_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def provision(alice, **low_terms) -> None:
    document = {**ONE_GPU, "policies": [{**ONE_GPU["policies"][0], **low_terms}, ONE_GPU["policies"][1]]}
    admin = client_for(alice)
    assert admin.put("/api/v1/config/draft", document, format="json").status_code == 200
    assert admin.post("/api/v1/config/draft/provision", {}, format="json").status_code == 200


def submit(user, **fields):
    return client_for(user).post("/api/v1/requests", {"policy": "low", "profile": "one", **fields}, format="json")


def test_a_declared_run_limit_sets_the_end_of_the_run_at_the_grant(alice, bob):
    provision(alice)
    answered = submit(bob, max_runtime_seconds=600)
    assert answered.status_code == 201, answered.json()
    body = client_for(bob).get(f"/api/v1/requests/{answered.json()['id']}").json()
    assert (body["state"], body["max_runtime_seconds"]) == ("allocated", 600)
    assert parsed_time(body["time_limit_at"]) == parsed_time(body["allocated_at"]) + timedelta(seconds=600)


def test_without_a_limit_the_request_object_says_none(alice, bob):
    provision(alice)
    body = submit(bob).json()
    assert (body["max_runtime_seconds"], body["time_limit_at"]) == (None, None)


@pytest.mark.parametrize("terms, fields, expected", [
    ({"require_max_runtime": True}, {}, ("required", "policy low requires max_runtime_seconds")),
    ({"max_runtime_seconds": 3600}, {"max_runtime_seconds": 3601}, ("out_of_range", "policy low allows at most 3,600 seconds")),
    ({}, {"max_runtime_seconds": "600"}, ("invalid_type", "max_runtime_seconds is an integer, not a string")),
    ({}, {"max_runtime_seconds": 0}, ("out_of_range", "max_runtime_seconds must be between 1 and 31,622,400")),
])
def test_a_run_limit_its_policy_does_not_allow_is_refused_naming_the_field(alice, bob, terms, fields, expected):
    provision(alice, **terms)
    answered = submit(bob, **fields)
    assert answered.status_code == 400
    errors = answered.json()["errors"]
    assert [(e["path"], e["code"], e["message"]) for e in errors] == [("max_runtime_seconds", *expected)]
    assert not Request.objects.exists()


def test_a_policy_cap_bounds_a_request_that_declares_none(alice, bob):
    provision(alice, max_runtime_seconds=120)
    body = submit(bob).json()
    assert parsed_time(body["time_limit_at"]) == parsed_time(body["allocated_at"]) + timedelta(seconds=120)


def test_the_holder_is_warned_a_grace_before_and_the_run_ends_at_its_limit(alice, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 30}
    provision(alice)
    body = submit(bob, max_runtime_seconds=100, lease_seconds=3600).json()
    ends = parsed_time(body["time_limit_at"])
    assert triggers.next_deadline() == ends - timedelta(seconds=30)

    reconcile_pass(now=ends - timedelta(seconds=20))
    warned = client_for(bob).get(f"/api/v1/requests/{body['id']}").json()
    assert (warned["state"], warned["reason"]) == ("allocated", "TimeLimitNear")
    announced = [json.loads(data) for data in Event.objects.filter(type="request.updated").values_list("data", flat=True)]
    assert announced[-1]["reason"] == "TimeLimitNear" and announced[-1]["time_limit_at"] == body["time_limit_at"]
    assert triggers.next_deadline() == ends

    reconcile_pass(now=ends)
    ended = client_for(bob).get(f"/api/v1/requests/{body['id']}").json()
    assert (ended["state"], ended["reason"]) == ("expired", "TimeLimit")


def test_where_the_policy_says_so_a_run_at_its_limit_is_queued_again(alice, bob):
    provision(alice, on_time_limit="requeue")
    body = submit(bob, max_runtime_seconds=100).json()
    reconcile_pass(now=parsed_time(body["time_limit_at"]))
    again = client_for(bob).get(f"/api/v1/requests/{body['id']}").json()
    assert (again["state"], again["reason"], again["attempt"]) == ("allocated", "Granted", 2)
