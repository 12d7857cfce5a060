"""The live configuration and the snapshot a pass reads, loaded in bulk (no per-row queries)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone as dt_timezone

from django.conf import settings
from django.db import connection

from poolweb.models import ConfigVersion, Request as RequestRow, SiteState
from reconcile import Config, Reason, Request, Snapshot, State, Vector
from reconcile.document import parse_document

CHUNK = 2000  # values per IN (…): below every database's limit of bound parameters
LIVE_OR_PENDING = (State.PENDING.value, State.ALLOCATED.value, State.PREEMPTING.value)


def site_state(*, for_update: bool = False) -> SiteState:
    rows = SiteState.objects.select_for_update() if for_update else SiteState.objects
    state, _ = rows.get_or_create(pk=1)
    return state


def live_version() -> ConfigVersion | None:
    return site_state().live_version


def live_config() -> Config:
    version = live_version()
    return config_of(version) if version else Config()


_configs: dict[tuple, Config] = {}


def config_of(version: ConfigVersion) -> Config:
    """A provisioned version as an engine Config, parsed once: versions never change."""
    key = (version.pk, version.number, version.created_at)
    config = _configs.get(key)
    if config is None:
        parsed = parse_document(version.document)
        if parsed.config is None:  # provision validates, so this is a damaged row
            raise ValueError(f"version {version.number} does not parse: {parsed.errors[:3]}")
        if len(_configs) >= 16:
            _configs.clear()
        config = _configs[key] = parsed.config
    return config


SNAPSHOT_FIELDS = ("id", "policy", "profile", "resources", "submitted_at", "state", "preemptible", "max_retries",
                   "attempt", "pool", "allocated_at", "lease_seconds", "lease_expires_at", "preempted_by",
                   "preempted_at", "reason", "held_pool")


WAITING_FIELDS = ("reason", "message", "position", "queue_pool")  # what a pass writes on pending rows


def to_engine(row: Sequence, vectors: dict[str, Vector] | None = None) -> Request:
    """A request row as the engine's value: ``SNAPSHOT_FIELDS`` in order, as ``values_list``
    gives them, or as the driver does (``request_rows``, with ``vectors``: one Vector shared by
    the rows whose resources read alike)."""
    (request_id, policy, profile, resources, submitted_at, state, preemptible, max_retries, attempt, pool,
     allocated_at, lease_seconds, lease_expires_at, preempted_by, preempted_at, reason,
     held_pool) = row[:len(SNAPSHOT_FIELDS)]
    if vectors is None:  # values_list: resources decoded already, and not hashable
        vector = Vector(resources)
    else:  # request_rows: resources as the JSON text, a key for the shared Vector
        vector = vectors.get(resources)
        if vector is None:
            vector = vectors[resources] = Vector(decoded(resources))
    return Request(
        id=request_id, policy=policy, profile=profile, resources=vector, submitted_at=moment(submitted_at),
        state=State(state), preemptible=bool(preemptible), max_retries=max_retries, attempt=attempt, pool=pool,
        allocated_at=moment(allocated_at), lease_seconds=lease_seconds, lease_expires_at=moment(lease_expires_at),
        preempted_by=preempted_by, preempted_at=moment(preempted_at), reason=Reason(reason), held_pool=held_pool)


def load_snapshot(now: datetime) -> Snapshot:
    """Every non-terminal request and the live configuration, as frozen values (two queries)."""
    return load_pass_input(now)[0]


def load_pass_input(now: datetime) -> tuple[Snapshot, dict[int, tuple]]:
    """The snapshot, and what is stored of each pending request's wait (``WAITING_FIELDS``) so a
    pass writes only the rows whose wait changed, without reading them again."""
    state = SiteState.objects.select_related("live_version").filter(pk=1).first() or site_state()
    version = state.live_version
    config = config_of(version) if version else Config()
    requests, stored = [], {}
    vectors: dict[str, Vector] = {}  # most requests share their profile's resources: one Vector each
    width = len(SNAPSHOT_FIELDS)
    for row in _pass_rows():
        request = to_engine(row, vectors)
        requests.append(request)
        if request.state is State.PENDING:
            stored[request.id] = row[width:]
    snapshot = Snapshot(
        now=now, config=config, requests=tuple(requests), management_enabled=state.management_enabled,
        eviction_grace=timedelta(seconds=settings.POOLWEB["EVICTION_GRACE_SECONDS"]),
    )
    return snapshot, stored


def _pass_rows() -> list[tuple]:
    """``SNAPSHOT_FIELDS`` then ``WAITING_FIELDS`` of every non-terminal request."""
    return request_rows((*SNAPSHOT_FIELDS, *WAITING_FIELDS), "state", LIVE_OR_PENDING)


def request_rows(fields: Sequence[str], column: str, values: Sequence) -> list[tuple]:
    """``fields`` of the requests whose ``column`` is one of ``values``, by one plain query each
    2,000 values: at 10^4 rows Django's per-value converters cost several times the query. The
    values come as the driver gives them: see ``moment`` and ``decoded``."""
    meta, quote = RequestRow._meta, connection.ops.quote_name
    columns = ", ".join(_selected(meta.get_field(name), quote) for name in fields)
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        for start in range(0, len(values), CHUNK):
            part = values[start:start + CHUNK]
            cursor.execute(f"SELECT {columns} FROM {quote(meta.db_table)} "
                           f"WHERE {quote(meta.get_field(column).column)} IN ({', '.join(['%s'] * len(part))})", part)
            rows += cursor.fetchall()
    return rows


def _selected(field, quote) -> str:
    # PostgreSQL: a timestamp as text, which ``moment`` parses in C; Django's timestamptz loader
    # is Python and costs more than the rest of the query at 10^4 rows.
    if connection.vendor == "postgresql" and field.get_internal_type() == "DateTimeField":
        return f"{quote(field.column)}::text"
    return quote(field.column)


def moment(value: datetime | str | None) -> datetime | None:
    """A timestamp read by ``request_rows``: PostgreSQL's text (``2026-11-29 13:45:00.5+00``),
    or the naive UTC datetime SQLite's converter makes of what Django stored."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=dt_timezone.utc)


def decoded(value: str | dict | None) -> dict | None:
    """A JSON column: text on SQLite, and on PostgreSQL as Django's driver set-up leaves it."""
    return json.loads(value) if isinstance(value, str) else value
