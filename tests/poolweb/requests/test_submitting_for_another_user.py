"""``POST /requests`` with ``owner``: an account granted ``poolweb.submit_for_others`` (the Slurm
bridge's) submits a request its owner owns, checked as the owner, audited as the submitter's
(decision 131)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from poolweb.models import Event, Request as RequestRow
from poolweb.selectors.requests import request_by_idempotency_key
from poolweb.services import requests as services
from poolweb.services.reconciler import reconcile_pass
from reconcile import Vector

from tests.poolweb.conftest import client_for, request_row

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests"
PERMISSION = "poolweb.submit_for_others"


def grant(user: User) -> User:
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    return user


@pytest.fixture
def bridge(db) -> User:
    """The Slurm bridge's service account: the permission, no team, not staff."""
    return grant(User.objects.create_user("bridge"))


def submit_for(caller: User, owner: str, policy: str = "dev", key: str | None = None, **fields):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client_for(caller).post(URL, {"policy": policy, "profile": "half", "owner": owner, **fields},
                                   format="json", **headers)


def test_the_request_is_the_owners_and_names_who_submitted_it(provisioned, bridge, bob):
    response = submit_for(bridge, "bob")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["owner"], body["submitted_by"]) == ("bob", "bridge")
    row = RequestRow.objects.get(pk=body["id"])
    assert (row.owner, row.submitted_by) == (bob, "bridge")


def test_the_first_history_entry_says_who_submitted_it_for_whom(provisioned, bridge, bob):
    request_id = submit_for(bridge, "bob", name="job-12").json()["id"]

    history = client_for(bob).get(f"{URL}/{request_id}/history").json()

    assert history[0]["state"] == "pending"
    assert history[0]["message"].startswith("submitted by bridge for bob: ")


def test_a_request_its_owner_submitted_has_no_submitter(provisioned, bob):
    response = client_for(bob).post(URL, {"policy": "dev", "profile": "half"}, format="json")

    assert response.json()["submitted_by"] is None


def test_naming_oneself_as_owner_needs_no_permission(provisioned, bob):
    response = submit_for(bob, "bob")

    assert response.status_code == 201
    assert (response.json()["owner"], response.json()["submitted_by"]) == ("bob", None)


def test_without_the_permission_it_is_403_naming_the_permission(provisioned, bob, carol):
    response = submit_for(bob, "carol")

    assert response.status_code == 403
    assert PERMISSION in response.json()["detail"]
    assert not RequestRow.objects.exists()


def test_a_superuser_needs_the_permission_granted_like_anyone(provisioned, alice, bob):
    assert alice.is_superuser and alice.has_perm(PERMISSION)  # Django's implied permissions do not count

    assert submit_for(alice, "bob").status_code == 403
    assert submit_for(grant(alice), "bob").status_code == 201


def test_the_permission_may_come_from_a_group(provisioned, carol, bob):
    bridges = Group.objects.create(name="bridges")
    bridges.permissions.add(Permission.objects.get(codename="submit_for_others"))
    carol.groups.add(bridges)

    assert submit_for(carol, "bob").status_code == 201


def test_an_unknown_or_inactive_owner_is_400_naming_owner(provisioned, bridge, carol):
    carol.is_active = False
    carol.save()

    for owner in ("nobody", "carol"):
        response = submit_for(bridge, owner)

        assert response.status_code == 400, owner
        assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [("owner", "unknown_user")]


@pytest.mark.parametrize("owner", [17, "", None, "x" * 151])
def test_an_owner_that_is_no_username_is_400_naming_owner(provisioned, bridge, owner):
    response = submit_for(bridge, owner)

    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "owner"


def test_the_owner_must_be_in_the_policys_group_not_the_submitter(provisioned, bridge, bob, carol):
    for_carol = submit_for(bridge, "carol")
    for_bob_in_research = submit_for(bridge, "bob", policy="research")

    assert for_carol.status_code == for_bob_in_research.status_code == 403
    assert for_carol.json()["detail"] == "carol may not submit to policy dev: they are not in its group dev"
    assert "bob may not submit to policy research" in for_bob_in_research.json()["detail"]


