"""``POST /requests/batch``: up to 500 submissions in one call, each answered as ``POST /requests``
would answer it, in item order, with one pass for the lot (decision 132)."""

from __future__ import annotations

import json
import threading

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection

from poolweb.models import Event, Request as RequestRow, RequestChange
from poolweb.services import request_batches, requests as services

from tests.poolweb.conftest import client_for, request_row, run_together

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests/batch"


@pytest.fixture
def bridge(db) -> User:
    user = User.objects.create_user("bridge")
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    return user


def job(number: int, owner: str = "bob", **fields) -> dict:
    return {"policy": "dev", "profile": "half", "owner": owner, "name": f"job-{number}",
            "idempotency_key": f"slurm:c1:{number}", **fields}


def send(user: User, items: list) -> list[dict]:
    response = client_for(user).post(URL, {"requests": items}, format="json")
    assert response.status_code == 200, response.content[:500]
    return response.json()["results"]


# Items refused, by their number modulo 20 (a quarter of them), and what each answers: status, error path.
REFUSED = {1: (lambda n: job(n, profile="nope"), 400, "profile"),
           3: (lambda n: job(n, policy="research"), 403, None),
           5: (lambda n: job(n, owner="nobody"), 400, "owner"),
           7: (lambda n: ["not", "an", "object"], 400, ""),
           9: (lambda n: job(n, idempotency_key=""), 400, "idempotency_key")}


def mixed(count: int) -> list:
    """bob's jobs, but for a quarter refused, each for one of five reasons."""
    return [REFUSED[n % 20][0](n) if n % 20 in REFUSED else job(n) for n in range(count)]


def test_five_hundred_items_are_answered_in_item_order_each_as_post_requests_would(provisioned, bridge, bob):
    items = mixed(500)

    results = send(bridge, items)

    assert len(results) == 500
    for number, (item, result) in enumerate(zip(items, results)):
        if number % 20 not in REFUSED:
            assert result["status"] == 201, (number, result)
            assert (result["request"]["name"], result["request"]["owner"]) == (f"job-{number}", "bob")
            assert result["request"]["submitted_by"] == "bridge"
            continue
        _, status, path = REFUSED[number % 20]
        assert result["status"] == status, (number, result)
        if path is None:
            assert "bob may not submit to policy research" in result["detail"]
        else:
            assert result["errors"][0]["path"] == path, (number, result)
    assert RequestRow.objects.count() == sum(1 for r in results if r["status"] == 201)


def test_the_same_batch_again_returns_the_same_requests(provisioned, bridge, bob):
    items = mixed(500)
    first = send(bridge, items)

    again = send(bridge, items)

    stored = [(f["request"]["id"], a["request"]["id"], a["status"]) for f, a in zip(first, again) if "request" in f]
    assert stored and all(first_id == again_id and status == 200 for first_id, again_id, status in stored)
    assert [a["status"] for f, a in zip(first, again) if "request" not in f] == \
        [f["status"] for f in first if "request" not in f]
    assert RequestRow.objects.count() == len(stored)


def test_one_pass_follows_the_batch_not_one_per_item(provisioned, bridge, bob, monkeypatch):
    asked = []
    monkeypatch.setattr(services, "reconcile_soon", lambda trigger: asked.append(trigger) or False)

    send(bridge, [job(n) for n in range(20)])

    assert asked == ["request"]


def test_the_pass_that_follows_is_in_the_answer(provisioned, bob):
    results = send(bob, [{"policy": "dev", "profile": "half"}])

    assert results[0]["request"]["state"] == "allocated"  # the inline pass ran before the answer


def test_an_owners_pending_cap_refuses_only_the_items_beyond_it(provisioned, bridge, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "MAX_PENDING_PER_USER": 2}
    request_row(bob, "dev", "4xgpu", 4)

    results = send(bridge, [job(n) for n in range(3)])

    assert [r["status"] for r in results] == [201, 429, 429]
    assert results[1]["detail"].startswith("bob has 2 pending requests")


def test_one_key_twice_in_a_batch_is_one_request(provisioned, bridge, bob):
    results = send(bridge, [job(1), job(1, name="the same job again")])

    assert [r["status"] for r in results] == [201, 200]
    assert results[0]["request"]["id"] == results[1]["request"]["id"]


