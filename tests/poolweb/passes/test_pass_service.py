"""The reconcile pass as a service: one transaction per pass, conditional writes, events in the
outbox only for what committed, pass records, coalesced triggers, the periodic pass and
``manage.py reconcile``."""

from __future__ import annotations

import json
import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from poolweb.models import Event, PassRecord, PassTaskFlag, Request as RequestRow
from poolweb.services import config as config_services, events, reconciler, requests as request_services, triggers
from poolweb.services.reconciler import reconcile_pass
from poolweb.selectors.snapshot import load_snapshot
from reconcile import Vector
from reconcile.invariants import check_state

from tests.poolweb.conftest import ONE_GPU, client_for, request_row

pytestmark = pytest.mark.django_db


def types_of(new_events) -> list[tuple[str, str | int | None]]:
    decoded = [(e.type, json.loads(e.data)) for e in new_events]
    return [(type, data.get("id", data.get("name"))) for type, data in decoded]


def events_after(seq: int) -> list[Event]:
    return list(Event.objects.filter(seq__gt=seq))


def last_seq() -> int:
    return Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0


# --- one pass ----------------------------------------------------------------------------------

def test_a_pass_grants_and_records_itself_and_its_events(provisioned, bob):
    waiting = request_row(bob, "dev", "4xgpu", 4)
    before = last_seq()

    result = reconcile_pass(trigger="test")

    waiting.refresh_from_db()
    assert (waiting.state, waiting.pool, waiting.reason) == ("allocated", "h100", "Granted")
    assert waiting.lease_expires_at == waiting.allocated_at + dt.timedelta(seconds=300)
    record = PassRecord.objects.get()
    assert (record.trigger, record.grants, record.pending, record.live, record.conflicts) == ("test", 1, 1, 0, 0)
    assert record.duration_ms == pytest.approx(result.duration_ms, abs=0.01)
    assert types_of(events_after(before)) == [  # a100 too: it counted the request as pending (decision 119)
        ("request.updated", waiting.pk), ("pool.updated", "h100"), ("pool.updated", "a100"), ("policy.updated", "dev")]
    granted = events_after(before)[0]
    data = json.loads(granted.data)
    assert granted.owner_id == bob.pk and data["state"] == "allocated" and data["owner"] == "bob"
    assert data["resources"] == {"gpu": 4, "step_run": 1}


def test_a_pass_that_decides_nothing_writes_nothing(provisioned, bob):
    request_row(bob, "dev", "4xgpu", 4)
    reconcile_pass()
    before, records = last_seq(), PassRecord.objects.count()

    result = reconcile_pass()

    assert result.plan.empty and last_seq() == before and PassRecord.objects.count() == records


def test_a_waiting_reason_is_written_and_announced_once(provisioned, bob):
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="a100")
    waiting = request_row(bob, "dev", "4xgpu", 4)
    before = last_seq()

    reconcile_pass()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.reason, waiting.position, waiting.queue_pool) == (
        "pending", "WaitingForQuota", 1, "h100")
    assert ("request.updated", waiting.pk) in types_of(events_after(before))

    before = last_seq()
    reconcile_pass()
    assert events_after(before) == []


def test_a_request_cancelled_between_plan_and_apply_is_a_conflict_not_a_grant(provisioned, bob, monkeypatch):
    waiting = request_row(bob, "dev", "4xgpu", 4)
    real_plan = reconciler.plan

    def plan_then_cancel(snapshot, terms=None):
        decided = real_plan(snapshot, terms)
        RequestRow.objects.filter(pk=waiting.pk).update(state="cancelled", reason="Cancelled")  # meanwhile
        return decided

    monkeypatch.setattr(reconciler, "plan", plan_then_cancel)
    before = last_seq()

    result = reconcile_pass()

    waiting.refresh_from_db()
    assert (waiting.state, waiting.pool, result.conflicts) == ("cancelled", None, 1)
    assert PassRecord.objects.get().conflicts == 1
    assert not [e for e in events_after(before) if e.type == "request.updated"]


def test_a_pass_that_fails_while_applying_leaves_no_decision_and_no_event(provisioned, bob, monkeypatch):
    waiting = request_row(bob, "dev", "4xgpu", 4)
    before = last_seq()

    def broken(pools, policies):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(events, "publish_live", broken)
    with pytest.raises(RuntimeError):
        reconcile_pass()

    waiting.refresh_from_db()
    assert (waiting.state, waiting.reason) == ("pending", "Submitted")
    assert last_seq() == before and not PassRecord.objects.exists()