def test_the_pending_cap_counts_the_owners_requests(provisioned, bridge, bob, alice, settings):
    settings.POOLWEB = {**settings.POOLWEB, "MAX_PENDING_PER_USER": 2}
    for _ in range(2):
        request_row(bob, "dev", "4xgpu", 4)

    refused = submit_for(bridge, "bob")
    accepted = submit_for(bridge, "alice")

    assert refused.status_code == 429
    assert refused.json()["detail"].startswith("bob has 2 pending requests")
    assert accepted.status_code == 201


def test_a_retried_key_returns_the_first_request_whoever_it_now_names(provisioned, bridge, bob, alice):
    first = submit_for(bridge, "bob", key="slurm:c1:12")

    again = submit_for(bridge, "alice", key="slurm:c1:12")

    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"] and again.json()["owner"] == "bob"


def test_keys_are_the_submitting_accounts_so_an_owners_own_key_is_another_request(provisioned, bridge, bob):
    owners = client_for(bob).post(URL, {"policy": "dev", "profile": "half"}, format="json",
                                  HTTP_IDEMPOTENCY_KEY="slurm:c1:12")
    bridges = submit_for(bridge, "bob", key="slurm:c1:12")
    bridge_for_itself = client_for(bridge).post(URL, {"policy": "dev", "profile": "half"}, format="json",
                                                HTTP_IDEMPOTENCY_KEY="slurm:c1:12")

    assert (owners.status_code, bridges.status_code) == (201, 201)
    assert owners.json()["id"] != bridges.json()["id"]
    # The bridge's own key space holds its submission for bob: the same key is that request again.
    assert (bridge_for_itself.status_code, bridge_for_itself.json()["id"]) == (200, bridges.json()["id"])


def test_the_owner_follows_the_request_and_its_events(provisioned, bridge, bob):
    request_id = submit_for(bridge, "bob").json()["id"]
    reconcile_pass()

    assert client_for(bob).get(f"{URL}/{request_id}").json()["submitted_by"] == "bridge"
    announced = [json.loads(event.data) for event in Event.objects.filter(owner=bob, type="request.updated")]
    assert announced and all(data["submitted_by"] == "bridge" for data in announced)


def statements(captured) -> list[str]:
    return [q["sql"] for q in captured if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]


def test_submitting_for_another_costs_two_statements_more(provisioned, bridge, bob):
    """The grant and the owner read at once, and the audit entry (decision 154)."""
    half = services.Submission(policy="dev", profile="half", resources=Vector({"gpu": 500, "step_run": 1000}))
    services.submit(user=bob, submission=half)  # the live configuration is cached from here on

    with CaptureQueriesContext(connection) as own:
        services.submit(user=bob, submission=half)
    with CaptureQueriesContext(connection) as for_bob:
        services.submit(user=bridge, submission=services.Submission(**{**half.__dict__, "owner": "bob"}))

    # On PostgreSQL the request's one statement and the entry are two, so a savepoint joins them.
    assert len(statements(for_bob)) == len(statements(own)) + 2
    assert [q for q in for_bob if "poolweb_auditentry" in q["sql"]] and not [
        q for q in own if "poolweb_auditentry" in q["sql"]]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's plan")
def test_a_retried_key_is_found_by_the_two_constraints_indexes_not_a_scan(bridge):
    queries = []
    with connection.execute_wrapper(lambda execute, sql, params, many, context: queries.append((sql, params))
                                    or execute(sql, params, many, context)):
        found = request_by_idempotency_key(user=bridge, key="slurm:c1:12")
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + queries[0][0], queries[0][1])
        plan = " ".join(str(row[-1]) for row in cursor.fetchall())

    assert found is None
    assert "one_request_per_idempotency_key" in plan and "one_request_per_submitter_key" in plan
    assert "SCAN poolweb_request" not in plan
