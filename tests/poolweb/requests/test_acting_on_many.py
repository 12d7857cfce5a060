"""``POST /requests/actions``: heartbeat, release or cancel up to 500 requests in one call, each
answered as ``POST /requests/{id}/<action>`` would answer it, in item order, with one pass for the
lot (decisions 141, 136)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from poolweb import sql
from poolweb.models import Event, Request as RequestRow, RequestChange, UnannouncedChange
from poolweb.services import requests as services
from poolweb.sqlite.locks import LockTimeout

from tests.poolweb.conftest import client_for, request_row, run_together

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests/actions"


def send(user, action: str, items: list) -> list[dict]:
    response = client_for(user).post(URL, {"action": action, "requests": items}, format="json")
    assert response.status_code == 200, response.content[:500]
    return response.json()["results"]


def running(owner, count: int = 1) -> list[RequestRow]:
    """``count`` allocated half-GPU requests of ``owner`` on a100, their leases 20 s from running out."""
    rows = [request_row(owner, "dev", "half", 0.5, state="allocated", pool="a100") for _ in range(count)]
    soon = timezone.now() + timedelta(seconds=20)
    RequestRow.objects.filter(pk__in=[r.pk for r in rows]).update(lease_expires_at=soon)
    return rows


def states(*rows: RequestRow) -> list[str]:
    return [RequestRow.objects.get(pk=row.pk).state for row in rows]


def pass_counter(monkeypatch) -> list[str]:
    """The passes asked for, none run."""
    asked: list[str] = []
    monkeypatch.setattr(services, "reconcile_soon", lambda trigger: asked.append(trigger) or False)
    return asked


# --- each action ---------------------------------------------------------------------------------

def test_a_heartbeat_renews_every_lease(provisioned, bob):
    rows = running(bob, 3)

    results = send(bob, "heartbeat", [{"id": row.pk} for row in rows])

    assert [r["status"] for r in results] == [200, 200, 200]
    assert [r["request"]["id"] for r in results] == [row.pk for row in rows]
    renewed = RequestRow.objects.filter(pk__in=[row.pk for row in rows]).values_list("lease_expires_at", flat=True)
    assert all(lease > timezone.now() + timedelta(seconds=200) for lease in renewed)


def test_a_release_gives_back_every_request(provisioned, bob):
    rows = running(bob, 3)

    results = send(bob, "release", [{"id": row.pk} for row in rows])

    assert [(r["status"], r["request"]["state"]) for r in results] == [(200, "released")] * 3
    assert states(*rows) == ["released"] * 3


def test_a_cancel_withdraws_queued_and_running_requests(provisioned, bob):
    queued, live = request_row(bob, "dev", "4xgpu", 4), running(bob)[0]

    results = send(bob, "cancel", [{"id": queued.pk}, {"id": live.pk}])

    assert [(r["status"], r["request"]["state"]) for r in results] == [(200, "cancelled"), (200, "released")]
    assert results[1]["request"]["reason"] == "CancelledByUser"  # a live request is released
    assert states(queued, live) == ["cancelled", "released"]


def test_an_empty_list_is_an_empty_answer(provisioned, bob):
    assert send(bob, "release", []) == []


# --- each item as its single call -------------------------------------------------------------------

def test_mixed_outcomes_come_back_in_item_order_each_as_its_single_call_answers(provisioned, bob):
    live, queued = running(bob)[0], request_row(bob, "dev", "4xgpu", 4)
    items = [{"id": 10**6}, {"id": queued.pk}, {"id": live.pk}]

    results = send(bob, "heartbeat", items)

    assert [r["status"] for r in results] == [404, 409, 200]
    for item, result in zip(items[:2], results):  # neither changed anything: asking again answers the same
        single = client_for(bob).post(f"/api/v1/requests/{item['id']}/heartbeat")
        assert (result["status"], result["detail"]) == (single.status_code, single.json()["detail"])
    assert results[2]["request"]["lease_expires_at"] > results[2]["request"]["allocated_at"]


def test_bob_cannot_act_on_alices_requests_but_an_admin_on_bobs(provisioned, alice, bob):
    hers, his = running(alice)[0], running(bob)[0]

    results = send(bob, "release", [{"id": hers.pk}, {"id": his.pk}])

    assert [r["status"] for r in results] == [404, 200]
    assert results[0]["detail"] == f"there is no request {hers.pk}"
    assert states(hers, his) == ["allocated", "released"]
    queued = request_row(bob, "dev", "4xgpu", 4)
    assert send(alice, "cancel", [{"id": queued.pk}])[0]["request"]["state"] == "cancelled"


def test_events_go_out_for_the_items_that_changed_only(provisioned, bob):
    live, done = running(bob, 2)
    send(bob, "release", [{"id": done.pk}])
    seq = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0

    send(bob, "release", [{"id": done.pk}, {"id": 10**6}, {"id": live.pk}])

    updated = [json.loads(data)["id"] for data in
               Event.objects.filter(seq__gt=seq, type="request.updated").values_list("data", flat=True)]
    assert updated == [live.pk]


# --- attempts (decision 9) -----------------------------------------------------------------------------

def test_a_heartbeat_for_an_attempt_that_is_over_is_409_and_the_current_one_200(provisioned, bob):
    row = running(bob)[0]
    RequestRow.objects.filter(pk=row.pk).update(attempt=2)

    results = send(bob, "heartbeat", [{"id": row.pk, "attempt": 1}, {"id": row.pk, "attempt": 2}])

    assert [r["status"] for r in results] == [409, 200]
    assert "attempt 1" in results[0]["detail"]


def test_a_release_for_another_attempt_changes_nothing(provisioned, bob):
    row = running(bob)[0]
    RequestRow.objects.filter(pk=row.pk).update(attempt=2)

    results = send(bob, "release", [{"id": row.pk, "attempt": 1}])

    assert (results[0]["status"], results[0]["request"]["state"], states(row)) == (200, "allocated", ["allocated"])


@pytest.mark.parametrize("action, item, path, code", [
    ("cancel", {"attempt": 1}, "attempt", "unknown_field"),
    ("release", {"attempt": "1"}, "attempt", "invalid"),
    ("heartbeat", {"attempt": 0}, "attempt", "invalid"),
    ("release", {"attempts": 1}, "attempts", "unknown_field"),
])
def test_an_items_bad_attempt_is_its_400_and_the_others_go_through(provisioned, bob, action, item, path, code):
    refused, other = running(bob, 2)

    results = send(bob, action, [{"id": refused.pk, **item}, {"id": other.pk}])

    assert [r["status"] for r in results] == [400, 200]
    assert [(e["path"], e["code"]) for e in results[0]["errors"]] == [(path, code)]
    assert states(refused) == ["allocated"]


def test_an_items_400_is_what_its_single_call_answers_for_that_body(provisioned, bob):
    row = running(bob)[0]

    result = send(bob, "cancel", [{"id": row.pk, "attempt": 1}])[0]
    single = client_for(bob).post(f"/api/v1/requests/{row.pk}/cancel", {"attempt": 1}, format="json")

    assert (result["status"], result["errors"]) == (single.status_code, single.json()["errors"])


# --- one pass --------------------------------------------------------------------------------------

def test_one_pass_follows_the_releases_not_one_per_item(provisioned, bob, monkeypatch):
    rows = running(bob, 8)
    asked = pass_counter(monkeypatch)

    send(bob, "release", [{"id": row.pk} for row in rows])

    assert asked == ["request"]


def test_no_pass_follows_heartbeats_or_a_batch_that_changed_nothing(provisioned, bob, monkeypatch):
    live, queued = running(bob)[0], request_row(bob, "dev", "half", 0.5)
    asked = pass_counter(monkeypatch)

    send(bob, "heartbeat", [{"id": live.pk}])
    send(bob, "release", [{"id": queued.pk}, {"id": 10**6}])  # a queued request is not released

    assert asked == []


def test_the_pass_that_follows_is_in_the_answer(provisioned, bob):
    holder = running(bob)[0]
    RequestRow.objects.filter(pk=holder.pk).update(state="preempting", max_retries=1, preempted_at=timezone.now(),
                                                   reason="PreemptedByPriority")

    result = send(bob, "release", [{"id": holder.pk}])[0]

    assert (result["request"]["attempt"], result["request"]["state"]) == (2, "allocated")  # queued, then granted


# --- the envelope ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, path, code", [
    ([], "", "invalid_type"),
    ({"requests": []}, "action", "required"),
    ({"action": "renew", "requests": []}, "action", "invalid_choice"),
    ({"action": ["release"], "requests": []}, "action", "invalid_choice"),
    ({"action": "release"}, "requests", "required"),
    ({"action": "release", "requests": {"id": 1}}, "requests", "invalid_type"),
    ({"action": "release", "requests": [{"id": 1}] * 501}, "requests", "too_many"),
    ({"action": "release", "requests": [], "attempt": 1}, "attempt", "unknown_field"),
    ({"action": "release", "requests": [{"id": 1}, 7]}, "requests[1]", "invalid_type"),
    ({"action": "release", "requests": [{"attempt": 1}]}, "requests[0].id", "required"),
    ({"action": "release", "requests": [{"id": "1"}]}, "requests[0].id", "invalid"),
    ({"action": "release", "requests": [{"id": 0}]}, "requests[0].id", "invalid"),
    ({"action": "release", "requests": [{"id": True}]}, "requests[0].id", "invalid"),
    ({"action": "release", "requests": [{"id": 1.0}]}, "requests[0].id", "invalid"),
])
def test_a_bad_envelope_is_400_naming_the_field_and_nothing_is_done(provisioned, bob, body, path, code):
    row = running(bob)[0]
    if isinstance(body, dict) and body.get("requests") == [{"id": 1}, 7]:
        body = {**body, "requests": [{"id": row.pk}, 7]}  # the good item is not released either

    response = client_for(bob).post(URL, body, format="json")

    assert response.status_code == 400
    assert (response.json()["errors"][0]["path"], response.json()["errors"][0]["code"]) == (path, code)
    assert states(row) == ["allocated"]


def test_every_envelope_error_is_named_at_once(provisioned, bob):
    response = client_for(bob).post(URL, {"action": "x", "requests": [{"id": -1}, {}, "7"]}, format="json")

    assert [e["path"] for e in response.json()["errors"]] == ["action", "requests[0].id", "requests[1].id",
                                                              "requests[2]"]


def test_a_lock_not_free_in_time_ends_the_batch_with_503_and_nothing_done(provisioned, bob, monkeypatch):
    rows = running(bob, 3)

    def busy() -> None:  # the outbox's lock, the last the batch takes, after its rows are written
        raise LockTimeout("outbox lock", 10)

    monkeypatch.setattr(sql, "lock_outbox", busy)
    asked = pass_counter(monkeypatch)
    seq = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0

    response = client_for(bob).post(URL, {"action": "release", "requests": [{"id": r.pk} for r in rows]},
                                    format="json")

    assert (response.status_code, response.json()["code"]) == (503, "busy")  # as one call answers (decision 79)
    assert states(*rows) == ["allocated"] * 3
    assert not RequestChange.objects.filter(request__in=rows).exists()
    assert not UnannouncedChange.objects.exists() and not Event.objects.filter(seq__gt=seq).exists()
    assert asked == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="SQLite has one writer: two batches queue")
def test_two_batches_releasing_the_same_requests_in_opposite_orders_at_once_both_answer(provisioned, bob,
                                                                                        monkeypatch):
    rows = running(bob, 40)
    asked = pass_counter(monkeypatch)
    answers: list[list[dict]] = []

    def batch(order: list[RequestRow]) -> Callable[[], None]:
        def send_it() -> None:
            try:
                answers.append(send(bob, "release", [{"id": r.pk} for r in order]))
            finally:
                connection.close()
        return send_it

    run_together(batch(rows), batch(rows[::-1]))  # each item's lock in item order would deadlock them

    assert len(answers) == 2 and all(r["status"] == 200 for answer in answers for r in answer)
    assert states(*rows) == ["released"] * 40
    assert RequestChange.objects.filter(request__in=rows, state="released").count() == 40  # released once each
    assert asked