def test_a_dry_run_writes_nothing(provisioned, bob):
    waiting = request_row(bob, "dev", "4xgpu", 4)
    before = last_seq()
    result = reconcile_pass(dry_run=True)
    waiting.refresh_from_db()
    assert len(result.plan.grants) == 1 and waiting.state == "pending"
    assert last_seq() == before and not PassRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_events_are_refused_outside_a_transaction():
    with pytest.raises(RuntimeError, match="transaction"):
        events.publish("management.changed", {"enabled": True})


def test_the_snapshot_lists_requests_in_id_order_whatever_their_state(provisioned, bob):
    """Snapshot's contract (reconcile/model.py): by id, as the loader's ORDER BY reads them; a read
    by state alone could follow the state index (allocated, then pending)."""
    rows = [request_row(bob, "dev", "4xgpu", 1), request_row(bob, "dev", "4xgpu", 1, state="allocated", pool="h100"),
            request_row(bob, "dev", "4xgpu", 1), request_row(bob, "dev", "4xgpu", 1, state="allocated", pool="a100")]

    assert [r.id for r in load_snapshot(timezone.now()).requests] == [row.pk for row in rows]


# --- triggers ------------------------------------------------------------------------------------

@pytest.fixture
def passes_by_worker(settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


HALF = request_services.Submission("dev", "half", Vector.of(gpu=0.5, step_run=1))


def test_a_burst_of_submissions_queues_one_pass(provisioned, bob, passes_by_worker):
    for _ in range(200):
        request_services.request_submit(user=bob, submission=HALF)

    assert OrmQ.objects.count() == 1
    assert PassTaskFlag.objects.get().raised

    triggers.run_wanted_pass()  # what the worker runs for the queued task
    assert not PassTaskFlag.objects.get().raised
    assert RequestRow.objects.filter(state="allocated").count() == 8  # a100's 4 gpu in halves
    request_services.request_submit(user=bob, submission=HALF)
    assert OrmQ.objects.count() == 2  # a change after the pass took its snapshot queues one more


def test_the_periodic_pass_lowers_a_lost_tasks_flag_and_expires_leases(provisioned, bob, passes_by_worker):
    PassTaskFlag.objects.create(pk=1, raised=True)  # left up by a worker killed before its task ran
    holder = request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    RequestRow.objects.filter(pk=holder.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))

    triggers.run_periodic_pass()

    holder.refresh_from_db()
    assert (holder.state, holder.reason) == ("expired", "LeaseExpired")
    assert not PassTaskFlag.objects.get().raised
    assert PassRecord.objects.get().trigger == "periodic"


def test_the_periodic_pass_forgets_old_events_beyond_those_kept(db, settings):
    settings.POOLWEB = {**settings.POOLWEB, "EVENTS_KEPT": 100}
    old = timezone.now() - dt.timedelta(hours=2)
    Event.objects.bulk_create([Event(type="pool.updated", data="{}", created_at=old) for _ in range(250)])
    newest = last_seq()

    triggers.run_periodic_pass()

    assert Event.objects.count() == 100
    assert Event.objects.order_by("seq").first().seq == newest - 99


def test_starting_the_service_schedules_the_periodic_pass_and_queues_one(db, passes_by_worker):
    PassTaskFlag.objects.create(pk=1, raised=True)  # left up by a worker killed before its task ran
    triggers.start_passes()
    assert OrmQ.objects.count() == 1
    triggers.start_passes()

    schedule = Schedule.objects.get(name="reconcile")
    assert (schedule.func, schedule.schedule_type, schedule.minutes) == (triggers.PERIODIC_TASK, Schedule.MINUTES, 1)


# --- manage.py reconcile ---------------------------------------------------------------------------

