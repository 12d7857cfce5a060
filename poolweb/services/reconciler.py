"""One reconcile pass: load a snapshot in bulk, plan it with the engine, apply the plan in one
transaction with conditional writes, publish its events and record it.

Conditional: a request changes only from the state the plan saw. The rows a pass writes are
locked and their state compared first; a request released or cancelled between load and apply is
a conflict, counted and left for the next pass to re-plan. Dropping such a decision is safe:
releases and cancellations only free capacity, so the rest of the plan still fits.

One pass at a time: the site row is locked (``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the
IMMEDIATE transaction holds the database's one write lock from its start), which also keeps
provisions (R-57) from changing the configuration under a pass.
"""

from __future__ import annotations

import gc
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from poolweb.models import PassRecord, Request as RequestRow
from poolweb.services import events
from poolweb.services.state import CHUNK, WAITING_FIELDS, load_pass_input, site_state
from reconcile import Decision, Plan, Request, Snapshot, State, plan

COUNTED = ("grants", "preemptions", "evictions", "expiries", "rejections", "cancellations")
NOTHING_STORED = (None,) * len(WAITING_FIELDS)  # the wait of a request that was live at the load


@dataclass
class PassResult:
    plan: Plan
    duration_ms: float
    conflicts: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    live: int = 0


@dataclass
class Writes:
    """What a pass writes: changed requests' fields by id, and what to tell the event stream."""

    fields: dict[int, dict] = field(default_factory=dict)
    expected: dict[int, str] = field(default_factory=dict)  # the state the plan saw
    announced: set[int] = field(default_factory=set)  # request.updated for these
    pools: set[str] = field(default_factory=set)
    policies: set[str] = field(default_factory=set)
    conflicts: int = 0


def reconcile_pass(*, now: datetime | None = None, dry_run: bool = False, trigger: str = "") -> PassResult:
    """Decide and apply one pass. With ``dry_run`` nothing is written."""
    started = time.perf_counter()
    now = now or timezone.now()
    with transaction.atomic(), _collector_paused():
        site_state(for_update=True)
        snapshot, stored = load_pass_input(now)
        decided = plan(snapshot)
        writes = Writes() if dry_run else apply_plan(snapshot, stored, decided)
        result = _result(snapshot, decided, writes, started)
        if writes.fields or writes.conflicts:
            _record(result, now, trigger)
    return result


