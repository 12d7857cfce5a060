"""One reconcile pass: load a snapshot in bulk, plan it with the engine, apply the plan in one
transaction with conditional writes, publish its events and record it.

Conditional: a request changes only from the state the plan saw. The rows a pass writes are
locked and their state compared first; a request released or cancelled between load and apply is
a conflict, counted and left for the next pass to re-plan. Dropping such a decision is safe:
releases and cancellations only free capacity, so the rest of the plan still fits. A preemption
and its victims are one unit: when the preemptor's row conflicts (it was cancelled), its victims'
decisions are dropped with it (R-40, R-41). One change is not safe to drop around: a heartbeat
that renewed a lease the plan expires. Grants of the same plan may already use the room the
expiry frees, so the whole plan is void; it is rolled back and made again from a fresh read.

One pass at a time, and no provision (R-57) under a pass: the pass holds the pass lock
(``site_locked``) from its clock to its commit. That lock is not the database's write lock: the
snapshot is read and planned outside any write transaction (SQLite's WAL lets writers commit
meanwhile), and only the writes take it, in one short transaction. So a submission, release,
cancel or heartbeat can commit between the read and the write on both databases, and the conflict
rules above are what keep the plan honest.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from poolweb import sql
from poolweb.collector import collector_paused
from poolweb.models import LiveChange, PassRecord, SiteState
from poolweb.selectors.live import PolicyState, PoolState, policy_states_of, pool_states_of
from poolweb.selectors.snapshot import NO_WAIT, WAIT_FIELDS, PassInput, StoredWait, load_pass_input
from poolweb.selectors.versions import Prepared
from poolweb.services import events
from poolweb.services.changes import decision_columns, history_entry
from poolweb.services.payloads import REQUEST_COLUMNS
from poolweb.services.site import site_locked
from reconcile import ALL_POOLS, Plan, Request, Snapshot, State, plan

log = logging.getLogger(__name__)

COUNTED = ("grants", "preemptions", "evictions", "expiries", "rejections", "cancellations")


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
    leases: dict[int, datetime | None] = field(default_factory=dict)  # of the requests it expires, as seen
    victims: dict[int, list[int]] = field(default_factory=dict)  # preemptor → the victims it takes
    history: list[tuple] = field(default_factory=list)  # services.changes.history_entry of each decision
    announced: set[int] = field(default_factory=set)  # request.updated for these
    pools: set[str] = field(default_factory=set)
    policies: set[str] = field(default_factory=set)
    conflicts: int = 0
    after: dict[int, Request] = field(default_factory=dict)  # every request of the snapshot, as the plan leaves it
    dropped: set[int] = field(default_factory=set)  # conflicts: no longer what the snapshot said
    payloads: dict[int, dict] = field(default_factory=dict)  # the announced, read before the write
    encoded: dict[int, events.Encoded] = field(default_factory=dict)  # their events, encoded before it
    live_states: tuple[list[PoolState], list[PolicyState]] = ([], [])  # as planned, made before it
    live_changes: list[int] = field(default_factory=list)  # LiveChange rows this pass announces


class PlanVoid(Exception):
    """A lease the plan expires was renewed meanwhile: the plan must be made again."""


ATTEMPTS = 3  # a plan is void only when a heartbeat lands at its lease's very end


def reconcile_pass(*, now: datetime | None = None, dry_run: bool = False, trigger: str = "") -> PassResult:
    """Decide and apply one pass at ``now`` (default: the time once the pass lock is held). With
    ``dry_run`` nothing is written."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _pass(now, dry_run, trigger)
        except PlanVoid:
            if attempt == ATTEMPTS:
                raise
            log.info("a lease was renewed while pass %s/%s planned its expiry: planning again", attempt, ATTEMPTS)
    raise AssertionError("unreachable")


def _pass(now: datetime | None, dry_run: bool, trigger: str) -> PassResult:
    started = time.perf_counter()
    with site_locked() as state, collector_paused():
        # The pass's values (snapshot, rows, payloads: ~10^6 objects after a burst) die as
        # _decide_and_write returns, with the collector still paused; alive at its end, the
        # collection owed for the pass traversed them all, 5 % of a cold pass (decision 62).
        return _decide_and_write(state, now or timezone.now(), dry_run, trigger, started)


