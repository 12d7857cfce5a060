"""Races and rough edges in the pass, the request actions and the worker's schedules, each with a
test that interleaves it. The races that need two writers at once, which SQLite does not allow
(its IMMEDIATE transactions queue), run on PostgreSQL."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import Failure, Schedule

from poolweb.models import Event, PassTaskFlag, Request as RequestRow
from poolweb.services import config as config_services, events, reconciler, requests as services, triggers
from poolweb.services.reconciler import reconcile_pass
from tests.poolweb.conftest import ONE_GPU, client_for, request_row, run_together

pytestmark = pytest.mark.django_db(transaction=True)
postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'",
                                   reason="SQLite has one writer: nothing commits while a pass holds it")



@pytest.fixture
def one_gpu(alice):
    config_services.config_provision_document(document=ONE_GPU, author=alice)


def state_of(row) -> tuple:
    row.refresh_from_db()
    return row.state, row.reason


def in_another_connection(action: Callable[[], object]) -> None:
    """``action`` in a thread of its own, with its own database connection, to its end."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:  # noqa: BLE001 — reported below
            failures.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive() and not failures, failures


def between_plan_and_apply(action: Callable[[], object]):
    """Patch the pass's planner so that ``action`` commits after its first plan and before the apply."""
    real, done = reconciler.plan, []

    def planned(snapshot, terms=None):
        decided = real(snapshot, terms)
        if not done:
            done.append(True)
            in_another_connection(action)
        return decided
    return mock.patch.object(reconciler, "plan", planned)