def test_items_for_others_without_the_permission_are_403_and_the_others_go_through(provisioned, bob):
    results = send(bob, [job(1, owner="carol"), {"policy": "dev", "profile": "half"}])

    assert [r["status"] for r in results] == [403, 201]
    assert "poolweb.submit_for_others" in results[0]["detail"]


def no_passes(monkeypatch) -> None:
    """The pass a batch asks for is not run: the events are the batch's own."""
    monkeypatch.setattr(services, "reconcile_soon", lambda trigger: False)


def announced_since(seq: int) -> list[int]:
    """The requests of the ``request.updated`` events after ``seq``, in seq order."""
    return [json.loads(data)["id"] for data in Event.objects.filter(seq__gt=seq, type="request.updated")
            .order_by("seq").values_list("data", flat=True)]


def last_seq() -> int:
    return Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0


def test_items_refused_between_good_ones_leave_them_as_their_single_calls_would_and_send_nothing(
        provisioned, bridge, bob, monkeypatch):
    no_passes(monkeypatch)
    seq = last_seq()
    items = [job(0), job(1, profile="nope"), job(2), job(3, policy="research"), job(4), job(5, owner="nobody"),
             job(6, idempotency_key="")]

    results = send(bridge, items)

    assert [r["status"] for r in results] == [201, 400, 201, 403, 201, 400, 400]
    stored = RequestRow.objects.order_by("id")
    assert [(r.name, r.state, r.owner.username, r.submitted_by, r.idempotency_key) for r in stored] == [
        (f"job-{n}", "pending", "bob", "bridge", f"slurm:c1:{n}") for n in (0, 2, 4)]
    assert [r["request"]["id"] for r in results if r["status"] == 201] == [r.pk for r in stored]
    assert announced_since(seq) == [r.pk for r in stored]  # one event each, none for a refused item
    assert [c.request_id for c in RequestChange.objects.order_by("id")] == [r.pk for r in stored]


def test_a_key_another_call_took_after_the_batch_read_its_keys_returns_that_request_and_stores_the_rest(
        provisioned, bridge, bob, monkeypatch):
    no_passes(monkeypatch)
    taken = send(bridge, [job(2)])[0]["request"]["id"]
    monkeypatch.setattr(request_batches, "requests_by_idempotency_keys", lambda **_: {})  # read before it
    seq = last_seq()

    results = send(bridge, [job(1), job(2, name="late"), job(3)])

    assert [r["status"] for r in results] == [201, 200, 201]
    assert results[1]["request"]["id"] == taken and results[1]["request"]["name"] == "job-2"
    new = [results[0]["request"]["id"], results[2]["request"]["id"]]
    assert sorted(RequestRow.objects.values_list("id", flat=True)) == sorted([taken, *new])
    assert announced_since(seq) == new  # nothing for the row its savepoint rolled back


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="SQLite has one writer: two batches queue")
def test_two_batches_with_the_same_keys_at_once_store_each_key_once(provisioned, bridge, bob, monkeypatch):
    no_passes(monkeypatch)
    items = [job(n) for n in range(60)]
    answers: list[list[dict]] = []
    lock = threading.Lock()

    def batch() -> None:
        try:
            results = send(bridge, items)
            with lock:
                answers.append(results)
        finally:
            connection.close()

    run_together(batch, batch)

    assert len(answers) == 2
    first, second = answers
    assert [r["request"]["id"] for r in first] == [r["request"]["id"] for r in second]
    assert all(sorted((a["status"], b["status"])) == [200, 201] for a, b in zip(first, second))
    assert RequestRow.objects.count() == 60
    assert sorted(announced_since(0)) == sorted(r["request"]["id"] for r in first)  # one event each


def test_an_empty_batch_is_an_empty_answer(provisioned, bob):
    assert send(bob, []) == []


@pytest.mark.parametrize("body,path,code", [
    ([], "", "invalid_type"),
    ({}, "requests", "required"),
    ({"requests": {"policy": "dev"}}, "requests", "invalid_type"),
    ({"requests": [], "extra": 1}, "extra", "unknown_field"),
    ({"requests": [{}] * 501}, "requests", "too_many"),
])
def test_a_bad_envelope_is_400_naming_the_field(provisioned, bob, body, path, code):
    response = client_for(bob).post(URL, body, format="json")

    assert response.status_code == 400
    assert (response.json()["errors"][0]["path"], response.json()["errors"][0]["code"]) == (path, code)
    assert not RequestRow.objects.exists()