def reconcile_command(*args: str) -> str:
    out = StringIO()
    call_command("reconcile", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_a_dry_run_and_changes_nothing(provisioned, bob):
    request_row(bob, "research", "4xgpu", 4, state="allocated", pool="h100")
    request_row(bob, "research", "4xgpu", 4, state="allocated", pool="h100")
    waiting = request_row(bob, "dev", "half", 0.5)
    granted = request_row(bob, "dev", "4xgpu", 4)  # a100 serves 4xgpu before half: name order

    printed = reconcile_command("--once", "--dry-run")

    assert "would decide 1 grants" in printed
    assert f"request {granted.pk}: pending → allocated on a100 [Granted]" in printed
    assert f"request {waiting.pk}: #1 on a100 [WaitingForCapacity] pool a100 is short of 0.5 gpu" in printed
    granted.refresh_from_db()
    assert granted.state == "pending"


def test_the_command_applies_one_pass(provisioned, bob):
    granted = request_row(bob, "dev", "half", 0.5)
    assert "decided 1 grants" in reconcile_command("--once")
    granted.refresh_from_db()
    assert granted.state == "allocated"


@pytest.mark.parametrize("args", [[], ["--once", "--waiting", "-1"]])
def test_the_command_refuses_what_it_does_not_do(db, args):
    with pytest.raises(CommandError):
        reconcile_command(*args)


# --- deadlines -------------------------------------------------------------------------------------

def test_a_read_that_finds_a_lease_run_out_sees_it_expired(provisioned, bob):
    holder = request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    RequestRow.objects.filter(pk=holder.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))

    shown = client_for(bob).get(f"/api/v1/requests/{holder.pk}").json()

    assert (shown["state"], shown["reason"]) == ("expired", "LeaseExpired")


@pytest.mark.parametrize("overdue", [False, True])
def test_a_read_asks_for_a_pass_only_when_a_deadline_passed(provisioned, bob, passes_by_worker, overdue):
    holder = request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    if overdue:
        RequestRow.objects.filter(pk=holder.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    queued = OrmQ.objects.count()
    client_for(bob).get("/api/v1/pools")
    assert OrmQ.objects.count() - queued == overdue


def test_after_a_pass_the_worker_is_due_back_at_the_next_deadline(provisioned, bob, settings, passes_by_worker):
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 30}
    now = timezone.now()
    soon, later = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100"), request_row(
        bob, "dev", "half", 0.5, state="preempting", pool="a100")
    RequestRow.objects.filter(pk=soon.pk).update(lease_expires_at=now + dt.timedelta(seconds=50))
    RequestRow.objects.filter(pk=later.pk).update(preempted_at=now, lease_expires_at=now + dt.timedelta(hours=1))

    triggers.run_wanted_pass()

    armed = Schedule.objects.get(name=triggers.DEADLINE)
    assert (armed.func, armed.schedule_type, armed.repeats) == (triggers.TASK, Schedule.ONCE, 1)
    assert armed.next_run == now + dt.timedelta(seconds=30)  # the grace ends before the lease


def test_a_victim_evicted_and_granted_elsewhere_in_one_pass_moves_once(provisioned, alice, bob):
    """Found running the service: the eviction (preempting → pending) and the new grant
    (pending → allocated) of one request in one pass were checked against the second decision's
    state, so both were dropped as conflicts while the preemptor took the victim's room: 12 gpu
    on a pool of 8."""
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    victim = request_row(bob, "dev", "4xgpu", 4, state="preempting", pool="h100")
    preemptor = request_row(alice, "research", "4xgpu", 4)
    RequestRow.objects.filter(pk=victim.pk).update(
        max_retries=1, preempted_by=preemptor.pk, preempted_at=timezone.now() - dt.timedelta(hours=1))
    RequestRow.objects.filter(pk=preemptor.pk).update(held_pool="h100", reason="WaitingForPreemption")

    result = reconcile_pass()

    victim.refresh_from_db()
    preemptor.refresh_from_db()
    assert result.conflicts == 0
    assert (preemptor.state, preemptor.pool) == ("allocated", "h100")
    assert (victim.state, victim.pool, victim.attempt, victim.preempted_at) == ("allocated", "a100", 2, None)
    assert check_state(load_snapshot(timezone.now())) == []


def test_admins_read_the_record_of_passes(provisioned, bob, alice, client):
    request_row(bob, "dev", "half", 0.5)
    reconcile_pass(trigger="test")
    client.force_login(alice)
    page = client.get("/admin/poolweb/passrecord/")
    assert page.status_code == 200 and b"test" in page.content
    assert client.get("/admin/poolweb/passrecord/add/").status_code == 403