def _decide_and_write(state: SiteState, now: datetime, dry_run: bool, trigger: str, started: float) -> PassResult:
    """One pass at ``now`` (read under the pass lock: a pass that waited behind another is not in
    the past)."""
    # Read before the snapshot: a change committed after this read leaves its row to the next pass.
    live_changes = [] if dry_run else list(LiveChange.objects.values_list("id", "pool", "policy"))
    read = load_pass_input(now, state, also=REQUEST_COLUMNS)  # what it announces too
    snapshot, version, waits = read[:3]
    decided = plan(snapshot, version.terms)
    writes = Writes() if dry_run else planned_writes(snapshot, waits, decided)
    for change_id, pool, policy in live_changes:
        writes.live_changes.append(change_id)
        writes.pools.update([pool] if pool else [])
        writes.policies.add(policy)
    if writes.fields or writes.pools or writes.policies:
        _prepare_events(read, decided, writes)  # outside the write lock
        with transaction.atomic():  # on SQLite the write lock, from here to the commit only
            apply_plan(version, decided, writes)
            result = _result(snapshot, decided, writes, started)
            if writes.fields or writes.conflicts:
                _record(result, now, trigger)
        return result
    return _result(snapshot, decided, writes, started)


def apply_plan(version: Prepared, decided: Plan, writes: Writes) -> None:
    """Write the planned rows still as the plan saw them, and the events of what was written;
    in the caller's transaction."""
    renewed = _drop_conflicts(writes)
    sql.update_requests(writes.fields)
    sql.insert_changes([entry for entry in writes.history if entry[0] in writes.fields])
    writes.encoded.update(events.encoded_requests(writes.payloads[request_id] for request_id in renewed))
    events.publish_encoded(writes.encoded[request_id] for request_id in sorted(writes.encoded.keys() & writes.fields))
    # Made again only when rows changed under the pass (rare): a walk over every request.
    events.publish_live(*(_live_states(version, decided, writes) if writes.dropped else writes.live_states))
    LiveChange.objects.filter(pk__in=writes.live_changes).delete()


def _prepare_events(read: PassInput, decided: Plan, writes: Writes) -> None:
    """The announced request objects, as the snapshot's query read them and overlaid with what the
    pass will write, their events encoded, and the announced pools' and policies' states: ten
    thousand requests after a burst, none of it under the write lock (on PostgreSQL, under the
    outbox lock). A row changed since the read is a conflict (dropped) or a renewed lease (made
    again) at the write."""
    version = read.prepared
    writes.payloads = events.request_dicts(writes.announced, (read.columns, read.rows))
    for request_id, row in writes.payloads.items():
        row.update(writes.fields[request_id])
    writes.encoded = events.encoded_requests(writes.payloads.values())
    writes.live_states = _live_states(version, decided, writes)


def _live_states(version: Prepared, decided: Plan, writes: Writes) -> tuple[list[PoolState], list[PolicyState]]:
    """The announced pools and policies as this pass leaves them, from its own values (no query):
    the snapshot with the plan applied, less the requests that changed under it (they left a
    ``LiveChange``, so the next pass announces them again)."""
    live, holders = [], []
    pending: Counter = Counter()
    for request in writes.after.values():
        if request.id in writes.dropped:
            continue
        if request.state.live:
            live.append(request)
        elif request.state is State.PENDING:
            if request.held_pool:
                holders.append((request.id, request.held_pool, request.resources))
            waiting = decided.waiting.get(request.id)
            if waiting is not None and waiting.pool:
                pending.update([waiting.pool, (request.policy, waiting.pool), (request.policy, ALL_POOLS)])
            else:
                pending[(request.policy, ALL_POOLS)] += 1
    pools = pool_states_of(version.config, ((r.pool, r.resources, r.preempted_by) for r in live if r.pool in writes.pools),
                           holders, pending, writes.pools) if writes.pools else []
    policies = policy_states_of(version, [r for r in live if r.policy in writes.policies], pending,
                                writes.policies) if writes.policies else []
    return pools, policies


def planned_writes(snapshot: Snapshot, waits: dict[int, StoredWait], decided: Plan) -> Writes:
    writes = Writes(after={r.id: r for r in snapshot.requests})
    _write_decisions(writes, writes.after, waits, decided)
    _write_waits(writes, snapshot, waits, decided)
    return writes