@contextmanager
def _collector_paused():
    """A pass makes 10^5 small objects that all live until it ends: the cyclic collector would
    walk them again and again (a third of the snapshot's load time) and find nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def apply_plan(snapshot: Snapshot, stored: dict[int, tuple], decided: Plan) -> Writes:
    """Write ``decided`` and its events; what was written comes back."""
    writes = planned_writes(snapshot, stored, decided)
    _drop_conflicts(writes)
    _update_rows(writes.fields)
    events.publish_requests(writes.announced & writes.fields.keys())
    events.publish_live(writes.pools, writes.policies)
    return writes


def _update_rows(fields_by_id: dict[int, dict]) -> None:
    """One UPDATE statement per set of changed columns, run for all its rows (``executemany``).
    Django's ``bulk_update`` builds a CASE per column per row: about 1.5 ms a row, and a pass
    over fresh submissions writes ten thousand."""
    by_names: dict[tuple[str, ...], list[tuple[int, dict]]] = defaultdict(list)
    for request_id, fields in fields_by_id.items():
        by_names[tuple(sorted(fields))].append((request_id, fields))
    quote = connection.ops.quote_name
    meta = RequestRow._meta
    prepared: dict[tuple[str, object], object] = {}  # a pass writes one `now` to thousands of rows

    def prepare(column, value):
        # Text, numbers and NULL go to every driver as they are; datetimes need the backend's form.
        if value is None or isinstance(value, (str, int)):
            return value
        if (column.name, value) not in prepared:
            prepared[(column.name, value)] = column.get_db_prep_save(value, connection)
        return prepared[(column.name, value)]

    with connection.cursor() as cursor:
        for names, rows in by_names.items():
            columns = [meta.get_field(name) for name in names]
            values = [[prepare(column, fields[column.name]) for column in columns] + [request_id]
                      for request_id, fields in rows]
            if connection.vendor == "postgresql":
                _update_from_values(cursor, columns, values)
            else:
                assignments = ", ".join(f"{quote(column.column)} = %s" for column in columns)
                cursor.executemany(
                    f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s", values)


def _update_from_values(cursor, columns: list, values: list[list]) -> None:
    """PostgreSQL: ``UPDATE … FROM (VALUES …)``, a thousand rows a statement. Its ``executemany``
    still pays a round of parse, bind and execute per row, which SQLite (in process) does not."""
    meta, quote = RequestRow._meta, connection.ops.quote_name
    names = [quote(column.column) for column in columns] + [quote(meta.pk.column)]
    row = "(" + ", ".join(f"%s::{column.db_type(connection)}" for column in [*columns, meta.pk]) + ")"
    assignments = ", ".join(f"{name} = v.{name}" for name in names[:-1])
    for start in range(0, len(values), 1000):
        part = values[start:start + 1000]
        cursor.execute(f"UPDATE {quote(meta.db_table)} AS t SET {assignments} "
                       f"FROM (VALUES {', '.join([row] * len(part))}) AS v({', '.join(names)}) "
                       f"WHERE t.{names[-1]} = v.{names[-1]}", [value for one in part for value in one])


def planned_writes(snapshot: Snapshot, stored: dict[int, tuple], decided: Plan) -> Writes:
    requests = {r.id: r for r in snapshot.requests}
    writes = Writes()
    for decision in decided.decisions():
        request = requests[decision.request_id]
        # A request evicted and granted again in one pass has two decisions: the row must be in
        # the first one's state, and their fields apply in order.
        writes.expected.setdefault(decision.request_id, decision.from_state.value)
        fields = writes.fields.setdefault(decision.request_id, {})
        fields.update(_decision_fields(decision, decided.now, request))
        writes.announced.add(decision.request_id)
        writes.pools.update(p for p in (decision.pool, request.pool, stored.get(request.id, NOTHING_STORED)[3]) if p)
        writes.policies.add(request.policy)
    for request_id, waiting in decided.waiting.items():
        # A request re-queued by this very pass was stored live: nothing of its wait is.
        before = stored.get(request_id, NOTHING_STORED)
        after = (waiting.reason.value, waiting.message, waiting.position, waiting.pool)
        if before == after:
            continue
        writes.expected.setdefault(request_id, State.PENDING.value)
        writes.fields.setdefault(request_id, {}).update(zip(WAITING_FIELDS, after))
        if before[:2] != after[:2]:  # a new position alone is not news: every grant shifts thousands
            writes.announced.add(request_id)
        if before[3] != after[3]:
            writes.pools.update(p for p in (before[3], after[3]) if p)
            writes.policies.add(requests[request_id].policy)
    return writes


def _drop_conflicts(writes: Writes) -> None:
    """Lock the rows to write; drop those no longer in the state the plan saw."""
    ids = list(writes.fields)
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        current = dict(RequestRow.objects.select_for_update().filter(pk__in=chunk).values_list("id", "state"))
        for request_id in chunk:
            if current.get(request_id) != writes.expected[request_id]:
                del writes.fields[request_id]
                writes.conflicts += 1
    now = timezone.now()
    for fields in writes.fields.values():
        fields["updated_at"] = now  # a plain UPDATE skips auto_now


def _decision_fields(decision: Decision, now: datetime, request: Request) -> dict:
    fields = {"state": decision.state.value, "reason": decision.reason.value, "message": decision.message}
    if decision.state == State.ALLOCATED:
        fields.update(pool=decision.pool, allocated_at=now,
                      lease_expires_at=now + timedelta(seconds=request.lease_seconds),
                      held_pool=None, position=None, queue_pool=None)
    elif decision.state == State.PREEMPTING:
        fields.update(preempted_by=decision.preempted_by, preempted_at=now)
    elif decision.state == State.PENDING and decision.from_state == State.PENDING:  # a hold
        fields.update(held_pool=decision.pool)
    elif decision.state == State.PENDING:  # an eviction with retries left
        fields.update(attempt=request.attempt + 1, pool=None, allocated_at=None, lease_expires_at=None,
                      preempted_at=None, preempted_by=None, held_pool=None)
    if decision.state.terminal:
        fields.update(finished_at=now, position=None, queue_pool=None, held_pool=None)
    return fields


def _result(snapshot: Snapshot, decided: Plan, writes: Writes, started: float) -> PassResult:
    pending = sum(r.state == State.PENDING for r in snapshot.requests)
    return PassResult(decided, (time.perf_counter() - started) * 1000, writes.conflicts,
                      {name: len(getattr(decided, name)) for name in COUNTED},
                      pending=pending, live=len(snapshot.requests) - pending)


def _record(result: PassResult, now: datetime, trigger: str) -> None:
    PassRecord.objects.create(started_at=now, duration_ms=round(result.duration_ms, 3), trigger=trigger[:32],
                              pending=result.pending, live=result.live, conflicts=result.conflicts,
                              **result.counts)

