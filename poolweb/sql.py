"""The few places Poolweb writes SQL by hand, each for a measured reason, and each the only place
that knows what one database does differently from the other.

A pass reads, rewrites and announces up to 10^4 requests. Through the ORM that costs about a
millisecond a row (Django's value converters on read, ``bulk_update``'s CASE per column per row
on write, model instances and ``bulk_create`` for events); here it costs what the driver costs:

- ``select_requests``: plain ``SELECT`` of named columns, timestamps as text on PostgreSQL (parsed
  in C by ``moment``: Django's timestamptz loader is Python and costs more than the query);
- ``update_requests``: one ``UPDATE`` per set of changed columns, by ``executemany`` on SQLite (in
  process, a row costs nothing more) and as ``UPDATE … FROM (VALUES …)`` a thousand rows at a time
  on PostgreSQL (whose ``executemany`` pays a parse, bind and execute round per row);
- ``insert``: multi-row ``INSERT``s, 500 rows to a statement (the outbox, its data encoded by
  ``json_text``; the requests' history);
- ``lock_outbox`` and ``sequence_high_water``: PostgreSQL's advisory lock and sequence functions;
- ``pass_lock``: passes, provisions and the switch one at a time, without SQLite's write lock.
"""

from __future__ import annotations

import fcntl
import json
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone as dt_timezone

from django.db import connection
from psycopg.types.json import Jsonb

from poolweb.models import Event, Request as RequestRow, RequestChange

CHUNK = 2000  # values per IN (…): below every database's limit of bound parameters
OUTBOX_LOCK = 0x706F_6F6C_0001  # pg_advisory_xact_lock keys: the outbox writers,
SCHEDULES_LOCK = 0x706F_6F6C_0002  # whoever arms the worker's schedules,
PASS_LOCK = 0x706F_6F6C_0003  # and passes, provisions and the switch (pass_lock)


def select_requests(fields: Sequence[str], column: str, values: Sequence) -> list[tuple]:
    """``fields`` of the requests whose ``column`` is one of ``values``, in id order. The values
    come as the driver gives them: see ``moment`` and ``decoded``."""
    meta, quote = RequestRow._meta, connection.ops.quote_name
    columns = ", ".join(_selected(meta.get_field(name), quote) for name in fields)
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        for start in range(0, len(values), CHUNK):
            part = values[start:start + CHUNK]
            cursor.execute(f"SELECT {columns} FROM {quote(meta.db_table)} "
                           f"WHERE {quote(meta.get_field(column).column)} IN ({', '.join(['%s'] * len(part))}) "
                           f"ORDER BY {quote(meta.pk.column)}", part)
            rows += cursor.fetchall()
    return rows


def _selected(field, quote) -> str:
    if connection.vendor == "postgresql" and field.get_internal_type() == "DateTimeField":
        return f"{quote(field.column)}::text"
    return quote(field.column)


def moment(value: datetime | str | None) -> datetime | None:
    """A timestamp read by ``select_requests``: PostgreSQL's text (``2026-11-29 13:45:00.5+00``),
    or the naive UTC datetime SQLite's converter makes of what Django stored."""
    if value is None:
        return None
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=dt_timezone.utc)


def decoded(value: str | dict | None) -> dict | None:
    """A JSON column: text on SQLite, and on PostgreSQL as Django's driver set-up leaves it."""
    return json.loads(value) if isinstance(value, str) else value


def update_requests(fields_by_id: dict[int, dict]) -> None:
    """Write each request's ``fields`` (column name → Python value): one statement per set of
    changed columns, run for all its rows."""
    by_names: dict[tuple[str, ...], list[tuple[int, dict]]] = defaultdict(list)
    for request_id, fields in fields_by_id.items():
        by_names[tuple(sorted(fields))].append((request_id, fields))
    meta, quote = RequestRow._meta, connection.ops.quote_name
    prepare = _Preparer()
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


class _Preparer:
    """Datetimes take the backend's form, prepared once per value (a pass writes one ``now`` to
    thousands of rows); everything else goes to the driver as it is."""

    def __init__(self) -> None:
        self.prepared: dict[tuple[str, datetime], object] = {}

    def __call__(self, column, value):
        if not isinstance(value, datetime):
            return value
        key = (column.name, value)
        if key not in self.prepared:
            self.prepared[key] = column.get_db_prep_save(value, connection)
        return self.prepared[key]


