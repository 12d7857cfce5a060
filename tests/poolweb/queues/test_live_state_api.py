"""Live state through the API (api.md §2): GET /pools, /pools/{name}/queue, /policies.

Requests are made as rows and judged by a real reconcile pass, as the service does after a
submission; the configuration goes live through the configuration service.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.db.models import Max

from poolweb.models import Event, Request as RequestRow
from poolweb.services import config as config_services
from poolweb.selectors.requests import audience_of
from poolweb.services.payloads import request_data
from poolweb.services.reconciler import reconcile_pass
from reconcile import parse_quantity

from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db




def go_live(doc: dict, author: User, comment: str = "test") -> None:
    config_services.config_provision_document(document=doc, author=author, comment=comment)


def submit(owner: User, queue: str, *, preemptible: bool = True, name: str = "", **amounts) -> RequestRow:
    """A request row as a submission stores it (milli-units, ``step_run: 1`` added), then a pass."""
    policy, profile = queue.split("/")
    resources = {key: parse_quantity(value) for key, value in {**amounts, "step_run": 1}.items()}
    row = RequestRow.objects.create(owner=owner, policy=policy, profile=profile, resources=resources,
                                    preemptible=preemptible, name=name)
    reconcile_pass()
    row.refresh_from_db()
    return row


def fixed(owner: User, queue: str, **extra) -> RequestRow:
    """A request on a fixed profile of the demo document, with its allotment."""
    allotment = {"half": {"gpu": "0.5"}, "4xgpu": {"gpu": 4}, "job": {"gpu": 1}}[queue.split("/")[1]]
    return submit(owner, queue, **allotment, **extra)


def by_name(items: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in items}


# --- GET /pools -------------------------------------------------------------------------------

def test_pools_show_capacity_used_free_pending_and_running_as_numbers(alice, bob, carol):
    go_live(document(), alice)
    fixed(alice, "research/4xgpu")
    fixed(alice, "research/4xgpu")  # h100 is full
    fixed(bob, "dev/half")  # 0.5 of a100
    waiting = fixed(bob, "dev/4xgpu")  # 4 do not fit in a100's 3.5 left
    assert waiting.state == "pending" and waiting.queue_pool == "h100"

    response = client_for(carol).get("/api/v1/pools")

    assert response.status_code == 200
    assert response.json() == [
        {"name": "h100", "description": "", "capacity": {"gpu": 8}, "used": {"gpu": 8},
         "free": {"gpu": 0}, "overcommitted": {}, "held": {}, "pending": 1, "running": 2},
        # 4xgpu may be served from a100 too: the request waiting for h100 is pending for a100 as well
        {"name": "a100", "description": "", "capacity": {"gpu": 4}, "used": {"gpu": 0.5},
         "free": {"gpu": 3.5}, "overcommitted": {}, "held": {}, "pending": 1, "running": 1},
    ]


def test_pools_are_empty_before_anything_is_provisioned(bob):
    response = client_for(bob).get("/api/v1/pools")

    assert response.status_code == 200
    assert response.json() == []


def test_a_capacity_shrunk_below_usage_shows_as_overcommitted_and_free_stays_at_zero(alice):
    go_live(document(), alice)
    fixed(alice, "research/4xgpu")
    fixed(alice, "research/4xgpu")
    smaller = document()
    smaller["pools"][0]["capacity"] = {"gpu": 5}
    go_live(smaller, alice, "h100 loses three GPUs")  # R-57: live allocations are never cut

    pools = by_name(client_for(alice).get("/api/v1/pools").json())

    assert pools["h100"]["used"] == {"gpu": 8}
    assert pools["h100"]["free"] == {"gpu": 0}
    assert pools["h100"]["overcommitted"] == {"gpu": 3}
    assert pools["a100"]["overcommitted"] == {}


def test_a_pool_that_meters_step_run_counts_jobs_in_used_and_free(alice, bob):
    doc = document()
    doc["pools"][0]["capacity"] = {"gpu": 8, "step_run": 3}
    go_live(doc, alice)
    fixed(bob, "dev/4xgpu")

    pools = by_name(client_for(bob).get("/api/v1/pools").json())

    assert pools["h100"]["used"] == {"gpu": 4, "step_run": 1}
    assert pools["h100"]["free"] == {"gpu": 4, "step_run": 2}


def preemption_document() -> dict:
    """S-9, second run: ``high`` preempts ``low`` on a one-GPU pool."""
    return {
        "pools": [{"name": "p", "capacity": {"gpu": 1}}],
        "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "p"}],
                      "policies": ["high", "low"]}],
        "policies": [
            {"name": "low", "group": "dev", "priority": 1, "quotas": [{"scope": "p", "key": "gpu", "reserved": 0, "limit": 1}]},
            {"name": "high", "group": "dev", "priority": 2, "quotas": [{"scope": "p", "key": "gpu", "reserved": 0, "limit": 1}]},
        ],
    }


def test_capacity_held_for_a_preemptor_shows_on_its_pool(alice, bob):
    go_live(preemption_document(), alice)
    victim = submit(bob, "low/one", gpu=1)
    preemptor = submit(alice, "high/one", gpu=1)
    victim.refresh_from_db()
    assert (victim.state, preemptor.state, preemptor.reason) == ("preempting", "pending", "WaitingForPreemption")

    [pool] = client_for(bob).get("/api/v1/pools").json()

    assert pool["used"] == {"gpu": 1}  # the victim still holds it (R-44)
    assert pool["held"] == {"gpu": 1}  # and it is promised to the preemptor (R-45)
    assert (pool["running"], pool["pending"]) == (1, 1)


def test_free_room_leaves_out_what_is_held_beyond_the_victims(alice, bob):
    doc = preemption_document()
    doc["pools"][0]["capacity"] = {"gpu": 4}
    doc["profiles"][0]["resources"] = {"gpu": 1}
    doc["profiles"][0]["dynamic"] = True
    for policy in doc["policies"]:
        policy["quotas"] = []
    go_live(doc, alice)
    victims = [submit(bob, "low/one", gpu=1) for _ in range(3)]
    preemptor = submit(alice, "high/one", gpu=3)  # 1 free: its victims leave 2, and it holds 3
    assert preemptor.reason == "WaitingForPreemption" and len(victims) == 3
    [pool] = client_for(bob).get("/api/v1/pools").json()
    assert (pool["used"], pool["held"], pool["free"]) == ({"gpu": 3}, {"gpu": 3}, {"gpu": 0})


# --- GET /pools/{name}/queue ------------------------------------------------------------------

def queue_document() -> dict:
    """The demo pools with limits and no reservations, so nothing waiting can reclaim (R-41):
    research (priority 10) fills both pools, and dev (priority 0) waits behind it."""
    return document(policies=[
        {"name": "dev", "group": "dev", "quotas": [{"scope": "*", "key": "gpu", "limit": 12}]},
        {"name": "research", "group": "research", "priority": 10, "quotas": [{"scope": "*", "key": "gpu", "limit": 12}]},
    ])


def fill_the_pools(alice: User) -> None:
    go_live(queue_document(), alice)
    for _ in range(3):
        fixed(alice, "research/4xgpu")  # h100 8 of 8, a100 4 of 4: research at its limit of 12


def held_on_a100(alice: User, bob: User) -> RequestRow:
    """h100 full of dev's work that cannot be preempted, so research's 4xgpu preempts on a100, its
    later pool: the preemptor, waiting for its victim to leave a100."""
    go_live(document(policies=[
        {"name": "dev", "group": "dev", "quotas": [{"scope": "*", "key": "gpu", "reserved": 8, "limit": 12}]},
        {"name": "research", "group": "research", "priority": 10, "quotas": [{"scope": "*", "key": "gpu", "limit": 12}]},
    ]), alice)
    for _ in range(2):
        fixed(bob, "dev/4xgpu", preemptible=False)
    victim = fixed(bob, "dev/4xgpu")
    preemptor = fixed(alice, "research/4xgpu")
    assert RequestRow.objects.get(pk=victim.pk).state == "preempting"
    return preemptor


def test_a_preemptor_is_listed_on_every_pool_it_may_use_and_counted_where_capacity_is_held(alice, bob):
    # decision 119: it waits on a100, where capacity is held, and h100 (its preferred pool) still lists it
    preemptor = held_on_a100(alice, bob)
    assert (preemptor.state, preemptor.queue_pool, preemptor.held_pool) == ("pending", "a100", "a100")

    for pool in ("a100", "h100"):
        entries = client_for(bob).get(f"/api/v1/pools/{pool}/queue").json()["results"]
        assert [(e["id"], e["held_pool"], e["position"]) for e in entries] == [(preemptor.id, "a100", 1)]
    pools = by_name(client_for(bob).get("/api/v1/pools").json())
    assert (pools["a100"]["pending"], pools["h100"]["pending"]) == (1, 1)  # as many as each table lists
    assert pools["a100"]["held"] == {"gpu": 4}



def test_a_pass_announces_a_waiting_request_on_every_pool_it_may_use_as_the_api_counts_it(alice, bob):
    fill_the_pools(alice)
    since = Event.objects.aggregate(last=Max("seq"))["last"]

    fixed(bob, "dev/4xgpu")  # 4xgpu is connected to h100 and a100, both full: it waits

    announced = {data["name"]: data["pending"] for data in map(json.loads, Event.objects.filter(
        seq__gt=since, type="pool.updated").values_list("data", flat=True))}
    pools = by_name(client_for(bob).get("/api/v1/pools").json())
    assert announced == {name: pools[name]["pending"] for name in ("a100", "h100")} == {"a100": 1, "h100": 1}

def test_the_queue_lists_pending_requests_in_service_order_with_position_and_reason(alice, bob):
    fill_the_pools(alice)
    first_in = fixed(bob, "dev/4xgpu", name="bobs-job")
    later_but_higher = fixed(alice, "research/4xgpu", name="alices-job")

    response = client_for(alice).get("/api/v1/pools/h100/queue")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    entries = body["results"]
    assert [(e["id"], e["position"]) for e in entries] == [(later_but_higher.id, 1), (first_in.id, 2)]  # R-32.1
    first_in.refresh_from_db()
    assert entries[1] == request_data(first_in)  # the request object, as GET /requests/{id} shows it
    assert (entries[1]["reason"], entries[1]["owner"]) == ("WaitingForCapacity", "bob")
    assert entries[0]["reason"] == "WaitingForQuota"  # research is at its limit of 12


# The privacy rule (api.md §2): whole for one's own requests, one's teams' and for admins; of
# anyone else's only where it stands and what it takes.
PUBLIC = {"id", "state", "position", "held_pool", "policy", "profile", "resources", "pool", "submitted_at", "allocated_at",
          "finished_at", "lease_expires_at", "grace_ends_at", "eta", "eta_basis", "eta_confidence"}


@pytest.fixture
def queued(alice, bob) -> dict[str, RequestRow]:
    fill_the_pools(alice)
    bobs = fixed(bob, "dev/4xgpu", name="bobs-job")
    RequestRow.objects.filter(pk=bobs.pk).update(labels={"team": "nlp"})
    return {"bob": bobs, "alice": fixed(alice, "research/4xgpu", name="alices-job")}


def queue_as(user: User) -> dict[int, dict]:
    return {entry["id"]: entry for entry in client_for(user).get("/api/v1/pools/h100/queue").json()["results"]}


def test_a_user_in_no_team_sees_where_others_requests_stand_but_not_whose_or_what_for(queued, carol):
    entries = queue_as(carol)

    assert [set(entry) for entry in entries.values()] == [PUBLIC, PUBLIC]
    assert entries[queued["bob"].id]["resources"] == {"gpu": 4, "step_run": 1}
    assert "bobs-job" not in str(entries) and "nlp" not in str(entries)


def test_a_member_sees_their_own_and_their_teams_requests_whole_and_others_public(queued, bob):
    dave = User.objects.create_user("dave")
    dave.groups.add(*bob.groups.all())  # bob's team, dev

    for user in (bob, dave):
        entries = queue_as(user)
        assert entries[queued["bob"].id]["owner"] == "bob"
        assert entries[queued["bob"].id]["labels"] == {"team": "nlp"}
        assert set(entries[queued["alice"].id]) == PUBLIC  # research is not their team


def test_an_admin_sees_every_request_in_a_queue_whole(queued, alice):
    entries = queue_as(alice)

    assert {entry["owner"] for entry in entries.values()} == {"alice", "bob"}


def test_a_users_teams_are_the_live_policies_whose_group_they_are_in(alice, bob, carol):
    go_live(document(), alice)
    bob.groups.add(Group.objects.create(name="no-policy-has-it"))

    assert audience_of(bob).team_policies == {"dev"}
    assert audience_of(carol).team_policies == frozenset()
    assert audience_of(alice).is_admin


def test_the_queue_is_paginated(alice, bob):
    fill_the_pools(alice)
    for _ in range(3):
        fixed(bob, "dev/4xgpu")

    body = client_for(bob).get("/api/v1/pools/h100/queue?limit=2").json()

    assert body["count"] == 3
    assert [e["position"] for e in body["results"]] == [1, 2]
    assert body["next"] is not None and body["previous"] is None
    rest = client_for(bob).get("/api/v1/pools/h100/queue?limit=2&offset=2").json()
    assert [e["position"] for e in rest["results"]] == [3]


def test_a_queue_page_holds_at_most_a_thousand_entries(alice, bob):
    fill_the_pools(alice)
    RequestRow.objects.bulk_create([
        RequestRow(owner=bob, policy="dev", profile="4xgpu", resources={"gpu": 4000, "step_run": 1000},
                   queue_pool="h100", position=place) for place in range(1, 1003)])

    body = client_for(bob).get("/api/v1/pools/h100/queue?limit=5000").json()

    assert body["count"] == 1002
    assert len(body["results"]) == 1000 and body["results"][-1]["position"] == 1000


def test_a_pool_with_nothing_waiting_has_an_empty_queue(alice, bob):
    go_live(document(), alice)

    body = client_for(bob).get("/api/v1/pools/a100/queue").json()

    assert (body["count"], body["results"]) == (0, [])


@pytest.mark.parametrize("name", ["v100", "H100", "-h100", "h100 ", "a" * 64, "%00", "h100..", "%E2%82%AC"])
def test_the_queue_of_an_unknown_or_malformed_pool_is_404(alice, bob, name):
    go_live(document(), alice)

    response = client_for(bob).get(f"/api/v1/pools/{name}/queue")

    assert response.status_code == 404, name
    if name != "h100..":  # a well-formed name, just not a pool
        assert "detail" in response.json()


# --- GET /policies ----------------------------------------------------------------------------

def s2_document() -> dict:
    return {
        "pools": [{"name": "dc", "capacity": {"gpu": 8}}],
        "profiles": [{"name": "job", "resources": {"gpu": 1}, "dynamic": True, "connections": [{"pool": "dc"}],
                      "policies": ["ml"]}],
        "policies": [{"name": "ml", "group": "dev", "priority": 10,
                      "quotas": [{"scope": "dc", "key": "gpu", "reserved": 4, "limit": 8}]}],
    }


def test_s2_a_preemptible_request_borrows_past_its_reservation(alice, bob):
    go_live(s2_document(), alice)
    request = submit(bob, "ml/job", gpu=6)
    assert request.state == "allocated"

    response = client_for(bob).get("/api/v1/policies")

    assert response.status_code == 200
    row = {"pending": 0, "running": 1}
    assert response.json() == [{
        "name": "ml", "description": "", "group": "dev", "priority": 10, "pending": 0, "running": 1,
        "scopes": [
            {"scope": "*", "key": "gpu", "usage": 6, "reserved": None, "limit": None, "borrowed": 2, **row},
            {"scope": "dc", "key": "gpu", "usage": 6, "reserved": 4, "limit": 8, "borrowed": 2, **row},
        ],
    }]


def test_policies_count_pending_per_queue_pool_and_running_per_pool(alice, bob):
    fill_the_pools(alice)  # research: 2 on h100, 1 on a100
    fixed(bob, "dev/4xgpu")  # waits in h100's queue
    fixed(bob, "dev/half")  # waits in a100's queue

    policies = by_name(client_for(bob).get("/api/v1/policies").json())

    research, dev = policies["research"], policies["dev"]
    assert (research["running"], research["pending"]) == (3, 0)
    assert (dev["running"], dev["pending"]) == (0, 2)
    counts = {(r["scope"], r["key"]): (r["usage"], r["running"], r["pending"]) for r in research["scopes"]}
    assert counts[("*", "gpu")] == (12, 3, 0)
    assert counts[("h100", "gpu")] == (8, 2, 0)
    assert counts[("a100", "gpu")] == (4, 1, 0)
    dev_star = next(r for r in dev["scopes"] if r["scope"] == "*" and r["key"] == "gpu")
    assert (dev_star["usage"], dev_star["reserved"], dev_star["limit"], dev_star["pending"]) == (0, None, 12, 2)


def test_fractional_usage_reads_as_exact_numbers(alice, bob):
    go_live(document(), alice)
    for _ in range(3):
        fixed(bob, "dev/half")

    dev = by_name(client_for(bob).get("/api/v1/policies").json())["dev"]

    star = next(r for r in dev["scopes"] if r["scope"] == "*" and r["key"] == "gpu")
    assert (star["usage"], star["borrowed"]) == (1.5, 0)


# --- who may read, and how much it costs -------------------------------------------------------

@pytest.mark.parametrize("path", ["/api/v1/pools", "/api/v1/pools/h100/queue", "/api/v1/policies"])
def test_anonymous_callers_are_told_to_authenticate(alice, path):
    go_live(document(), alice)

    response = client_for(None).get(path)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["/api/v1/pools", "/api/v1/pools/h100/queue", "/api/v1/policies"])
def test_live_reads_take_the_same_few_queries_however_many_requests_there_are(
        alice, bob, path, django_assert_max_num_queries):
    fill_the_pools(alice)
    for _ in range(2):
        fixed(bob, "dev/4xgpu")
    client = client_for(bob)
    client.get(path)  # the configuration is parsed once per version, not per read
    with django_assert_max_num_queries(8) as few:  # the site and its version are two reads (decision 110)
        assert client.get(path).status_code == 200
    for _ in range(20):
        fixed(bob, "dev/4xgpu")
        fixed(bob, "dev/half")
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(path).status_code == 200


def test_every_signed_in_user_reads_every_policy_not_only_their_teams(provisioned, bob, carol):
    # decision 118: shares and usage are not secret; the console's /policies/ shows the same list
    for user in (bob, carol):
        assert [p["name"] for p in client_for(user).get("/api/v1/policies").json()] == ["dev", "research"]
