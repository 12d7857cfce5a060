"""Applying a plan: the request rows it changes, written in the pass's one transaction with
conditional writes (decision 24). What the pass tells the event stream is
``services.announcement``'s.

Conditional: a request changes only from the state the plan saw. The rows a pass writes are
locked and their state compared first; a request released or cancelled between load and apply is
a conflict, dropped, counted and left for the next pass to re-plan. Dropping such a decision is
safe: releases and cancellations only free capacity, so the rest of the plan still fits. A
preemption and its victims are one unit: when the preemptor's row conflicts (it was cancelled),
its victims' decisions are dropped with it (R-40, R-41). One change is not safe to drop around: a
heartbeat that renewed a lease the plan expires. Grants of the same plan may already use the room
the expiry frees, so the whole plan is void (``PlanVoid``); it is rolled back and made again from
a fresh read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from poolweb import sql
from poolweb.selectors.snapshot import NO_WAIT, WAIT_FIELDS, StoredWait
from poolweb.services.changes import HistoryEntry, decision_columns, history_entry
from reconcile import Plan, Reason, Request, Snapshot, State
from reconcile.eta import NO_ETA, Eta


class PlanVoid(Exception):
    """A lease the plan expires was renewed meanwhile: the plan must be made again."""


@dataclass
class PlannedRows:
    """The rows of requests a plan changes, by request id, and the conflicts found writing them."""

    requests: dict[int, Request]  # every request of the snapshot, as the plan leaves it
    columns: dict[int, dict] = field(default_factory=dict)  # column → value, of each request to write
    expected: dict[int, str] = field(default_factory=dict)  # the state the plan saw, which the row must have
    expiring_leases: dict[int, datetime | None] = field(default_factory=dict)  # as read, of the requests it expires
    victims: dict[int, list[int]] = field(default_factory=dict)  # preemptor → the victims it takes
    history: list[HistoryEntry] = field(default_factory=list)  # of each change of state, in decision order
    dropped: set[int] = field(default_factory=set)  # conflicts: no longer what the snapshot said, not written

    @property
    def conflicts(self) -> int:
        return len(self.dropped)


def planned_rows(snapshot: Snapshot, waits: dict[int, StoredWait], decided: Plan,
                 etas: Mapping[int, Eta] | None = None) -> PlannedRows:
    """What ``decided`` writes: its decisions, and the waits (reason, place, estimated start: R-54)
    that changed."""
    rows = PlannedRows({r.id: r for r in snapshot.requests})
    _decided(rows, decided)
    _waits(rows, waits, decided, etas or {})
    return rows


def _decided(rows: PlannedRows, decided: Plan) -> None:
    requests = rows.requests
    for decision in decided.decisions():
        before = requests[decision.request_id]
        # A request evicted and granted again in one pass has two decisions: the row must be in
        # the first one's state, and they apply in order.
        rows.expected.setdefault(before.id, decision.from_state.value)
        if decision.state is State.EXPIRED and decision.reason is Reason.LEASE_EXPIRED:  # not a run limit
            rows.expiring_leases[before.id] = before.lease_expires_at
        elif decision.state is State.PREEMPTING:
            rows.victims.setdefault(decision.preempted_by, []).append(before.id)
        requests[before.id], columns = decision_columns(before, decision, decided.now)
        rows.columns.setdefault(before.id, {}).update(columns)
        if entry := history_entry(requests[before.id], decision, decided.now):
            rows.history.append(entry)


def _waits(rows: PlannedRows, waits: dict[int, StoredWait], decided: Plan, etas: Mapping[int, Eta]) -> None:
    pending = State.PENDING.value
    for request_id, waiting in decided.waiting.items():
        # A request re-queued by this very pass was stored live: nothing of its wait is.
        eta = etas.get(request_id, NO_ETA)
        after = StoredWait(waiting.reason.value, waiting.message, waiting.position, waiting.pool, eta.at, eta.basis)
        if waits.get(request_id, NO_WAIT) == after:
            continue
        rows.expected.setdefault(request_id, pending)
        rows.columns.setdefault(request_id, {}).update(zip(WAIT_FIELDS, after))


def write_rows(rows: PlannedRows) -> dict[int, datetime | None]:
    """Lock the rows to write, drop those no longer in the state the plan saw (and with a
    preemptor its victims), write the rest and their history; in the caller's transaction.
    ``PlanVoid`` when a lease the plan expires was renewed. Returns each locked row's lease as it
    is now: a heartbeat may have renewed one the pass announces."""
    ids = sorted(rows.columns)
    current = {request_id: (state, sql.stored_time(lease)) for request_id, state, lease in
               sql.select_requests(("id", "state", "lease_expires_at"), "id", ids, lock=True)}
    for request_id in ids:
        state, lease = current.get(request_id, (None, None))
        if state != rows.expected[request_id]:
            _drop(rows, request_id)
        elif request_id in rows.expiring_leases and lease != rows.expiring_leases[request_id]:
            raise PlanVoid(f"the lease of request {request_id} was renewed")
    now = timezone.now()
    for columns in rows.columns.values():
        columns["updated_at"] = now  # a plain UPDATE skips auto_now
    sql.update_requests(rows.columns)
    sql.insert_changes([entry for entry in rows.history if entry.request_id in rows.columns])
    return {request_id: lease for request_id, (_, lease) in current.items()}


def _drop(rows: PlannedRows, request_id: int) -> None:
    if rows.columns.pop(request_id, None) is not None:
        rows.dropped.add(request_id)
    for victim in rows.victims.pop(request_id, ()):  # no preemption for a request that left
        _drop(rows, victim)
