"""The few places Poolweb writes SQL by hand, each for a measured reason, and each the only place
that knows what one database does differently from the other.

A pass reads, rewrites and announces up to 10^4 requests. Through the ORM that costs about a
millisecond a row (Django's value converters on read, ``bulk_update``'s CASE per column per row
on write, model instances and ``bulk_create`` for events); here it costs what the driver costs:

- ``select_requests``: plain ``SELECT`` of named columns, timestamps as text (parsed in C by
  ``moment``: Django's timestamptz loader and SQLite's converter are Python), the values on
  PostgreSQL as one array (``= ANY``);
- ``update_requests``: one ``UPDATE`` per set of changed columns, by ``executemany`` on SQLite (in
  process, a row costs nothing more) and as one ``UPDATE … FROM unnest(arrays)`` on PostgreSQL;
- ``insert``: multi-row ``INSERT``s, 500 rows to a statement, on SQLite, one ``INSERT … SELECT
  FROM unnest(arrays)`` on PostgreSQL (the outbox, its data encoded by ``json_text``; the
  requests' history). PostgreSQL's statements bind on the server (``_bound_cursor``): Django's
  client-side binding parsed and quoted every one of 10^4 rows' values in Python (decision 61);
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
from functools import cache
from datetime import datetime, timezone as dt_timezone

import psycopg
from django.contrib.auth.models import Group, User
from django.db import connection

from poolweb.models import ApiToken, ConfigVersion, Event, Request as RequestRow, RequestChange, SiteState

CHUNK = 2000  # values per IN (…): below every database's limit of bound parameters
OUTBOX_LOCK = 0x706F_6F6C_0001  # pg_advisory_xact_lock keys: the outbox writers,
SCHEDULES_LOCK = 0x706F_6F6C_0002  # whoever arms the worker's schedules,
PASS_LOCK = 0x706F_6F6C_0003  # and passes, provisions and the switch (pass_lock)


def select_requests(fields: Sequence[str], column: str, values: Sequence, *, lock: bool = False) -> list[tuple]:
    """``fields`` of the requests whose ``column`` is one of ``values``, in id order; with ``lock``
    the rows are locked to the end of the transaction (PostgreSQL: SQLite's IMMEDIATE transaction
    holds the whole database already). The values come as the driver gives them: see ``moment``
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
    cursor = connection._prepare_cursor(psycopg.Cursor(connection.connection))
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
    """A column as selected: a timestamp as text, for ``moment`` to parse in C (SQLite's converter
    for Django's ``datetime`` columns is a Python function per value, PostgreSQL's loader too)."""
    if field.get_internal_type() != "DateTimeField":
        return quote(field.column)
    if connection.vendor == "postgresql":
        return f"{quote(field.column)}::text"
    return f"{quote(field.column)} || '+00:00'"  # stored as naive UTC text; a computed column has no converter


def moment(value: datetime | str | None) -> datetime | None:
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
    meta, quote = RequestRow._meta, connection.ops.quote_name
    for names, rows in by_names.items():
        columns = [meta.get_field(name) for name in names]
        values = _by_column(columns + [meta.pk], [[*(fields[name] for name in names), request_id]
                                                   for request_id, fields in rows])
        if connection.vendor == "postgresql":
            _update_from_arrays(columns, values)
            continue
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


def _update_from_arrays(columns: list, values: list[list]) -> None:
    """One ``UPDATE … FROM unnest(arrays)`` for all the rows: a column of values is one array."""
    meta, quote = RequestRow._meta, connection.ops.quote_name
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


# One encoder (json.dumps with a default makes one per call), without the C encoder's check for
# cycles: an event's data is a tree of dicts and lists made for it.
_encode = json.JSONEncoder(default=_unknown, check_circular=False).encode


def json_text(data: object) -> str:
    """An event's data as JSON text, by the C encoder, with the model field's encoder only for
    what JSON has no type for: through ``JSONField`` (a Python encoder class per value) it was
    a third of a cold pass's writing."""
    return _encode(data)


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


# --- the request path: what every call reads, one plain statement each (decision 69) -------------
# Through the ORM, building and compiling each of these small queries cost more than running it:
# the token and its user, the site row, the group check and the pending count were a third of a
# submission's time in the web process (profiled at 4 clients). The instances come back with the
# columns read loaded and the rest deferred (read on first use, as ``defer`` would).

def _loaded(model, fields: Sequence, values: Sequence):
    """A model instance of ``values`` read raw for ``fields``: timestamps through ``moment``
    (SQLite's driver gives them naive), the rest as the driver gives them (SQLite's booleans are
    converted by the declared type)."""
    values = [moment(value) if field.get_internal_type() == "DateTimeField" else value
              for field, value in zip(fields, values)]
    return model.from_db(connection.alias, [field.attname for field in fields], values)