def test_a_pass_stores_the_order_of_its_grants_which_the_next_pass_reads(provisioned, bob):
    # Two grants of one pass share allocated_at; each row keeps its place among them.
    rows = [request_row(bob, "dev", "job", 2), request_row(bob, "dev", "half", 0.5)]
    result = reconcile_pass(trigger="test")
    order = [grant.request_id for grant in result.plan.grants]
    assert sorted(order) == sorted(row.pk for row in rows)
    stored = dict(RequestRow.objects.filter(pk__in=order).values_list("pk", "grant_order"))
    assert [stored[pk] for pk in order] == [0, 1]
    assert {r.id: r.grant_order for r in load_snapshot(timezone.now()).requests} == stored


def test_r49_an_overdue_request_reserves_what_frees_and_a_run_ending_before_it_starts_backfills(
        db, alice, bob, passes_by_worker):
    starving = {"pools": [{"name": "p", "capacity": {"gpu": 2}}],
                "profiles": [{"name": "one", "resources": {"gpu": 1}, "dynamic": True, "connections": [{"pool": "p"}],
                              "policies": ["big", "small"]}],
                "policies": [{"name": "big", "group": "dev", "max_wait_seconds": 60}, {"name": "small", "group": "dev"}]}
    config_services.config_provision_document(document=starving, author=alice, comment="R-49")
    now = timezone.now()
    running = RequestRow.objects.create(policy="small", profile="one", owner=bob, resources={"gpu": 1000, "step_run": 1000},
                                        state="allocated", pool="p", reason="Granted")
    RequestRow.objects.filter(pk=running.pk).update(allocated_at=now, lease_expires_at=now + dt.timedelta(hours=1),
                                                    time_limit_at=now + dt.timedelta(seconds=900))
    big = RequestRow.objects.create(policy="big", profile="one", owner=bob, resources={"gpu": 2000, "step_run": 1000})
    RequestRow.objects.filter(pk=big.pk).update(submitted_at=now - dt.timedelta(seconds=120))
    long_run, short_run = (RequestRow.objects.create(policy="small", profile="one", owner=bob, max_runtime_seconds=limit,
                                                     resources={"gpu": 1000, "step_run": 1000}) for limit in (3600, 600))

    triggers.run_wanted_pass()

    states = {row.pk: (row.state, row.reason) for row in RequestRow.objects.all()}
    assert states[big.pk] == ("pending", "ReservingCapacity")
    assert states[long_run.pk] == ("pending", "WaitingForCapacity")  # it would end after big can start
    assert states[short_run.pk] == ("allocated", "Granted")  # it ends before: backfill
    big.refresh_from_db()
    assert "it still needs 2 gpu; the run limits there free it by" in big.message
    assert check_state(load_snapshot(timezone.now())) == []


def test_a_request_waiting_for_protected_victims_says_until_when_and_the_worker_is_due_back_then(
        db, alice, bob, settings, passes_by_worker):
    protected = {**ONE_GPU, "policies": [{**ONE_GPU["policies"][0], "min_runtime_seconds": 600},
                                          ONE_GPU["policies"][1]]}
    config_services.config_provision_document(document=protected, author=alice, comment="R-48")
    running = RequestRow.objects.create(policy="low", profile="one", owner=bob, resources={"gpu": 1000, "step_run": 1000},
                                        state="allocated", pool="p", reason="Granted")
    started = timezone.now() - dt.timedelta(seconds=100)
    RequestRow.objects.filter(pk=running.pk).update(allocated_at=started, lease_expires_at=started + dt.timedelta(hours=1))
    waiting = RequestRow.objects.create(policy="high", profile="one", owner=bob, resources={"gpu": 1000, "step_run": 1000})

    result = triggers.run_wanted_pass()

    waiting.refresh_from_db()
    assert (waiting.state, waiting.reason) == ("pending", "WaitingForProtectedVictims")
    until = started + dt.timedelta(seconds=600)
    assert result.plan.wake_at == until and f"until {until:%Y-%m-%d %H:%M:%S} UTC" in waiting.message
    assert Schedule.objects.get(name=triggers.DEADLINE).next_run == until  # before the lease's end
    assert triggers.next_deadline(until) == until and triggers.next_deadline() == started + dt.timedelta(hours=1)