@pytest.fixture
def passes_by_worker(settings):
    """Changes queue a pass instead of running one: the pass under test is the only one."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


# --- 1 a cancelled preemptor -----------------------------------------------------------------------

@postgres_only
def test_a_preemptor_cancelled_before_the_apply_evicts_nobody(one_gpu, alice, bob, passes_by_worker):
    victim = request_row(bob, "low", "one", 1, state="allocated", pool="p")
    preemptor = request_row(bob, "high", "one", 1)
    with between_plan_and_apply(lambda: services.request_cancel(user=alice, request_id=preemptor.pk)):
        result = reconcile_pass()
    assert [d.request_id for d in result.plan.preemptions] == [victim.pk]  # it was planned
    assert (state_of(victim), state_of(preemptor)[0], result.conflicts) == (
        ("allocated", "Granted"), "cancelled", 2)


# --- 2 a late or repeated release ----------------------------------------------------------------

def test_a_release_after_the_grace_queued_the_request_again_keeps_the_new_attempt(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5, state="preempting", pool="a100")
    RequestRow.objects.filter(pk=row.pk).update(max_retries=1, reason="PreemptedByPriority",
                                                preempted_at=timezone.now())
    api = client_for(bob)
    first = api.post(f"/api/v1/requests/{row.pk}/release").json()
    assert (first["attempt"], first["state"] in ("pending", "allocated")) == (2, True)
    again = api.post(f"/api/v1/requests/{row.pk}/release", {"attempt": 1}, format="json").json()
    assert (again["attempt"], again["state"]) == (2, first["state"])


def test_a_release_of_a_queued_request_changes_nothing(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5)
    released = client_for(bob).post(f"/api/v1/requests/{row.pk}/release").json()
    assert (released["state"], released["reason"], released["finished_at"]) == ("pending", "Submitted", None)


def test_a_heartbeat_for_an_attempt_that_is_over_is_refused(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    RequestRow.objects.filter(pk=row.pk).update(attempt=2)
    api = client_for(bob)
    stale = api.post(f"/api/v1/requests/{row.pk}/heartbeat", {"attempt": 1}, format="json")
    assert (stale.status_code, "attempt 1" in stale.json()["detail"]) == (409, True)
    assert api.post(f"/api/v1/requests/{row.pk}/heartbeat", {"attempt": 2}, format="json").status_code == 200


@pytest.mark.parametrize("body, path", [({"attempt": 0}, "attempt"), ({"attempt": "1"}, "attempt"),
                                        ({"attempts": 1}, "attempts"), ([1], "")])
def test_a_malformed_attempt_is_refused_naming_it(provisioned, bob, body, path):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    response = client_for(bob).post(f"/api/v1/requests/{row.pk}/release", body, format="json")
    assert (response.status_code, response.json()["errors"][0]["path"]) == (400, path)
    assert state_of(row)[0] == "allocated"


def test_a_cancel_with_a_body_is_refused_and_changes_nothing(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    response = client_for(bob).post(f"/api/v1/requests/{row.pk}/cancel", {"attempt": 1}, format="json")
    assert (response.status_code, state_of(row)[0]) == (400, "allocated")


def test_a_cancelled_queued_request_updates_its_pool(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5)
    RequestRow.objects.filter(pk=row.pk).update(queue_pool="a100", position=1)  # as a pass left it
    seq = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    client_for(bob).post(f"/api/v1/requests/{row.pk}/cancel")
    pools = [json.loads(d)["name"] for d in Event.objects.filter(seq__gt=seq, type="pool.updated").values_list("data", flat=True)]
    assert pools == ["a100"]


# --- 3 a heartbeat under an expiry ---------------------------------------------------------------

def holding_a_day_lease_with_ten_minutes_left(owner) -> RequestRow:
    """A request of ``low`` allocated on ``p``: a heartbeat would renew its lease for a day."""
    holder = request_row(owner, "low", "one", 1, state="allocated", pool="p")
    RequestRow.objects.filter(pk=holder.pk).update(lease_seconds=86400,
                                                   lease_expires_at=timezone.now() + timedelta(minutes=10))
    return holder


@postgres_only
def test_a_heartbeat_committed_while_the_pass_plans_saves_the_lease(one_gpu, alice, bob, passes_by_worker):
    holder = holding_a_day_lease_with_ten_minutes_left(bob)
    waiting = request_row(bob, "low", "one", 1)
    later = timezone.now() + timedelta(hours=1)  # the pass's clock: the holder's lease has run out
    with between_plan_and_apply(lambda: services.request_heartbeat(user=bob, request_id=holder.pk)):
        result = reconcile_pass(now=later)
    assert (state_of(holder)[0], state_of(waiting)[0], result.counts["expiries"]) == ("allocated", "pending", 0)


# --- 4 the clock under the lock ------------------------------------------------------------------

def test_a_pass_that_waited_for_the_lock_grants_at_the_time_it_got_it(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5)
    start = timezone.now()
    clock = mock.Mock(return_value=start)
    real_lock = reconciler.site_locked

    def slow_lock():
        clock.return_value = start + timedelta(seconds=11)  # waited behind another pass
        return real_lock()

    with mock.patch("django.utils.timezone.now", clock), mock.patch.object(reconciler, "site_locked", slow_lock):
        reconcile_pass()
    row.refresh_from_db()
    assert (row.state, row.allocated_at, row.lease_expires_at) == (
        "allocated", start + timedelta(seconds=11), start + timedelta(seconds=311))


# --- 5 one schedule per name, pruning after a failed pass -----------------------------------------

@postgres_only
def test_two_workers_arming_the_deadline_at_once_leave_one_schedule(provisioned, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    both_read = threading.Barrier(2, timeout=2)
    real_filter = Schedule.objects.filter

    def filter_then_wait(*args, **kwargs):
        found = real_filter(*args, **kwargs)
        if kwargs.get("name") == triggers.DEADLINE and "repeats" not in kwargs:
            try:
                both_read.wait()  # without the lock, both see no row and both insert one
            except threading.BrokenBarrierError:
                pass  # the other waits for the lock: it reads after this one wrote
        return found

    def arm() -> None:
        triggers._arm_deadline()
        connection.close()

    with mock.patch.object(Schedule.objects, "filter", filter_then_wait):
        run_together(arm, arm)
    assert Schedule.objects.filter(name=triggers.DEADLINE).count() == 1


def test_duplicate_schedules_left_behind_are_merged_into_one(db):
    for _ in range(2):
        Schedule.objects.create(name="reconcile", func="x", schedule_type=Schedule.MINUTES, minutes=5)
    with mock.patch.object(triggers, "reconcile_soon"):
        triggers.start_passes()
    assert list(Schedule.objects.filter(name="reconcile").values_list("func", "minutes")) == [
        (triggers.PERIODIC_TASK, 1)]


def test_the_periodic_pass_forgets_old_events_even_when_the_pass_fails(provisioned, settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker", "EVENTS_KEPT": 100}
    with transaction.atomic():
        for _ in range(150):
            events.publish("management.changed", {"enabled": True})
    Event.objects.update(created_at=timezone.now() - timedelta(hours=2))
    with mock.patch.object(triggers, "reconcile_pass", side_effect=RuntimeError("the pass broke")), \
            pytest.raises(RuntimeError):
        triggers.run_periodic_pass()
    assert Event.objects.count() == 100


# --- 6 a hold that outlived its victims ----------------------------------------------------------

def test_a_hold_whose_victims_left_and_cannot_fit_no_longer_waits_for_preemption(one_gpu, alice, bob):
    running = request_row(bob, "high", "one", 1, state="allocated", pool="p")  # of its own policy: no victim
    preemptor = request_row(bob, "high", "one", 1)
    RequestRow.objects.filter(pk=preemptor.pk).update(held_pool="p")  # its victims have left
    reconcile_pass()
    preemptor.refresh_from_db()
    assert (preemptor.held_pool, preemptor.reason) == (None, "WaitingForCapacity")
    services.request_release(user=bob, request_id=running.pk)
    assert state_of(preemptor)[0] == "allocated"


# --- 8 what was found by reading -------------------------------------------------------------------

def test_an_inline_pass_forgets_what_is_no_longer_kept(provisioned, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "REQUESTS_KEPT_DAYS": 30}
    old = request_row(bob, "dev", "half", 0.5, state="released")
    RequestRow.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=31))
    recent = request_row(bob, "dev", "half", 0.5, state="released")
    RequestRow.objects.filter(pk=recent.pk).update(finished_at=timezone.now() - timedelta(days=29))
    Failure.objects.create(id="f", name="f", func="x", started=timezone.now() - timedelta(days=8),
                           stopped=timezone.now() - timedelta(days=8), success=False)
    triggers.reconcile_soon("test")
    assert list(RequestRow.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not Failure.objects.exists()


def test_reads_during_an_overdue_deadline_write_nothing_once_a_pass_is_wanted(provisioned, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    RequestRow.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    PassTaskFlag.objects.create(pk=1, raised=True)
    with CaptureQueriesContext(connection) as queries:
        client_for(bob).get(f"/api/v1/requests/{row.pk}")
    writes = [q["sql"] for q in queries if q["sql"].split()[0].upper() in ("INSERT", "UPDATE", "DELETE")]
    assert writes == [q for q in writes if "api_token" in q.lower() or "poolweb_apitoken" in q.lower()]


def test_a_heartbeat_announces_the_new_lease(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    seq = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    renewed = client_for(bob).post(f"/api/v1/requests/{row.pk}/heartbeat").json()
    sent = [(t, json.loads(d)) for t, d in Event.objects.filter(seq__gt=seq).values_list("type", "data")]
    assert [(t, d["id"], d["lease_expires_at"]) for t, d in sent] == [
        ("request.updated", row.pk, renewed["lease_expires_at"])]
