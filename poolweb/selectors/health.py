"""How the running service is doing, for ``GET /api/v1/health`` and ``manage.py check_state``:
the database, the last pass, the worker's last sign of life, and the invariants of docs/scheduling.md §10 on
the stored state.

The invariants are checked on what is stored, as a pass would read it: I-1…I-4 on the live
allocations (with over-commitment allowed where only allocations older than the live version
hold it: a provision may have shrunk a bound, R-57), I-7 on what the next pass would preempt, and
I-8 (that pass run twice changes nothing the second time). I-5 and I-6 are about caches and
histories the service does not keep; the engine's tests check them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django_q.models import Task

from poolweb.models import PassRecord
from poolweb.selectors.snapshot import load_pass_input
from poolweb.selectors.versions import live_version
from reconcile import Snapshot, State, plan
from reconcile.invariants import Violation, check_idempotent, check_preemptions, check_state

CHECKED = ("I-1", "I-2", "I-3", "I-4", "I-7", "I-8")
PASS_TASKS = ("poolweb.services.triggers.run_wanted_pass", "poolweb.services.triggers.run_periodic_pass")
WORKER_SILENT_AFTER = timedelta(minutes=3)  # the periodic pass runs every minute, give or take 30 s


@dataclass(frozen=True)
class StateCheck:
    violations: list[Violation]
    pending: int
    live: int
    checked: tuple[str, ...] = CHECKED

    @property
    def ok(self) -> bool:
        return not self.violations


@dataclass(frozen=True)
class Health:
    database: bool
    vendor: str  # "sqlite" or "postgresql"
    last_pass: PassRecord | None
    passes: str  # "worker" or "inline" (settings.POOLWEB["PASSES"])
    worker_seen_at: datetime | None  # the worker's last finished pass task
    state: StateCheck | None  # None when the database cannot be read

    def worker_ok(self, now: datetime) -> bool:
        if self.passes == "inline":
            return True
        return self.worker_seen_at is not None and now - self.worker_seen_at <= WORKER_SILENT_AFTER

    def ok(self, now: datetime) -> bool:
        return self.database and self.worker_ok(now) and self.state is not None and self.state.ok


def check_stored_state(now: datetime) -> StateCheck:
    read = load_pass_input(now)
    snapshot, version = read.snapshot, read.version
    provisioned = live_version()
    baseline = _before(snapshot, provisioned.created_at) if provisioned is not None else None
    first = plan(snapshot, version.terms)
    violations = check_state(snapshot, baseline) + check_preemptions(snapshot, first) + \
        check_idempotent(snapshot, first)
    pending = sum(r.state is State.PENDING for r in snapshot.requests)
    return StateCheck(violations, pending, len(snapshot.requests) - pending)


def _before(snapshot: Snapshot, provisioned_at: datetime) -> Snapshot:
    """The state as it was when the live version was provisioned: without later allocations."""
    return replace(snapshot, requests=tuple(
        r for r in snapshot.requests
        if not (r.state.live and r.allocated_at is not None and r.allocated_at >= provisioned_at)))


def worker_seen_at() -> datetime | None:
    """When the worker last finished a pass task (the periodic one runs every minute)."""
    return Task.objects.filter(func__in=PASS_TASKS).order_by("-stopped").values_list("stopped", flat=True).first()


def health(now: datetime) -> Health:
    passes = settings.POOLWEB["PASSES"]
    try:
        connection.ensure_connection()
        last_pass = PassRecord.objects.order_by("-started_at").first()
        seen = worker_seen_at()
        state = check_stored_state(now)
    except DatabaseError:
        return Health(False, connection.vendor, None, passes, None, None)
    return Health(True, connection.vendor, last_pass, passes, seen, state)