def _write_decisions(writes: Writes, requests: dict[int, Request], waits: dict[int, StoredWait],
                     decided: Plan) -> None:
    for decision in decided.decisions():
        before = requests[decision.request_id]
        # A request evicted and granted again in one pass has two decisions: the row must be in
        # the first one's state, and they apply in order.
        writes.expected.setdefault(before.id, decision.from_state.value)
        if decision.state is State.EXPIRED:
            writes.leases[before.id] = before.lease_expires_at
        elif decision.state is State.PREEMPTING:
            writes.victims.setdefault(decision.preempted_by, []).append(before.id)
        requests[before.id], columns = decision_columns(before, decision, decided.now)
        writes.fields.setdefault(before.id, {}).update(columns)
        if entry := history_entry(requests[before.id], decision, decided.now):
            writes.history.append(entry)
        writes.announced.add(before.id)
        writes.pools.update(p for p in (decision.pool, before.pool, waits.get(before.id, NO_WAIT).queue_pool) if p)
        writes.policies.add(before.policy)


def _write_waits(writes: Writes, snapshot: Snapshot, waits: dict[int, StoredWait], decided: Plan) -> None:
    policy_of, pending = None, State.PENDING.value
    for request_id, waiting in decided.waiting.items():
        # A request re-queued by this very pass was stored live: nothing of its wait is.
        before = waits.get(request_id, NO_WAIT)
        after = StoredWait(waiting.reason.value, waiting.message, waiting.position, waiting.pool)
        if before == after:
            continue
        writes.expected.setdefault(request_id, pending)
        writes.fields.setdefault(request_id, {}).update(zip(WAIT_FIELDS, after))
        if (before.reason, before.message) != (after.reason, after.message):
            writes.announced.add(request_id)  # a new position alone is not news: every grant shifts thousands
        if before.queue_pool != after.queue_pool:
            writes.pools.update(p for p in (before.queue_pool, after.queue_pool) if p)
            policy_of = policy_of or {r.id: r.policy for r in snapshot.requests}
            writes.policies.add(policy_of[request_id])


def _drop_conflicts(writes: Writes) -> list[int]:
    """Lock the rows to write; drop those no longer in the state the plan saw, and with a
    preemptor its victims; ``PlanVoid`` when a lease the plan expires was renewed. Returns the
    announced requests whose lease was renewed meanwhile (their events are made again)."""
    ids, renewed = sorted(writes.fields), []
    current = {request_id: (state, sql.moment(lease)) for request_id, state, lease in
               sql.select_requests(("id", "state", "lease_expires_at"), "id", ids, lock=True)}
    for request_id in ids:
        state, lease = current.get(request_id, (None, None))
        if state != writes.expected[request_id]:
            _drop(writes, request_id)
        elif request_id in writes.leases and lease != writes.leases[request_id]:
            raise PlanVoid(f"the lease of request {request_id} was renewed")
        elif _renewed_meanwhile(writes, request_id, lease):
            writes.payloads[request_id]["lease_expires_at"] = lease
            renewed.append(request_id)
    now = timezone.now()
    for fields in writes.fields.values():
        fields["updated_at"] = now  # a plain UPDATE skips auto_now
    return renewed


def _renewed_meanwhile(writes: Writes, request_id: int, lease: datetime | None) -> bool:
    """Whether an announced request the pass writes without touching its lease had it renewed
    since the announcement was read (a heartbeat): its event must carry the new lease."""
    return (request_id in writes.payloads and request_id in writes.fields
            and "lease_expires_at" not in writes.fields[request_id]
            and lease != writes.payloads[request_id]["lease_expires_at"])


def _drop(writes: Writes, request_id: int) -> None:
    if writes.fields.pop(request_id, None) is not None:
        writes.conflicts += 1
        writes.dropped.add(request_id)
    for victim in writes.victims.pop(request_id, ()):  # no preemption for a request that left
        _drop(writes, victim)


def _result(snapshot: Snapshot, decided: Plan, writes: Writes, started: float) -> PassResult:
    pending = sum(r.state == State.PENDING for r in snapshot.requests)
    return PassResult(decided, (time.perf_counter() - started) * 1000, writes.conflicts,
                      {name: len(getattr(decided, name)) for name in COUNTED},
                      pending=pending, live=len(snapshot.requests) - pending)


def _record(result: PassResult, now: datetime, trigger: str) -> None:
    PassRecord.objects.create(started_at=now, duration_ms=round(result.duration_ms, 3), trigger=trigger[:32],
                              pending=result.pending, live=result.live, conflicts=result.conflicts,
                              **result.counts)

