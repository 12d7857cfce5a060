"""The requests API (api.md §2): submit, list, detail, heartbeat, release, cancel; S-1, S-2, S-3,
S-6 and S-7 end to end. A pass runs inline after each submit, release and cancel, so grants are
visible in the response."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from poolweb.models import Request
from poolweb.services.config import config_provision_document
from tests.poolweb.conftest import client_for

URL = "/api/v1/requests"
REQUEST_OBJECT_FIELDS = {
    "id", "name", "policy", "profile", "owner", "resources", "preemptible", "max_retries", "attempt", "state",
    "reason", "message", "pool", "position", "preempted_by", "labels", "submitted_at", "allocated_at",
    "finished_at", "lease_expires_at", "lease_seconds", "queue_pool", "held_pool", "grace_ends_at", "warnings",
    "submitted_by",  # decision 131
    "max_runtime_seconds", "time_limit_at",
    "eta", "eta_basis", "eta_confidence",
}


def submit(client: APIClient, headers: dict | None = None, **body):
    return client.post(URL, body, format="json", headers=headers)


def act(client: APIClient, request_id: int, action: str):
    return client.post(f"{URL}/{request_id}/{action}")


def one_pool(alice, pool: dict, *policies: dict) -> None:
    """A scenario configuration: one pool, a dynamic profile ``job`` (gpu 1 by default) on it.
    Policies get the group ``ops`` (alice, an admin, submits anyway)."""
    policies = tuple({"group": "ops", **p} for p in policies)
    names = [p["name"] for p in policies]
    config_provision_document(author=alice, document={
        "pools": [pool],
        "profiles": [{"name": "job", "resources": {"gpu": 1}, "dynamic": True,
                      "connections": [{"pool": pool["name"]}], "policies": names}],
        "policies": list(policies),
    })


@pytest.fixture
def s2(alice):
    """S-2/S-3: pool dc {gpu: 8}; policy ml priority 10, dc:gpu 4/8."""
    one_pool(alice, {"name": "dc", "capacity": {"gpu": 8}},
             {"name": "ml", "priority": 10, "quotas": [{"scope": "dc", "key": "gpu", "reserved": 4, "limit": 8}]})


# --- submit --------------------------------------------------------------------------------------

def test_a_fixed_profile_request_is_granted_with_step_run_added(provisioned, bob):
    response = submit(client_for(bob), policy="dev", profile="4xgpu", name="train-42", labels={"team": "nlp"})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == REQUEST_OBJECT_FIELDS
    assert (body["owner"], body["policy"], body["profile"], body["name"], body["labels"]) == (
        "bob", "dev", "4xgpu", "train-42", {"team": "nlp"})
    assert body["resources"] == {"gpu": 4, "step_run": 1}
    assert (body["state"], body["pool"], body["position"], body["attempt"]) == ("allocated", "h100", None, 1)
    assert (body["preemptible"], body["max_retries"], body["lease_seconds"]) == (True, 0, 300)
    assert body["allocated_at"] and body["lease_expires_at"] and body["finished_at"] is None
    assert response.headers["Location"] == f"{URL}/{body['id']}"


def test_the_answer_warns_when_a_preemptible_request_has_no_retries(provisioned, bob):
    bob_client = client_for(bob)
    body = submit(bob_client, policy="dev", profile="half").json()
    assert [w["code"] for w in body["warnings"]] == ["preemptible_without_retries"]
    assert "max_retries" in body["warnings"][0]["message"]
    assert bob_client.get(f"{URL}/{body['id']}").json()["warnings"] == body["warnings"]


@pytest.mark.parametrize("body", [{"max_retries": 2}, {"preemptible": False}])
def test_a_request_with_retries_or_never_preempted_has_no_warning(provisioned, bob, body):
    answer = submit(client_for(bob), policy="dev", profile="half", **body).json()
    assert answer["warnings"] == []


def test_fractional_resources_are_json_numbers(provisioned, bob):
    body = submit(client_for(bob), policy="dev", profile="half").json()
    assert body["resources"] == {"gpu": 0.5, "step_run": 1}
    assert '"gpu": 0.5' in json.dumps(body)


def test_a_dynamic_request_takes_its_profiles_allotment_for_keys_it_leaves_out(provisioned, bob):
    assert submit(client_for(bob), policy="dev", profile="job").json()["resources"] == {"gpu": 1, "step_run": 1}
    body = submit(client_for(bob), policy="dev", profile="job", resources={"gpu": 2, "mcpu": "1.5"}).json()
    assert body["resources"] == {"gpu": 2, "mcpu": 1.5, "step_run": 1}


def test_a_key_given_as_zero_removes_the_allotments_default(provisioned, bob):
    body = submit(client_for(bob), policy="dev", profile="job", resources={"gpu": 0, "mcpu": 1}).json()
    assert body["resources"] == {"mcpu": 1, "step_run": 1}


def test_a_request_may_repeat_step_run_1_from_a_returned_request_object(provisioned, bob):
    body = submit(client_for(bob), policy="dev", profile="job", resources={"gpu": 1, "step_run": 1}).json()
    assert body["resources"] == {"gpu": 1, "step_run": 1}


def test_a_submission_without_a_provisioned_configuration_names_the_policy(alice):
    response = submit(client_for(alice), policy="dev", profile="job")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "policy"
    assert not Request.objects.exists()


# --- S-1 through the API -------------------------------------------------------------------------

@pytest.fixture
def s1(alice):
    one_pool(alice, {"name": "dc", "capacity": {"gpu": 8, "tensorrt_sessions": 4}}, {"name": "ml"})


S1 = [
    ("the full example",
     {"gpu_count": 2, "cpu_count": 4, "memory": "16GiB", "pool_resources": {"tensorrt_sessions": 1}},
     {"gpu": 2, "mcpu": 4000, "memory_mb": 17180, "tensorrt_sessions": 1, "step_run": 1}),
    ("gpu_count 0 removes gpu", {"gpu_count": 0, "pool_resources": {"gpu": 3}}, {"step_run": 1}),
    ("1GB is 1000 MB", {"gpu_count": 1, "memory": "1GB"}, {"gpu": 1, "memory_mb": 1000, "step_run": 1}),
    ("2GiB is 2148 MB", {"gpu_count": 1, "memory": "2GiB"}, {"gpu": 1, "memory_mb": 2148, "step_run": 1}),
    ("cpu_count 0.25 is 250 mcpu", {"gpu_count": 1, "cpu_count": 0.25}, {"gpu": 1, "mcpu": 250, "step_run": 1}),
]


@pytest.mark.parametrize("name, given, resources", S1, ids=[row[0] for row in S1])
def test_s1_resource_settings_convert_through_the_api(s1, admin, name, given, resources):
    response = submit(admin, policy="ml", profile="job", resource_settings=given)
    assert response.status_code == 201, response.json()
    assert (response.json()["resources"], response.json()["state"]) == (resources, "allocated")


def test_s1_an_unknown_memory_unit_is_refused_naming_the_field(s1, admin):
    response = submit(admin, policy="ml", profile="job", resource_settings={"memory": "12XB"})
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["resource_settings.memory"]
    assert not Request.objects.exists()


# --- scenarios -----------------------------------------------------------------------------------

def test_s7_never_satisfiable_requests_are_rejected_at_once_with_their_reason(alice, admin):
    one_pool(alice, {"name": "small", "capacity": {"gpu": 8}},
             {"name": "a", "quotas": [{"scope": "small", "key": "gpu", "reserved": 2, "limit": 4}]})
    expected = [({"gpu": 10}, "ExceedsPoolCapacity"), ({"gpu": 6}, "ExceedsLimit"),
                ({"gpu": 1, "disk": 1}, "ResourceNotInPool")]
    for resources, reason in expected:
        response = submit(admin, policy="a", profile="job", resources=resources)
        body = response.json()
        assert response.status_code == 201
        assert (body["state"], body["reason"], body["position"]) == ("rejected", reason, None)
        assert body["message"] and body["finished_at"] and body["pool"] is None


def test_s2_a_preemptible_request_borrows_past_its_reservation(s2, admin):
    body = submit(admin, policy="ml", profile="job", resources={"gpu": 6}).json()
    assert (body["state"], body["pool"], body["reason"]) == ("allocated", "dc", "Granted")


def test_s3_non_preemptible_requests_live_inside_the_reservation(s2, admin):
    first = submit(admin, policy="ml", profile="job", resources={"gpu": 2}, preemptible=False).json()
    second = submit(admin, policy="ml", profile="job", resources={"gpu": 6}, preemptible=False).json()
    assert (first["state"], first["preemptible"]) == ("allocated", False)
    assert (second["state"], second["reason"]) == ("rejected", "ExceedsReserved")


def test_s6_step_run_caps_concurrency_until_one_is_released(alice, admin):
    one_pool(alice, {"name": "big", "capacity": {"gpu": 16, "step_run": 10}},
             {"name": "t", "quotas": [{"scope": "big", "key": "gpu", "reserved": 8, "limit": 16},
                                      {"scope": "big", "key": "step_run", "reserved": 4, "limit": 4}]})
    first_four = [submit(admin, policy="t", profile="job", resources={"gpu": 2}).json() for _ in range(4)]
    assert [r["state"] for r in first_four] == ["allocated"] * 4
    fifth = submit(admin, policy="t", profile="job", resources={"gpu": 2}).json()
    assert (fifth["state"], fifth["reason"], fifth["position"]) == ("pending", "WaitingForQuota", 1)
    assert act(admin, first_four[0]["id"], "release").json()["state"] == "released"
    assert admin.get(f"{URL}/{fifth['id']}").json()["state"] == "allocated"


# --- idempotency ---------------------------------------------------------------------------------

def test_a_retried_submission_with_the_same_idempotency_key_returns_the_first_request(provisioned, bob):
    client, key = client_for(bob), {"Idempotency-Key": "retry-1"}
    first = submit(client, key, policy="dev", profile="half")
    again = submit(client, key, policy="dev", profile="half")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Request.objects.count() == 1


def test_a_retry_returns_the_first_request_whatever_the_new_body_says(provisioned, bob):
    client, key = client_for(bob), {"Idempotency-Key": "k"}
    first = submit(client, key, policy="dev", profile="half")
    again = submit(client, key, policy="nope")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])


def test_the_idempotency_key_is_per_user_and_per_key(provisioned, alice, bob):
    submit(client_for(bob), {"Idempotency-Key": "k"}, policy="dev", profile="half")
    other_user = submit(client_for(alice), {"Idempotency-Key": "k"}, policy="dev", profile="half")
    other_key = submit(client_for(bob), {"Idempotency-Key": "k2"}, policy="dev", profile="half")
    assert (other_user.status_code, other_key.status_code) == (201, 201)
    assert Request.objects.count() == 3


@pytest.mark.parametrize("key", ["x" * 201, ""], ids=["too long", "empty"])
def test_a_bad_idempotency_key_is_refused(provisioned, bob, key):
    response = submit(client_for(bob), {"Idempotency-Key": key}, policy="dev", profile="half")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "Idempotency-Key"
    assert not Request.objects.exists()


# --- permissions ---------------------------------------------------------------------------------

def test_a_team_member_may_submit_to_its_policy_but_not_to_another(provisioned, bob):
    assert submit(client_for(bob), policy="dev", profile="half").status_code == 201
    refused = submit(client_for(bob), policy="research", profile="half")
    assert refused.status_code == 403 and "detail" in refused.json()
    assert Request.objects.count() == 1


def test_a_user_in_no_team_may_not_submit(provisioned, carol):
    assert submit(client_for(carol), policy="dev", profile="half").status_code == 403
    assert not Request.objects.exists()


def test_an_admin_may_submit_to_any_queue(provisioned, admin):
    assert submit(admin, policy="research", profile="half").status_code == 201
    assert submit(admin, policy="dev", profile="job").status_code == 201


def test_a_member_added_to_the_research_group_may_submit_there(provisioned, carol):
    carol.groups.add(Group.objects.create(name="research"))
    assert submit(client_for(carol), policy="research", profile="4xgpu").status_code == 201


@pytest.mark.parametrize("method, path", [("get", URL), ("post", URL), ("get", f"{URL}/1"),
                                          ("post", f"{URL}/1/heartbeat"), ("post", f"{URL}/1/release"),
                                          ("post", f"{URL}/1/cancel")])
def test_anonymous_callers_are_refused(provisioned, method, path):
    assert getattr(APIClient(), method)(path, {}, format="json").status_code in (401, 403)


# --- visibility ------------------------------------------------------------------------------------

def test_a_user_cannot_see_or_touch_another_users_request(provisioned, alice, bob):
    theirs = submit(client_for(alice), policy="dev", profile="half").json()["id"]
    client = client_for(bob)
    assert client.get(f"{URL}/{theirs}").status_code == 404
    for action in ("heartbeat", "release", "cancel"):
        assert act(client, theirs, action).status_code == 404
    assert Request.objects.get(pk=theirs).state == "allocated"


def test_a_missing_request_and_a_hidden_one_look_the_same(provisioned, alice, bob):
    theirs = submit(client_for(alice), policy="dev", profile="half").json()["id"]
    hidden, missing = client_for(bob).get(f"{URL}/{theirs}"), client_for(bob).get(f"{URL}/{theirs + 100}")
    assert (hidden.status_code, missing.status_code) == (404, 404)
    assert client_for(bob).get(f"{URL}/{10**30}").status_code == 404


def test_users_list_their_own_requests_and_admins_everyones(provisioned, alice, bob):
    mine = submit(client_for(bob), policy="dev", profile="half").json()["id"]
    submit(client_for(alice), policy="dev", profile="half")
    listed = client_for(bob).get(URL).json()
    assert (listed["count"], [r["id"] for r in listed["results"]]) == (1, [mine])
    assert client_for(alice).get(URL).json()["count"] == 2


def test_an_admin_may_cancel_a_users_request(provisioned, alice, bob):
    theirs = submit(client_for(bob), policy="dev", profile="half").json()["id"]
    body = act(client_for(alice), theirs, "cancel").json()
    assert (body["state"], body["reason"]) == ("released", "CancelledByUser")


# --- list: filters and pagination ------------------------------------------------------------------

@pytest.fixture
def mixed(provisioned, alice, bob) -> dict[str, int]:
    """bob: half on a100 (allocated), 4xgpu on h100 (allocated), a cancelled half; alice: research half."""
    client = client_for(bob)
    ids = {"half": submit(client, policy="dev", profile="half").json()["id"],
           "big": submit(client, policy="dev", profile="4xgpu").json()["id"]}
    ids["gone"] = submit(client, policy="dev", profile="half").json()["id"]
    act(client, ids["gone"], "cancel")
    ids["alice"] = submit(client_for(alice), policy="research", profile="half").json()["id"]
    return ids


FILTERS = [
    ("state", "state=allocated", ["alice", "big", "half"]),
    ("several states", "state=released,pending", ["gone"]),
    ("policy", "policy=research", ["alice"]),
    ("profile", "profile=4xgpu", ["big"]),
    ("pool", "pool=h100", ["big"]),
    ("owner", "owner=bob", ["gone", "big", "half"]),
    ("an unknown name matches nothing", "policy=nobody", []),
    ("an empty value is no filter", "state=&pool=", ["alice", "gone", "big", "half"]),
]


@pytest.mark.parametrize("name, query, expected", FILTERS, ids=[row[0] for row in FILTERS])
def test_the_list_filters_newest_first(mixed, alice, name, query, expected):
    results = client_for(alice).get(f"{URL}?{query}").json()["results"]
    assert [r["id"] for r in results] == [mixed[key] for key in expected]


def test_a_user_filtering_on_another_owner_sees_nothing(mixed, bob):
    assert client_for(bob).get(f"{URL}?owner=alice").json()["count"] == 0


def test_the_list_is_paginated_with_limit_and_offset(mixed, alice):
    page = client_for(alice).get(f"{URL}?limit=2").json()
    assert (page["count"], len(page["results"]), page["previous"]) == (4, 2, None)
    assert "offset=2" in page["next"]
    last = client_for(alice).get(f"{URL}?limit=2&offset=2").json()
    assert ([r["id"] for r in last["results"]], last["next"]) == ([mixed["big"], mixed["half"]], None)
    assert client_for(alice).get(f"{URL}?offset={10**17}").json()["results"] == []


BAD_QUERIES = [
    ("an unknown state", "state=bogus", "state"),
    ("one unknown state among several", "state=pending,bogus", "state"),
    ("a negative limit", "limit=-1", "limit"),
    ("a zero limit", "limit=0", "limit"),
    ("a limit that is not a number", "limit=abc", "limit"),
    ("a huge limit", f"limit={10**40}", "limit"),
    ("a negative offset", "offset=-1", "offset"),
    ("a fractional offset", "offset=1.5", "offset"),
    ("a policy that is not a name", "policy=Dev%20Team", "policy"),
    ("a pool with a NUL", "pool=a%00b", "pool"),
    ("an owner with a NUL", "owner=bo%00b", "owner"),
    ("an over-long profile", "profile=" + "a" * 64, "profile"),
]


@pytest.mark.parametrize("name, query, path", BAD_QUERIES, ids=[row[0] for row in BAD_QUERIES])
def test_an_invalid_list_parameter_is_refused_naming_it(provisioned, alice, name, query, path):
    response = client_for(alice).get(f"{URL}?{query}")
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == [path]


# --- heartbeat, release, cancel ------------------------------------------------------------------

def test_a_heartbeat_renews_the_lease_of_an_allocated_request(provisioned, bob):
    client = client_for(bob)
    body = submit(client, policy="dev", profile="half", lease_seconds=3600).json()
    Request.objects.filter(pk=body["id"]).update(lease_expires_at=timezone.now() + timedelta(seconds=20))
    renewed = act(client, body["id"], "heartbeat")
    assert renewed.status_code == 200
    expires = Request.objects.get(pk=body["id"]).lease_expires_at
    assert timedelta(seconds=3590) < expires - timezone.now() <= timedelta(seconds=3600)
    assert renewed.json()["state"] == "allocated"


def test_a_heartbeat_for_a_request_that_is_not_live_is_a_conflict(provisioned, bob):
    client = client_for(bob)
    first = submit(client, policy="dev", profile="4xgpu").json()
    submit(client, policy="dev", profile="4xgpu")
    waiting = submit(client, policy="dev", profile="4xgpu").json()  # dev's limit of 8 gpu is used
    assert waiting["state"] == "pending"
    assert act(client, waiting["id"], "heartbeat").status_code == 409
    act(client, first["id"], "release")
    response = act(client, first["id"], "heartbeat")
    assert response.status_code == 409 and "detail" in response.json()


def test_a_heartbeat_after_the_lease_ran_out_is_a_conflict(provisioned, bob):
    client = client_for(bob)
    body = submit(client, policy="dev", profile="half").json()
    Request.objects.filter(pk=body["id"]).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert act(client, body["id"], "heartbeat").status_code == 409


def test_release_returns_capacity_and_is_idempotent(provisioned, bob):
    client = client_for(bob)
    body = submit(client, policy="dev", profile="4xgpu").json()
    first, again = act(client, body["id"], "release"), act(client, body["id"], "release")
    assert (first.status_code, again.status_code) == (200, 200)
    assert (first.json()["state"], first.json()["reason"]) == ("released", "Released")
    assert again.json() == first.json()
    assert first.json()["finished_at"] and first.json()["pool"] == "h100"


def test_cancel_withdraws_a_pending_request_and_is_idempotent(provisioned, bob):
    client = client_for(bob)
    for _ in range(2):
        submit(client, policy="dev", profile="4xgpu")
    waiting = submit(client, policy="dev", profile="4xgpu").json()
    first, again = act(client, waiting["id"], "cancel"), act(client, waiting["id"], "cancel")
    assert (first.json()["state"], first.json()["reason"], first.json()["position"]) == (
        "cancelled", "CancelledByUser", None)
    assert again.status_code == 200 and again.json() == first.json()


def test_releasing_frees_room_for_a_waiting_request(provisioned, bob):
    client = client_for(bob)
    first = submit(client, policy="dev", profile="4xgpu").json()
    submit(client, policy="dev", profile="4xgpu")
    waiting = submit(client, policy="dev", profile="4xgpu").json()
    assert (waiting["state"], waiting["position"]) == ("pending", 1)
    act(client, first["id"], "release")
    assert client.get(f"{URL}/{waiting['id']}").json()["state"] == "allocated"


# --- hostile input ---------------------------------------------------------------------------------

BASE = {"policy": "dev", "profile": "job"}

HOSTILE = [
    ("a negative quantity", {"resources": {"gpu": -1}}, "resources.gpu"),
    ("NaN as a string", {"resources": {"gpu": "NaN"}}, "resources.gpu"),
    ("inf as a string", {"resources": {"gpu": "inf"}}, "resources.gpu"),
    ("an over-precise string 0.0001", {"resources": {"gpu": "0.0001"}}, "resources.gpu"),
    ("an over-precise number 0.0001", {"resources": {"gpu": 0.0001}}, "resources.gpu"),
    ("a quantity above 10^12", {"resources": {"gpu": 10**12 + 1}}, "resources.gpu"),
    ("a huge exponent", {"resources": {"gpu": 1e300}}, "resources.gpu"),
    ("a boolean quantity", {"resources": {"gpu": True}}, "resources.gpu"),
    ("a quantity as an object", {"resources": {"gpu": {"n": 1}}}, "resources.gpu"),
    ("resources as a list", {"resources": [1]}, "resources"),
    ("resources as null", {"resources": None}, "resources"),
    ("a resource key in capitals", {"resources": {"GPU": 1}}, "resources.GPU"),
    ("a resource key with a trailing newline", {"resources": {"gpu\n": 1}}, "resources"),
    ("step_run set by the request", {"resources": {"step_run": 2}}, "resources.step_run"),
    ("too many resource keys", {"resources": {f"k{i}": 1 for i in range(101)}}, "resources"),
    ("an unknown top-level field", {"gpus": 2}, "gpus"),
    ("a read-only field", {"state": "allocated"}, "state"),
    ("a missing policy", {"policy": None}, "policy"),
    ("a policy that is a number", {"policy": 7}, "policy"),
    ("an unknown policy", {"policy": "nobody"}, "policy"),
    ("an unknown profile", {"profile": "nothing"}, "profile"),
    ("a policy not listed on the profile", {"policy": "research"}, "policy"),
    ("resources on a fixed profile", {"profile": "half", "resources": {"gpu": 1}}, "resources"),
    ("resource_settings on a fixed profile", {"profile": "half", "resource_settings": {"gpu_count": 1}},
     "resource_settings"),
    ("both resources and resource_settings", {"resources": {"gpu": 1}, "resource_settings": {"gpu_count": 1}},
     "resource_settings"),
    ("an unknown memory unit", {"resource_settings": {"memory": "12XB"}}, "resource_settings.memory"),
    ("a negative cpu_count", {"resource_settings": {"cpu_count": -1}}, "resource_settings.cpu_count"),
    ("an unknown setting", {"resource_settings": {"disk": 1}}, "resource_settings.disk"),
    ("preemptible as a string", {"preemptible": "yes"}, "preemptible"),
    ("preemptible as null", {"preemptible": None}, "preemptible"),
    ("preemptible as 1", {"preemptible": 1}, "preemptible"),
    ("max_retries above 10", {"max_retries": 11}, "max_retries"),
    ("negative max_retries", {"max_retries": -1}, "max_retries"),
    ("fractional max_retries", {"max_retries": 1.5}, "max_retries"),
    ("lease_seconds below 10", {"lease_seconds": 9}, "lease_seconds"),
    ("lease_seconds above a day", {"lease_seconds": 86401}, "lease_seconds"),
    ("lease_seconds as a string", {"lease_seconds": "300"}, "lease_seconds"),
    ("lease_seconds huge", {"lease_seconds": 10**30}, "lease_seconds"),
    ("a name of 201 characters", {"name": "x" * 201}, "name"),
    ("a name that is a number", {"name": 42}, "name"),
    ("a name with a NUL", {"name": "a\x00b"}, "name"),
    ("labels as a list", {"labels": ["a"]}, "labels"),
    ("more than 50 labels", {"labels": {f"k{i}": "v" for i in range(51)}}, "labels"),
    ("a label key of 64 characters", {"labels": {"k" * 64: "v"}}, "labels." + "k" * 64),
    ("an empty label key", {"labels": {"": "v"}}, "labels"),
    ("a label value that is a number", {"labels": {"team": 1}}, "labels.team"),
    ("a label value of 201 characters", {"labels": {"team": "v" * 201}}, "labels.team"),
    ("a label value with a NUL", {"labels": {"team": "\x00"}}, "labels.team"),
]


@pytest.mark.parametrize("name, change, path", HOSTILE, ids=[row[0] for row in HOSTILE])
def test_hostile_input_is_refused_naming_the_field_and_nothing_is_stored(provisioned, alice, name, change, path):
    body = {key: value for key, value in {**BASE, **change}.items() if value is not None or key != "policy"}
    response = client_for(alice).post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert path in [e["path"] for e in errors]
    assert all(set(e) == {"path", "code", "message"} and e["code"] and e["message"] for e in errors)
    assert not Request.objects.exists()


RAW_BODIES = [
    ("malformed JSON", '{"policy": "dev",'),
    ("a NaN literal", '{"policy": "dev", "profile": "job", "resources": {"gpu": NaN}}'),
    ("an Infinity literal", '{"policy": "dev", "profile": "job", "resources": {"gpu": Infinity}}'),
    ("an integer of 5000 digits", '{"policy": "dev", "profile": "job", "resources": {"gpu": ' + "9" * 5000 + "}}"),
    ("nesting too deep for the parser", '{"labels": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("a lone surrogate in a label", '{"policy": "dev", "profile": "job", "labels": {"team": "\\ud800"}}'),
    ("a body that is a list", '[{"policy": "dev", "profile": "job"}]'),
    ("a body that is a string", '"dev/job"'),
    ("a body that is null", "null"),
    ("an empty object", "{}"),
]


@pytest.mark.parametrize("name, raw", RAW_BODIES, ids=[row[0] for row in RAW_BODIES])
def test_a_body_that_is_not_a_request_is_refused_and_nothing_is_stored(provisioned, alice, name, raw):
    response = client_for(alice).post(URL, raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"]
    assert not Request.objects.exists()


def test_every_error_of_a_body_is_reported_at_once(provisioned, alice):
    response = submit(client_for(alice), policy="dev", profile="job", preemptible="no", max_retries=99,
                      labels={"team": 1}, extra=True)
    assert sorted(e["path"] for e in response.json()["errors"]) == [
        "extra", "labels.team", "max_retries", "preemptible"]


def test_an_oversized_body_is_refused_as_json_and_nothing_is_stored(provisioned, alice):
    raw = json.dumps({**BASE, "name": "x" * 3_000_000})
    response = client_for(alice).post(URL, raw, content_type="application/json")
    assert response.status_code == 413 and "detail" in response.json()
    assert not Request.objects.exists()


def test_a_rejected_request_is_warned_of_nothing(provisioned, bob):
    answer = submit(client_for(bob), policy="dev", profile="job", resources={"gpu": 99}).json()
    assert (answer["state"], answer["warnings"]) == ("rejected", [])
