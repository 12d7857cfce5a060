"""The few places Poolweb writes SQL by hand, each for a measured reason, and each the only place
that knows what one database does differently from the other.

A pass reads, rewrites and announces up to 10^4 requests. Through the ORM that costs about a
millisecond a row (Django's value converters on read, ``bulk_update``'s CASE per column per row
on write, model instances and ``bulk_create`` for events); here it costs what the driver costs:

- ``select_requests``: plain ``SELECT`` of named columns, timestamps as text (parsed in C by
  ``stored_time``: Django's timestamptz loader and SQLite's converter are Python), the values on
  PostgreSQL as one array (``= ANY``);
- ``update_requests``: one ``UPDATE`` per set of changed columns, by ``executemany`` on SQLite (in
  process, a row costs nothing more) and as one ``UPDATE … FROM unnest(arrays)`` on PostgreSQL;
- ``update_rows``: the same for any model's rows, instead of ``bulk_update`` (the tens of rows of
  the totals a pass adds to, decisions 150–151);
- ``insert``: multi-row ``INSERT``s, 500 rows to a statement, on SQLite, one ``INSERT … SELECT
  FROM unnest(arrays)`` on PostgreSQL (the outbox, its data encoded by ``json_text``; the
  requests' history). PostgreSQL's statements bind on the server (``_bound_cursor``): Django's
  client-side binding parsed and quoted every one of 10^4 rows' values in Python (decision 61);
- ``lock_outbox`` and ``sequence_high_water``: PostgreSQL's advisory lock and sequence functions;
- ``pass_lock``: passes, provisions and the switch one at a time, without SQLite's write lock.

What one API call reads and writes (the token, the site row, a submission) is in
``poolweb.sql.api_calls`` (decision 110).
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone as dt_timezone

import orjson
import psycopg
from django.db import OperationalError, connection
from django.db.models import Model
from rest_framework.utils.encoders import JSONEncoder

from poolweb.django_internals import django_cursor
from poolweb.models import Event, Request as RequestRow, RequestChange
from poolweb.sqlite.base import PASS_LOCK_FILE
from poolweb.sqlite.locks import LockTimeout, file_lock

CHUNK = 2000  # values per IN (…): below every database's limit of bound parameters
OUTBOX_LOCK = 0x706F_6F6C_0001  # pg_advisory_xact_lock keys: the outbox writers,
SCHEDULES_LOCK = 0x706F_6F6C_0002  # whoever arms the worker's schedules,
PASS_LOCK = 0x706F_6F6C_0003  # and passes, provisions and the switch (pass_lock);
LEADER_LOCK = 0x706F_6F6C_0004  # pg_advisory_lock: the active pass loop (services.leadership)


def select_requests(fields: Sequence[str], column: str, values: Sequence, *, lock: bool = False) -> list[tuple]:
    """``fields`` of the requests whose ``column`` is one of ``values``, in id order; with ``lock``
    the rows are locked to the end of the transaction (PostgreSQL: SQLite's IMMEDIATE transaction
    holds the whole database already). The values come as the driver gives them: see ``stored_time``
    and ``decoded``."""
    meta, quote = RequestRow._meta, connection.ops.quote_name
    columns = ", ".join(_selected(meta.get_field(name), quote) for name in fields)
    query = f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {quote(meta.get_field(column).column)} "
    if connection.vendor == "postgresql":  # one array, however many values
        with _bound_cursor() as cursor:
            cursor.execute(query + f"= ANY(%b::{_array_type(meta.get_field(column))}) ORDER BY {quote(meta.pk.column)}"
                           + (" FOR UPDATE" if lock else ""), [list(values)])
            return cursor.fetchall()
    rows: list[tuple] = []
    with connection.cursor() as cursor:
        for start in range(0, len(values), CHUNK):
            part = values[start:start + CHUNK]
            cursor.execute(query + f"IN ({', '.join(['%s'] * len(part))}) ORDER BY {quote(meta.pk.column)}", part)
            rows += cursor.fetchall()
    return rows


@contextmanager
def _bound_cursor() -> Iterator:
    """PostgreSQL: a cursor of Django's connection (its transaction, its adapters, its query log)
    that binds parameters on the server. Django's own binds on the client: psycopg then parses a
    statement of thousands of ``%s`` in Python and quotes every value into it, which was most of a
    cold pass's writing. Here a column of values travels as one binary array (``%b``) that
    ``unnest`` or ``= ANY`` takes apart on the server."""
    connection.ensure_connection()
    cursor = django_cursor(connection, psycopg.Cursor(connection.connection))
    try:
        yield cursor
    finally:
        cursor.close()


def _array_type(field) -> str:
    """The PostgreSQL array type of a column's values as sent: JSON goes as text (``_as_stored``)."""
    kind = field.db_type(connection)
    return "text[]" if kind == "jsonb" else f"{kind}[]"


