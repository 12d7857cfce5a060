"""The reconciler as processes: the real django-q2 worker grants what the API queues, a pass
killed half-way leaves nothing half-applied, and racing passes never grant one capacity twice."""

from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from poolweb.models import Event, PassRecord, Request as RequestRow
from poolweb.services import config as config_services
from poolweb.services.reconciler import reconcile_pass
from poolweb.selectors.snapshot import load_snapshot
from reconcile.invariants import check_state

from tests.poolweb import processes
from tests.poolweb.conftest import client_for, document, request_row, run_together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live(alice):
    return config_services.config_provision_document(document=document(), author=alice, comment="worker test")


@pytest.fixture
def worker(settings):
    """``manage.py qcluster``, as ``make run`` starts it, on the tests' database."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    process = processes.start("manage.py", "qcluster")
    yield process
    print(processes.stop(process))  # shown when the test fails


def state_of(request_id: int) -> str:
    return RequestRow.objects.values_list("state", flat=True).get(pk=request_id)


def test_the_worker_grants_what_the_api_queued_and_again_after_a_release(live, bob, worker):
    api = client_for(bob)
    first = api.post("/api/v1/requests", {"policy": "dev", "profile": "4xgpu"}, format="json").json()
    assert first["state"] == "pending"  # the API returns before the worker's pass
    processes.wait_until(lambda: state_of(first["id"]) == "allocated", 60, "the worker to grant the first")

    second = api.post("/api/v1/requests", {"policy": "dev", "profile": "4xgpu"}, format="json").json()
    third = api.post("/api/v1/requests", {"policy": "dev", "profile": "4xgpu"}, format="json").json()
    processes.wait_until(lambda: state_of(second["id"]) == "allocated", 30, "the worker to grant the second")
    processes.wait_until(lambda: RequestRow.objects.get(pk=third["id"]).reason == "WaitingForQuota", 30,
                         "the third's reason")  # dev's limit of 8 gpu across all pools

    api.post(f"/api/v1/requests/{first['id']}/release")
    processes.wait_until(lambda: state_of(third["id"]) == "allocated", 30, "the worker to grant the third")
    announced = map(json.loads, Event.objects.filter(type="request.updated").values_list("data", flat=True))
    assert any((data["id"], data["state"]) == (third["id"], "allocated") for data in announced)


KILLED_MID_PASS = textwrap.dedent("""
    import sys, time, django
    django.setup()
    from pathlib import Path
    from poolweb.services import events, reconciler

    def stall(pools, policies):  # the requests' rows are written, the transaction is open
        Path(sys.argv[1]).write_text("writing")
        time.sleep(600)

    events.publish_live = stall
    reconciler.reconcile_pass()
""")


def test_a_pass_killed_half_way_leaves_no_half_applied_decision(live, bob, tmp_path: Path):
    waiting = [request_row(bob, "dev", "half", 0.5) for _ in range(4)]
    signal_file = tmp_path / "in-pass"
    events_before = Event.objects.count()
    connection.close()  # SQLite: no lock of ours in the way of the child's write

    child = processes.start("-c", KILLED_MID_PASS, str(signal_file))
    processes.wait_until(signal_file.exists, 60, "the child to reach the middle of its pass")
    processes.stop(child, signal.SIGKILL)

    assert {state_of(r.pk) for r in waiting} == {"pending"}
    assert Event.objects.count() == events_before and not PassRecord.objects.exists()
    result = reconcile_pass()  # the lock died with the child
    assert result.counts["grants"] == 4 and {state_of(r.pk) for r in waiting} == {"allocated"}


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="SQLite has one writer: passes cannot race")
def test_racing_passes_never_grant_one_capacity_twice(live, alice, bob):
    for _ in range(60):
        request_row(bob, "dev", "half", 0.5)
        request_row(alice, "research", "4xgpu", 4)
    for _ in range(6):
        request_row(alice, "research", "half", 0.5, state="allocated", pool="a100")
    errors: list[BaseException] = []

    def passes() -> None:
        try:
            for _ in range(5):
                reconcile_pass()
        except BaseException as error:  # noqa: BLE001 — reported below
            errors.append(error)
        finally:
            connection.close()  # a thread's own connection: the test database is dropped after

    def releases() -> None:
        try:
            for row in RequestRow.objects.filter(state="allocated").order_by("?")[:20]:
                RequestRow.objects.filter(pk=row.pk, state="allocated").update(
                    state="released", reason="Released", pool=row.pool, finished_at=timezone.now())
        finally:
            connection.close()  # a thread's own connection: the test database is dropped after

    run_together(passes, passes, passes, passes, releases, join_seconds=120)

    assert not errors
    assert PassRecord.objects.filter(grants__gt=0).exists()  # the racers did grant
    assert check_state(load_snapshot(timezone.now())) == []  # I-1…: no capacity granted twice