def _update_from_values(cursor, columns: list, values: list[list]) -> None:
    meta, quote = RequestRow._meta, connection.ops.quote_name
    names = [quote(column.column) for column in columns] + [quote(meta.pk.column)]
    row = "(" + ", ".join(f"%s::{column.db_type(connection)}" for column in [*columns, meta.pk]) + ")"
    assignments = ", ".join(f"{name} = v.{name}" for name in names[:-1])
    for start in range(0, len(values), 1000):
        part = values[start:start + 1000]
        cursor.execute(f"UPDATE {quote(meta.db_table)} AS t SET {assignments} "
                       f"FROM (VALUES {', '.join([row] * len(part))}) AS v({', '.join(names)}) "
                       f"WHERE t.{names[-1]} = v.{names[-1]}", [value for one in part for value in one])


def lock(key: int) -> None:
    """An advisory lock held until the transaction ends (PostgreSQL). SQLite needs none: its
    IMMEDIATE transactions hold the database's one write lock from their start."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


_held = threading.local()  # how deep this thread is in pass_lock: a nested use takes nothing more


@contextmanager
def pass_lock() -> Iterator[None]:
    """Held by a pass for its whole run and by a provision or the switch for theirs, in every
    process, and released at the end of the block.

    Not the database's write lock: a pass reads and plans under it while submissions, releases
    and heartbeats commit beside it, and takes the write lock only for its writes. On SQLite it is
    ``flock`` on a file beside the database (each holder opens the file itself, so threads
    exclude each other too, and a process that dies lets go). On PostgreSQL it is an advisory
    lock: of the session, released at the end of the block; inside a transaction, of the
    transaction (an aborted one could not run the unlock), released when it ends.
    """
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    with _acquired():
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0


@contextmanager
def _acquired() -> Iterator[None]:
    if connection.vendor != "postgresql":
        with open(f"{connection.settings_dict['NAME']}.pass-lock", "a") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            yield  # closing the file lets go
        return
    in_transaction = connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)" if in_transaction else "SELECT pg_advisory_lock(%s)",
                       [PASS_LOCK])
    try:
        yield
    finally:
        if not in_transaction:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [PASS_LOCK])


def lock_outbox() -> None:
    """PostgreSQL hands out sequence values at insert time, so two writers could commit seq 7
    before 6 and a reader at 7 would skip 6: the writers of events take one lock, held to
    commit, so rows commit in seq order."""
    lock(OUTBOX_LOCK)


_unknown = Event._meta.get_field("data").encoder().default  # Decimals, datetimes: as the model's encoder


def json_text(data: object) -> str:
    """An event's data as JSON text, by the C encoder, with the model field's encoder only for
    what JSON has no type for: through ``JSONField`` (a Python encoder class per value) it was
    a third of a cold pass's writing."""
    return json.dumps(data, default=_unknown)


def insert_events(rows: list[tuple[str, int | None, str]], created_at: datetime) -> None:
    """Insert ``(type, owner_id, data as JSON text)`` outbox rows."""
    as_json = (lambda text: Jsonb(text, dumps=_as_is)) if connection.vendor == "postgresql" else _as_is
    insert(Event, ("type", "owner", "data", "created_at"),
           [(type, owner_id, as_json(text), created_at) for type, owner_id, text in rows])


def _as_is(text: str) -> str:
    return text


def insert_changes(rows: list[tuple[int, datetime, str, str, str, int, str | None]]) -> None:
    """Insert history rows ``(request_id, at, state, reason, message, attempt, pool)``."""
    insert(RequestChange, ("request", "at", "state", "reason", "message", "attempt", "pool"), rows)


def insert(model, names: Sequence[str], rows: list[tuple]) -> None:
    """Multi-row INSERTs of ``rows`` (values in the order of ``names``), 500 rows to a statement."""
    meta, quote = model._meta, connection.ops.quote_name
    columns = [meta.get_field(name) for name in names]
    prepare = _Preparer()
    values = [[prepare(column, value) for column, value in zip(columns, row)] for row in rows]
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(values), 500):
            part = values[start:start + 500]
            cursor.execute(f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(c.column) for c in columns)}) "
                           f"VALUES {', '.join([placeholders] * len(part))}", [value for row in part for value in row])


def sequence_high_water() -> int:
    """The last seq the outbox's sequence handed out, kept row or not (0 on an unknown backend)."""
    table = Event._meta.db_table
    queries = {
        "sqlite": ("SELECT seq FROM sqlite_sequence WHERE name = %s", [table]),
        "postgresql": ("SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'seq'))", [table]),
    }
    if connection.vendor not in queries:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(*queries[connection.vendor])
        row = cursor.fetchone()
    return (row[0] if row else None) or 0