def _fields(model, names: Sequence[str]) -> list:
    """The fields named, in the model's order (``from_db`` takes values in that order)."""
    return [field for field in model._meta.concrete_fields if field.name in names]


def _listed(table_alias: str, fields: Sequence) -> str:
    return ", ".join(f"{table_alias}.{connection.ops.quote_name(field.column)}" for field in fields)


TOKEN_FIELDS = _fields(ApiToken, ("id", "user", "name", "prefix", "last_used_at"))
USER_FIELDS = _fields(User, ("id", "username", "first_name", "last_name", "email", "is_staff", "is_active",
                             "is_superuser"))
VERSION_FIELDS = _fields(ConfigVersion, ("id", "number", "author", "author_name", "created_at", "comment"))


def token_with_user(digest: str) -> ApiToken | None:
    """The token of this digest with its ``user`` (``select_related``), or None."""
    with connection.cursor() as cursor:
        cursor.execute(_token_query(), [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    token = _loaded(ApiToken, TOKEN_FIELDS, row[:len(TOKEN_FIELDS)])
    token.user = _loaded(User, USER_FIELDS, row[len(TOKEN_FIELDS):])
    return token


def site_row() -> SiteState | None:
    """The site row with its ``live_version`` (without the document), or None before the first write."""
    with connection.cursor() as cursor:
        cursor.execute(_site_query())
        row = cursor.fetchone()
    if row is None:
        return None
    version = None if row[1] is None else _loaded(ConfigVersion, VERSION_FIELDS, row[1:])
    state = SiteState.from_db(connection.alias, ["id", "live_version_id", "management_enabled"],
                              [1, version and version.pk, bool(row[0])])
    state.live_version = version
    return state


def in_group(user_id: int, group: str) -> bool:
    """Whether the user is a member of the group named ``group``."""
    with connection.cursor() as cursor:
        cursor.execute(_membership_query(), [user_id, group])
        return cursor.fetchone() is not None


def pending_of(user_id: int) -> int:
    """How many pending requests the user has (the ``request_owner_state`` index answers it)."""
    with connection.cursor() as cursor:
        cursor.execute(_pending_query(), [user_id, "pending"])
        return cursor.fetchone()[0]


def insert_row(instance) -> None:
    """INSERT one new model instance and set its id: ``save()`` without the compiler, which cost
    more than the statement (a submission's row)."""
    fields = [field for field in instance._meta.local_concrete_fields if not field.primary_key]
    values = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(_insert_query(type(instance)), values)
        instance.pk = cursor.fetchone()[0]
    instance._state.adding, instance._state.db = False, connection.alias


# The statements, written once per process (the backend's quoting does not change).

def _column(model, name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@cache
def _token_query() -> str:
    return (f"SELECT {_listed('t', TOKEN_FIELDS)}, {_listed('u', USER_FIELDS)} FROM {_table(ApiToken)} t "
            f"JOIN {_table(User)} u ON u.{_column(User, 'id')} = t.{_column(ApiToken, 'user')} "
            f"WHERE t.{_column(ApiToken, 'digest')} = %s")


@cache
def _site_query() -> str:
    return (f"SELECT s.{_column(SiteState, 'management_enabled')}, {_listed('v', VERSION_FIELDS)} "
            f"FROM {_table(SiteState)} s LEFT JOIN {_table(ConfigVersion)} v "
            f"ON v.{_column(ConfigVersion, 'id')} = s.{_column(SiteState, 'live_version')} "
            f"WHERE s.{_column(SiteState, 'id')} = 1")


@cache
def _membership_query() -> str:
    membership = User.groups.through
    return (f"SELECT 1 FROM {_table(membership)} m JOIN {_table(Group)} g "
            f"ON g.{_column(Group, 'id')} = m.{_column(membership, 'group')} "
            f"WHERE m.{_column(membership, 'user')} = %s AND g.{_column(Group, 'name')} = %s")


@cache
def _pending_query() -> str:
    return (f"SELECT COUNT(*) FROM {_table(RequestRow)} "
            f"WHERE {_column(RequestRow, 'owner')} = %s AND {_column(RequestRow, 'state')} = %s")


@cache
def _insert_query(model) -> str:
    fields = [field for field in model._meta.local_concrete_fields if not field.primary_key]
    return (f"INSERT INTO {_table(model)} ({', '.join(connection.ops.quote_name(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {connection.ops.quote_name(model._meta.pk.column)}")