def _as_stored(field, name: str) -> str:
    return f"{name}::jsonb" if field.db_type(connection) == "jsonb" else name


def _selected(field, quote) -> str:
    """A column as selected: a timestamp as text, for ``stored_time`` to parse in C (SQLite's converter
    for Django's ``datetime`` columns is a Python function per value, PostgreSQL's loader too)."""
    if field.get_internal_type() != "DateTimeField":
        return quote(field.column)
    if connection.vendor == "postgresql":
        return f"{quote(field.column)}::text"
    return f"{quote(field.column)} || '+00:00'"  # stored as naive UTC text; a computed column has no converter


def stored_time(value: datetime | str | None) -> datetime | None:
    """A timestamp read by ``select_requests``: as text (PostgreSQL's ``2026-11-29 13:45:00.5+00``,
    SQLite's stored UTC text with ``+00:00``), or a datetime Django's converter made (naive: UTC)."""
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
    meta = RequestRow._meta
    for names, rows in by_names.items():
        columns = [meta.get_field(name) for name in names]
        _update(meta, columns, _by_column(columns + [meta.pk], [[*(fields[name] for name in names), request_id]
                                                               for request_id, fields in rows]))


def update_rows(rows: Sequence[Model], names: Sequence[str]) -> None:
    """What ``bulk_update(rows, names)`` writes, the way ``update_requests`` writes (JSON as
    ``json_text``). ``bulk_update`` builds a ``CASE`` per column per row through Django's
    expressions (~70 µs each): a cold pass's totals (decisions 150–151: 50 policies' counters and
    their histograms' three columns) spent ~15 ms on it, and an ``UPDATE`` per row on PostgreSQL
    still ~10 (a parse and a plan each)."""
    if not rows:
        return
    meta = rows[0]._meta
    columns = [meta.get_field(name) for name in names]
    json_columns = {column.attname for column in columns if column.get_internal_type() == "JSONField"}

    def stored(row: Model, name: str) -> object:
        return json_text(getattr(row, name)) if name in json_columns else getattr(row, name)

    _update(meta, columns, _by_column(columns + [meta.pk],
                                      [[*(stored(row, column.attname) for column in columns), row.pk] for row in rows]))


def _update(meta, columns: list, values: list[list]) -> None:
    """Set ``columns`` of the rows of ``meta``'s table from ``values`` (``_by_column``'s, the
    primary keys last): by ``executemany`` on SQLite (in process, a row costs nothing more), one
    ``UPDATE … FROM unnest(arrays)`` on PostgreSQL."""
    if connection.vendor == "postgresql":
        _update_from_arrays(meta, columns, values)
        return
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(column.column)} = %s" for column in columns)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s",
                           list(zip(*values)))


def _by_column(columns: list, rows: list[Sequence]) -> list[list]:
    """The values of ``rows`` column by column, as the driver takes them: datetimes in the
    backend's form, each distinct one prepared once (a pass writes one ``now`` to thousands of
    rows); everything else as it is."""
    by_column = [list(values) for values in zip(*rows)] if rows else [[] for _ in columns]
    for column, values in zip(columns, by_column):
        if column.get_internal_type() == "DateTimeField":
            prepared: dict[datetime, object] = {}
            values[:] = [None if value is None else prepared[value] if value in prepared
                         else prepared.setdefault(value, column.get_db_prep_save(value, connection))
                         for value in values]
    return by_column


def _update_from_arrays(meta, columns: list, values: list[list]) -> None:
    """One ``UPDATE … FROM unnest(arrays)`` for all the rows of ``meta``'s table: a column of values
    is one array."""
    quote = connection.ops.quote_name
    names = [quote(column.column) for column in [*columns, meta.pk]]
    arrays = ", ".join(f"%b::{_array_type(column)}" for column in [*columns, meta.pk])
    assignments = ", ".join(f"{name} = {_as_stored(column, 'v.' + name)}" for name, column in zip(names, columns))
    with _bound_cursor() as cursor:
        cursor.execute(f"UPDATE {quote(meta.db_table)} AS t SET {assignments} FROM unnest({arrays}) "
                       f"AS v({', '.join(names)}) WHERE t.{names[-1]} = v.{names[-1]}", values)


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
    and heartbeats commit beside it, and takes the write lock only for its writes. Locks are taken
    in one order everywhere: this one first, then a write transaction (on SQLite the write lock),
    then rows, then the outbox (decision 79); so enter it before a transaction. On SQLite it is
    ``flock`` on a file beside the database (a process that dies lets go). On PostgreSQL it is an
    advisory lock: of the session, released at the end of the block; inside a transaction, of the
    transaction (an aborted one could not run the unlock), released when it ends. Either waits at
    most the database's lock bound (``POOLWEB_LOCK_WAIT_SECONDS``), then fails (``LockTimeout`` or
    PostgreSQL's ``lock_not_available``, both an ``OperationalError``).
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
        lock = file_lock(f"{connection.settings_dict['NAME']}{PASS_LOCK_FILE}", "pass lock")
        descriptor = lock.acquire(connection.settings_dict["OPTIONS"].get("timeout", 5))
        try:
            yield
        finally:
            lock.release(descriptor)
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


