"""What every API call reads, and what a submission, release, cancel and heartbeat read and write,
one plain statement each (decisions 69, 71 and 73).

Through the ORM, building and compiling each of these small queries cost more than running it:
the token and its user, the site row, the group check and the pending count were a third of a
submission's time in the web process (py-spy at 4 clients), ``objects.create`` of its row another
tenth. The instances come back with the columns read loaded and the rest deferred (read on first
use, as ``defer`` would); the statements are written once per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import cache
from typing import NamedTuple

from django.contrib.auth.models import Group, User
from django.db import connection, transaction

from poolweb.models import ApiToken, ConfigVersion, Event, Request as RequestRow, RequestChange, SiteState
from poolweb.sql import OUTBOX_LOCK, decoded, insert_changes, moment


def _loaded(model, fields: Sequence, values: Sequence):
    """A model instance of ``values`` read raw for ``fields``: timestamps through ``moment``
    (SQLite's driver gives them naive), JSON through ``decoded`` (both drivers give it as text
    under Django's set-up), the rest as the driver gives them (SQLite's booleans are converted by
    the declared type)."""
    values = [_CONVERTERS.get(field.get_internal_type(), _as_read)(value) for field, value in zip(fields, values)]
    return model.from_db(connection.alias, [field.attname for field in fields], values)


def _as_read(value):
    return value


_CONVERTERS = {"DateTimeField": moment, "JSONField": decoded}


def _fields(model, names: Sequence[str]) -> list:
    """The fields named, in the model's order (``from_db`` takes values in that order)."""
    return [field for field in model._meta.concrete_fields if field.name in names]


def _listed(table_alias: str, fields: Sequence) -> str:
    return ", ".join(f"{table_alias}.{connection.ops.quote_name(field.column)}" for field in fields)


TOKEN_FIELDS = _fields(ApiToken, ("id", "user", "name", "prefix", "last_used_at"))
USER_FIELDS = _fields(User, ("id", "username", "first_name", "last_name", "email", "is_staff", "is_active",
                             "is_superuser"))
REQUEST_FIELDS = list(RequestRow._meta.concrete_fields)
VERSION_FIELDS = _fields(ConfigVersion, ("id", "number", "author", "author_name", "created_at", "comment"))


def token_with_user(digest: str) -> ApiToken | None:
    """The token of this digest with its ``user`` (``select_related``), or None."""
    return _with_user(_token_query(), digest, ApiToken, TOKEN_FIELDS, "user")


