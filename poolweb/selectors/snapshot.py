"""What a pass reads: every request that is not finished, as the engine's values, and the live
configuration, in two queries (``poolweb.sql`` says why by hand)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings

from poolweb import sql
from poolweb.models import SiteState
from poolweb.selectors.versions import EngineVersion, engine_version, site
from reconcile import UNFINISHED_STATES, Reason, Request, Snapshot, State, Vector

SNAPSHOT_FIELDS = ("id", "policy", "profile", "resources", "submitted_at", "state", "preemptible", "max_retries",
                   "attempt", "pool", "allocated_at", "grant_order", "lease_seconds", "lease_expires_at", "preempted_by",
                   "preempted_at", "reason", "held_pool", "max_runtime_seconds", "time_limit_at")


class StoredWait(NamedTuple):
    """What a pending request's row says of its wait: what a pass rewrites when it changes."""

    reason: str | None
    message: str | None
    position: int | None
    queue_pool: str | None
    eta: datetime | None
    eta_basis: str | None


WAIT_FIELDS = StoredWait._fields
NO_WAIT = StoredWait(None, None, None, None, None, None)  # the wait of a request that was live at the load


class PassInput(NamedTuple):
    snapshot: Snapshot
    version: EngineVersion  # the live version, with the terms kept for it
    waits: dict[int, StoredWait]  # per pending request, so a pass writes only the waits that changed
    rows: dict[int, tuple] = {}  # the rows as read, by id: ``columns`` of each
    columns: tuple[str, ...] = ()


def to_engine(row: Sequence, vectors: dict[str, Vector] | None = None) -> Request:
    """A request row as the engine's value: ``SNAPSHOT_FIELDS`` in order, as ``values_list``
    gives them, or as the driver does (``sql.select_requests``, with ``vectors``: one Vector
    shared by the rows whose resources read alike)."""
    (request_id, policy, profile, resources, submitted_at, state, preemptible, max_retries, attempt, pool,
     allocated_at, grant_order, lease_seconds, lease_expires_at, preempted_by, preempted_at, reason,
     held_pool, max_runtime_seconds, time_limit_at) = row[:len(SNAPSHOT_FIELDS)]
    if vectors is None:  # values_list: resources decoded already, and not hashable
        vector = Vector(resources)
    else:  # the driver's row: resources as the JSON text, a key for the shared Vector
        vector = vectors.get(resources)
        if vector is None:
            vector = vectors[resources] = Vector(sql.decoded(resources))
    stored_time = sql.stored_time
    return Request(
        id=request_id, policy=policy, profile=profile, resources=vector, submitted_at=stored_time(submitted_at),
        state=_STATES[state], preemptible=bool(preemptible), max_retries=max_retries, attempt=attempt, pool=pool,
        allocated_at=stored_time(allocated_at), grant_order=grant_order, lease_seconds=lease_seconds, lease_expires_at=stored_time(lease_expires_at),
        preempted_by=preempted_by, preempted_at=stored_time(preempted_at), reason=_REASONS[reason], held_pool=held_pool,
        max_runtime_seconds=max_runtime_seconds, time_limit_at=stored_time(time_limit_at))


# By stored value: a dict lookup, where ``State(value)`` is a Python call into enum (24,000 a pass).
_STATES = {state.value: state for state in State}
_REASONS = {reason.value: reason for reason in Reason}


def load_snapshot(now: datetime) -> Snapshot:
    return load_pass_input(now).snapshot


def load_pass_input(now: datetime, state: SiteState | None = None, *, also: Sequence[str] = ()) -> PassInput:
    """The snapshot at ``now``, the live version as the engine reads it, and the stored wait of each pending
    request; ``state`` is the site row when the caller read it already (under the pass lock).
    The requests are read ``ORDER BY id`` (``sql.select_requests``), the order ``Snapshot``
    promises the engine.
    ``also`` names more columns to read in the same query (a pass announces from them), kept
    with the rest in ``rows``."""
    state = state or site()
    version = engine_version(state.live_version)
    columns = (*SNAPSHOT_FIELDS, *WAIT_FIELDS)
    columns += tuple(name for name in also if name not in columns)
    requests, waits, rows = [], {}, {}
    vectors: dict[str, Vector] = {}  # most requests share their profile's resources: one Vector each
    width, waits_end = len(SNAPSHOT_FIELDS), len(SNAPSHOT_FIELDS) + len(WAIT_FIELDS)
    for row in sql.select_requests(columns, "state", UNFINISHED_STATES):
        request = to_engine(row, vectors)
        requests.append(request)
        rows[request.id] = row
        if request.state is State.PENDING:
            wait = StoredWait(*row[width:waits_end])
            waits[request.id] = wait._replace(eta=sql.stored_time(wait.eta)) if wait.eta is not None else wait
    snapshot = Snapshot(
        now=now, config=version.config, requests=tuple(requests), management_enabled=state.management_enabled,
        eviction_grace=timedelta(seconds=settings.POOLWEB["EVICTION_GRACE_SECONDS"]),
    )
    return PassInput(snapshot, version, waits, rows, columns)