def busy_message(error: BaseException) -> str | None:
    """What to tell a caller whose call failed because a lock was not free within the bound
    (``pass_lock``, SQLite's write lock, PostgreSQL's ``lock_timeout``); None for other errors."""
    if isinstance(error, LockTimeout):
        return str(error)
    if isinstance(error, OperationalError) and isinstance(error.__cause__, psycopg.errors.LockNotAvailable):
        return "Poolweb is busy: a lock was not free in time; try again"
    return None


def lock_outbox() -> None:
    """PostgreSQL hands out sequence values at insert time, so two writers could commit seq 7
    before 6 and a reader at 7 would skip 6: the writers of events take one lock, held to
    commit, so rows commit in seq order."""
    lock(OUTBOX_LOCK)


_unknown = JSONEncoder().default  # Decimals, datetimes: DRF's, as the API's responses encode them
# Datetimes go to that encoder too (its format, not orjson's); keys that are not strings
# become strings, as the standard library's encoder makes them.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def json_text(data: object) -> str:
    """An event's data as JSON text, by orjson, with the model field's encoder only for what JSON
    has no type for. Through ``JSONField`` (a Python encoder class per value) it was a third of a
    cold pass's writing; the standard library's C encoder then took 53 ms for 10^4 request
    objects, orjson 7 (decision 70)."""
    return orjson.dumps(data, default=_unknown, option=_ORJSON_OPTIONS).decode()


def insert_events(rows: list[tuple[str, int | None, str]], created_at: datetime) -> None:
    """Insert ``(type, owner_id, data as JSON text)`` outbox rows, in seq order as listed."""
    insert(Event, ("type", "owner", "data", "created_at"),
           [(type, owner_id, text, created_at) for type, owner_id, text in rows])


def insert_changes(rows: list[tuple[int, datetime, str, str, str, int, str | None]]) -> None:
    """Insert history rows ``(request_id, at, state, reason, message, attempt, pool)``."""
    insert(RequestChange, ("request", "at", "state", "reason", "message", "attempt", "pool"), rows)


def insert(model, names: Sequence[str], rows: list[tuple]) -> None:
    """INSERTs of ``rows`` (values in the order of ``names``; a JSON column's as JSON text), in
    the order listed: multi-row, 500 rows to a statement, on SQLite; one ``INSERT … SELECT FROM
    unnest(arrays)`` on PostgreSQL."""
    meta, quote = model._meta, connection.ops.quote_name
    columns = [meta.get_field(name) for name in names]
    if not rows:
        return
    values = _by_column(columns, rows)
    table, listed = quote(meta.db_table), ", ".join(quote(column.column) for column in columns)
    if connection.vendor == "postgresql":
        _insert_arrays(table, columns, values)
        return
    values = list(zip(*values))
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    with connection.cursor() as cursor:
        for start in range(0, len(values), 500):
            part = values[start:start + 500]
            cursor.execute(f"INSERT INTO {table} ({listed}) VALUES {', '.join([placeholders] * len(part))}",
                           [value for row in part for value in row])


def _insert_arrays(table: str, columns: list, values: list[list]) -> None:
    # WITH ORDINALITY … ORDER BY: serial keys (the outbox's seq) are drawn in the order listed.
    quote = connection.ops.quote_name
    names = [quote(column.column) for column in columns]
    arrays = ", ".join(f"%b::{_array_type(column)}" for column in columns)
    selected = ", ".join(_as_stored(column, "v." + name) for name, column in zip(names, columns))
    with _bound_cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({', '.join(names)}) SELECT {selected} FROM unnest({arrays}) "
                       f"WITH ORDINALITY AS v({', '.join(names)}, listed_at) ORDER BY v.listed_at", values)


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

