"""One reconcile pass: load a snapshot, plan it with the engine, apply the plan in one
transaction with conditional writes (a request changes only from the state the plan saw).

Conflicts — a request released or cancelled between load and apply — are counted and left for
the next pass to re-plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from poolweb.models import Request as RequestRow
from poolweb.services.state import load_snapshot, site_state
from reconcile import Decision, Plan, Snapshot, State, plan

TERMINAL = {State.RELEASED, State.PREEMPTED, State.REJECTED, State.CANCELLED, State.EXPIRED}


@dataclass
class PassResult:
    plan: Plan
    duration_ms: float
    conflicts: int = 0
    counts: dict[str, int] = field(default_factory=dict)


def reconcile_pass(*, now: datetime | None = None, dry_run: bool = False) -> PassResult:
    """Decide and apply one pass. With ``dry_run`` nothing is written."""
    started = time.perf_counter()
    now = now or timezone.now()
    with transaction.atomic():
        # The site row's lock serialises passes with each other and with provisions (R-57 checks
        # live allocations under the same lock), so a pass never decides on a half-changed state.
        site_state(for_update=True)
        snapshot = load_snapshot(now)
        decided = plan(snapshot)
        conflicts = 0 if dry_run else apply_plan(snapshot, decided)
    counts = {name: len(getattr(decided, name))
              for name in ("grants", "preemptions", "expiries", "evictions", "rejections", "cancellations")}
    return PassResult(decided, (time.perf_counter() - started) * 1000, conflicts, counts)


def apply_plan(snapshot: Snapshot, decided: Plan) -> int:
    """Write ``decided``; returns how many decisions found their request changed (conflicts)."""
    lease = {r.id: r.lease_seconds for r in snapshot.requests}
    attempts = {r.id: (r.attempt, r.max_retries) for r in snapshot.requests}
    conflicts = 0
    for decision in decided.decisions():
        fields = _fields(decision, decided.now, lease.get(decision.request_id, 300), attempts.get(decision.request_id))
        changed = RequestRow.objects.filter(pk=decision.request_id, state=decision.from_state.value).update(**fields)
        conflicts += changed == 0
    _write_waiting(decided)
    return conflicts


def _fields(decision: Decision, now: datetime, lease_seconds: int, attempt: tuple[int, int] | None) -> dict:
    fields = {"state": decision.state.value, "reason": decision.reason.value, "message": decision.message}
    if decision.state == State.ALLOCATED:
        fields.update(pool=decision.pool, allocated_at=now, lease_expires_at=now + timedelta(seconds=lease_seconds),
                      held_pool=None, position=None, queue_pool=None)
    elif decision.state == State.PREEMPTING:
        fields.update(preempted_by=decision.preempted_by, preempted_at=now)
    elif decision.state == State.PENDING and decision.from_state == State.PENDING:  # a hold
        fields.update(held_pool=decision.pool)
    elif decision.state == State.PENDING:  # an eviction with retries left
        fields.update(attempt=(attempt[0] if attempt else 1) + 1, pool=None, allocated_at=None,
                      lease_expires_at=None, preempted_at=None, held_pool=None)
    if decision.state in TERMINAL:
        fields.update(finished_at=now, position=None, queue_pool=None, held_pool=None)
    return fields


def _write_waiting(decided: Plan) -> None:
    """Reason, message and position of every pending request, writing only the rows that change."""
    waiting = decided.waiting
    if not waiting:
        return
    rows = RequestRow.objects.filter(state=State.PENDING.value).only(
        "id", "reason", "message", "position", "queue_pool")
    changed = []
    for row in rows.iterator(chunk_size=2000):
        now = waiting.get(row.id)
        if now is None:
            continue
        if (row.reason, row.message, row.position, row.queue_pool) != (now.reason.value, now.message, now.position, now.pool):
            row.reason, row.message, row.position, row.queue_pool = now.reason.value, now.message, now.position, now.pool
            changed.append(row)
    RequestRow.objects.bulk_update(changed, ["reason", "message", "position", "queue_pool"], batch_size=500)