def _with_user(query: str, key, model, fields: Sequence, relation: str):
    """The one row of ``query`` (``fields`` of ``model``, then ``USER_FIELDS``) as an instance with
    its user set on ``relation``, or None."""
    with connection.cursor() as cursor:
        cursor.execute(query, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    instance = _loaded(model, fields, row[:len(fields)])
    setattr(instance, relation, _loaded(User, USER_FIELDS, row[len(fields):]))
    return instance


def site_row() -> SiteState | None:
    """The site row with its ``live_version`` (without the document), or None before the first write."""
    with connection.cursor() as cursor:
        cursor.execute(_site_query())
        row = cursor.fetchone()
    return None if row is None else _site_of(row)


class Submitter(NamedTuple):
    """What a submission reads of the site and of the user who submits, in one statement."""

    site: SiteState | None  # None before the first write
    pending: int  # the user's pending requests
    groups: frozenset[str]  # the names of the user's groups


def submitter(user_id: int) -> Submitter:
    """The site row, the user's pending count and group names: three round trips in one, which on
    PostgreSQL was a fifth of a submission's time (each statement 0.2-0.4 ms on this machine)."""
    with connection.cursor() as cursor:
        cursor.execute(_submitter_query(), [user_id, "pending", user_id])
        row = cursor.fetchone()
    *site, pending, groups = row
    return Submitter(None if site[0] is None else _site_of(site), pending, frozenset(decoded(groups) or ()))


def _site_of(row: Sequence) -> SiteState:
    """The site row of ``_site_query``'s columns: the switch, then the version's (all null without one)."""
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


def request_with_owner(request_id: int) -> RequestRow | None:
    """The request with its ``owner`` (``select_related``), or None."""
    return _with_user(_request_query(), request_id, RequestRow, REQUEST_FIELDS, "owner")


def update_request(request_id: int, state: str, columns: dict) -> bool:
    """Write ``columns`` (field name → value) of the request if it is still in ``state``; whether
    it was."""
    fields = [RequestRow._meta.get_field(name) for name in columns]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    values = [field.get_db_prep_save(columns[field.name], connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_table(RequestRow)} SET {assignments} "
                       f"WHERE {_column(RequestRow, 'id')} = %s AND {_column(RequestRow, 'state')} = %s",
                       [*values, request_id, state])
        return cursor.rowcount == 1


def insert_row(instance) -> None:
    """INSERT one new model instance and set its id: ``save()`` without the compiler, which cost
    more than the statement (a submission's row)."""
    with connection.cursor() as cursor:
        cursor.execute(_insert_query(type(instance)), _insert_values(instance))
        instance.pk = cursor.fetchone()[0]
    instance._state.adding, instance._state.db = False, connection.alias


def insert_submission(row: RequestRow, at: datetime, event: tuple[str, int | None, str]) -> None:
    """A new request ``row``, its first history entry (at ``at``) and its ``event`` (type, owner,
    data as JSON text whose ``id`` the row's id replaces), in one transaction.

    On PostgreSQL one statement (decision 74), so in autocommit one transaction and one round
    trip where a transaction of them took six (``BEGIN``, three inserts, the outbox lock,
    ``COMMIT``); inside a caller's transaction a savepoint, so a failure (the idempotency key's
    constraint) leaves the caller's transaction usable. The statement takes the outbox lock
    first: the row's insert reads from it and the event's from the row, so the event's seq is
    drawn under the lock (decision 17's commit order). On SQLite, whose statements are calls in
    the process, three statements in a transaction."""
    if connection.vendor != "postgresql":
        with transaction.atomic():
            insert_row(row)
            insert_changes([(row.pk, at, row.state, row.reason, row.message, row.attempt, None)])
            with connection.cursor() as cursor:
                cursor.execute(_event_query(), [*event, row.pk, at])
        return
    type, owner_id, data = event
    with transaction.atomic() if connection.in_atomic_block else nullcontext(), connection.cursor() as cursor:
        cursor.execute(_submission_query(), [OUTBOX_LOCK, *_insert_values(row), at, type, owner_id, data, at])
        row.pk = cursor.fetchone()[0]
    row._state.adding, row._state.db = False, connection.alias


def _inserted_fields(model) -> list:
    return [field for field in model._meta.local_concrete_fields if not field.primary_key]


def _insert_values(instance) -> list:
    """The values ``save()`` would insert: each field's own ``pre_save`` and ``get_db_prep_save``."""
    return [field.get_db_prep_save(field.pre_save(instance, True), connection)
            for field in _inserted_fields(type(instance))]


# The statements, written once per process (the backend's quoting does not change).

EVENT_COLUMNS = ("type", "owner", "data", "created_at")  # as a submission's event is handed in, with its time

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
def _request_query() -> str:
    return (f"SELECT {_listed('r', REQUEST_FIELDS)}, {_listed('u', USER_FIELDS)} FROM {_table(RequestRow)} r "
            f"JOIN {_table(User)} u ON u.{_column(User, 'id')} = r.{_column(RequestRow, 'owner')} "
            f"WHERE r.{_column(RequestRow, 'id')} = %s")


def _site_columns() -> str:
    return f"s.{_column(SiteState, 'management_enabled')}, {_listed('v', VERSION_FIELDS)}"


def _version_joined() -> str:
    return (f"LEFT JOIN {_table(ConfigVersion)} v "
            f"ON v.{_column(ConfigVersion, 'id')} = s.{_column(SiteState, 'live_version')}")


@cache
def _site_query() -> str:
    return (f"SELECT {_site_columns()} FROM {_table(SiteState)} s {_version_joined()} "
            f"WHERE s.{_column(SiteState, 'id')} = 1")


@cache
def _submitter_query() -> str:
    """The site row's columns (null without one: the row comes from ``(SELECT 1)``), the pending
    count, and the group names as a JSON array."""
    membership = User.groups.through
    aggregate = "json_agg" if connection.vendor == "postgresql" else "json_group_array"
    groups = (f"SELECT {aggregate}(g.{_column(Group, 'name')}) FROM {_table(membership)} m "
              f"JOIN {_table(Group)} g ON g.{_column(Group, 'id')} = m.{_column(membership, 'group')} "
              f"WHERE m.{_column(membership, 'user')} = %s")
    return (f"SELECT {_site_columns()}, ({_pending_query()}), ({groups}) FROM (SELECT 1) AS one "
            f"LEFT JOIN {_table(SiteState)} s ON s.{_column(SiteState, 'id')} = 1 {_version_joined()}")


@cache
def _membership_query() -> str:
    membership = User.groups.through
    return (f"SELECT 1 FROM {_table(membership)} m JOIN {_table(Group)} g "
            f"ON g.{_column(Group, 'id')} = m.{_column(membership, 'group')} "
            f"WHERE m.{_column(membership, 'user')} = %s AND g.{_column(Group, 'name')} = %s")


def _pending_query() -> str:
    """The user's pending requests (the ``request_owner_state`` index answers it)."""
    return (f"SELECT COUNT(*) FROM {_table(RequestRow)} "
            f"WHERE {_column(RequestRow, 'owner')} = %s AND {_column(RequestRow, 'state')} = %s")


@cache
def _submission_query() -> str:
    fields, quote = _inserted_fields(RequestRow), connection.ops.quote_name
    history = ("request", "at", "state", "reason", "message", "attempt", "pool")
    return (f"WITH outbox AS (SELECT pg_advisory_xact_lock(%s)), "
            f"r AS (INSERT INTO {_table(RequestRow)} ({', '.join(quote(f.column) for f in fields)}) "
            f"SELECT {', '.join(['%s'] * len(fields))} FROM outbox RETURNING *), "
            f"c AS (INSERT INTO {_table(RequestChange)} ({', '.join(_column(RequestChange, n) for n in history)}) "
            f"SELECT r.{_column(RequestRow, 'id')}, %s, r.{_column(RequestRow, 'state')}, "
            f"r.{_column(RequestRow, 'reason')}, r.{_column(RequestRow, 'message')}, "
            f"r.{_column(RequestRow, 'attempt')}, NULL FROM r), "
            f"e AS (INSERT INTO {_table(Event)} ({', '.join(_column(Event, n) for n in EVENT_COLUMNS)}) "
            f"SELECT %s, %s, jsonb_set(%s::jsonb, '{{id}}', to_jsonb(r.{_column(RequestRow, 'id')}))::text, %s FROM r) "
            f"SELECT {_column(RequestRow, 'id')} FROM r")


@cache
def _event_query() -> str:
    """SQLite: one outbox row, its data's ``id`` set (SQLite needs no outbox lock: its write lock
    is the transaction's)."""
    return (f"INSERT INTO {_table(Event)} ({', '.join(_column(Event, n) for n in EVENT_COLUMNS)}) "
            f"VALUES (%s, %s, json_set(%s, '$.id', %s), %s)")


@cache
def _insert_query(model) -> str:
    fields = _inserted_fields(model)
    return (f"INSERT INTO {_table(model)} ({', '.join(connection.ops.quote_name(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))}) RETURNING {connection.ops.quote_name(model._meta.pk.column)}")
