"""The plain statements of one API call: the bearer's token and user, the site row, what a
submitter may have, whether they may submit for another user, one request read and written, and a
submission's write on PostgreSQL. A pass's bulk statements are in ``poolweb.sql``; this is the
other hot path, run once per call.

Each stays here because the front door's bench shows it pays (decision 110, bench/README.md):
Django compiling a small query cost several times running it (the token and its user 535 µs of
CPU through ``select_related``, 81 µs here, on SQLite). Model instances are built by Django, by
``Model.objects.raw`` (the columns read loaded, the rest deferred); what needs no instance comes
back as plain values. The statements are written once per process.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from datetime import datetime
from functools import cache
from typing import NamedTuple

from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction

from poolweb.models import ApiToken, ConfigVersion, Event, Request as RequestRow, RequestChange, SiteState
from poolweb.sql import OUTBOX_LOCK, decoded, stored_time

# The user's columns an API call reads; the others (the password's hash) are left deferred.
USER_COLUMNS = ("id", "username", "first_name", "last_name", "email", "is_staff", "is_active", "is_superuser")
VERSION_COLUMNS = ("id", "number", "author_id", "author_name", "created_at", "comment")  # not the document


class Bearer(NamedTuple):
    """A bearer token as a call authenticates with it."""

    token_id: int
    last_used_at: datetime | None  # when it was last noted as used
    user: User


def bearer(digest: str) -> Bearer | None:
    """The token of this digest and its user, or None."""
    found = _first(User.objects.raw(_bearer_query(), [digest]))
    return None if found is None else Bearer(found.token_id, stored_time(found.token_last_used_at), found)


def site_row() -> SiteState | None:
    """The site row with its ``live_version`` (the document deferred), or None before the first write."""
    state = _first(SiteState.objects.raw(f"SELECT * FROM {_table(SiteState)} WHERE {_column(SiteState, 'id')} = 1"))
    if state is not None and state.live_version_id is not None:
        state.live_version = _first(ConfigVersion.objects.raw(_version_query(), [state.live_version_id]))
    return state


class Submitter(NamedTuple):
    """What a submission reads of the user who submits, in one statement."""

    pending: int  # the user's pending requests
    groups: frozenset[str]  # the names of the user's groups


def submitter(user_id: int) -> Submitter:
    """The user's pending count and group names."""
    with connection.cursor() as cursor:
        cursor.execute(_submitter_query(), [user_id, "pending", user_id])
        pending, groups = cursor.fetchone()
    return Submitter(pending, frozenset(decoded(groups) or ()))


class ActingFor(NamedTuple):
    """What a submission for another user reads, in one statement."""

    permitted: bool  # whether the caller was granted ``poolweb.submit_for_others`` (itself or by a group)
    owner: User | None  # the user named, or None


SUBMIT_FOR_OTHERS = ("poolweb", "submit_for_others")  # the permission: app label, codename


def acting_for(caller_id: int, username: str) -> ActingFor:
    """Whether the caller holds the permission by an explicit grant — a superuser's implied
    permissions do not count (decision 131) — and the user named ``username``. One statement: the
    grant by the permission's and the membership's indexes, the user by the unique username."""
    with connection.cursor() as cursor:
        cursor.execute(_acting_for_query(), [*SUBMIT_FOR_OTHERS, caller_id, *SUBMIT_FOR_OTHERS, caller_id, username])
        permitted, *columns = cursor.fetchone()
    return ActingFor(bool(permitted), None if columns[0] is None else _user(dict(zip(USER_COLUMNS, columns))))


def _user(values: dict) -> User:
    """A user of ``USER_COLUMNS``' values, the other columns deferred (``from_db`` takes the
    values in the model's field order)."""
    names = [field.attname for field in User._meta.concrete_fields if field.attname in values]
    return User.from_db(connection.alias, names, [values[name] for name in names])


def request_with_owner(request_id: int) -> RequestRow | None:
    """The request with its ``owner`` (as ``select_related`` gives it), or None."""
    row = _first(RequestRow.objects.raw(f"SELECT * FROM {_table(RequestRow)} WHERE {_column(RequestRow, 'id')} = %s",
                                        [request_id]))
    owner = None if row is None else _first(User.objects.raw(_user_query(), [row.owner_id]))
    if owner is None:  # no such request, or its owner (and so it) deleted between the two reads
        return None
    row.owner = owner
    return row


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


def submission_in_one_statement() -> bool:
    """Whether ``insert_submission`` is the way to store a submission here: on PostgreSQL, where it
    cost a submission 0.5 ms of CPU against 1.8 for the ORM's writes (decision 110). SQLite has no
    data-modifying ``WITH``; its writes are calls in the process, and the ORM's cost 0.1 ms more."""
    return connection.vendor == "postgresql"


def insert_submission(row: RequestRow, event: tuple[str, int | None, str]) -> None:
    """PostgreSQL: a new request ``row``, its first history entry (at its ``submitted_at``) and its
    ``event`` (type, owner, data as JSON text whose ``id`` the row's id replaces), in one statement
    (decision 74), and the row's new id set on it. In autocommit that is one transaction and one
    round trip; inside a caller's transaction a savepoint, so a failure (the idempotency key's
    constraint) leaves the caller's transaction usable. The statement takes the outbox lock
    first: the row's insert reads from it and the event's from the row, so the event's seq is
    drawn under the lock (decision 17's commit order)."""
    type, owner_id, data = event
    values = [field.get_db_prep_save(field.pre_save(row, True), connection) for field in _inserted(RequestRow)]
    with transaction.atomic() if connection.in_atomic_block else nullcontext(), connection.cursor() as cursor:
        cursor.execute(_submission_query(), [OUTBOX_LOCK, *values, row.submitted_at, type, owner_id, data,
                                             row.submitted_at])
        row.pk = cursor.fetchone()[0]


def _first(rows) -> object | None:
    return next(iter(rows), None)


def _inserted(model) -> list:
    return [field for field in model._meta.local_concrete_fields if not field.primary_key]


# The statements, written once per process (the backend's quoting does not change).

def _column(model, name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _listed(alias: str, columns: Sequence[str]) -> str:
    return ", ".join(f"{alias}.{connection.ops.quote_name(column)}" for column in columns)


@cache
def _bearer_query() -> str:
    """The user's columns, and the token's id and last use under names of their own."""
    return (f"SELECT {_listed('u', USER_COLUMNS)}, t.{_column(ApiToken, 'id')} AS token_id, "
            f"t.{_column(ApiToken, 'last_used_at')} AS token_last_used_at FROM {_table(ApiToken)} t "
            f"JOIN {_table(User)} u ON u.{_column(User, 'id')} = t.{_column(ApiToken, 'user')} "
            f"WHERE t.{_column(ApiToken, 'digest')} = %s")


@cache
def _user_query() -> str:
    return f"SELECT {_listed('u', USER_COLUMNS)} FROM {_table(User)} u WHERE u.{_column(User, 'id')} = %s"


@cache
def _version_query() -> str:
    return (f"SELECT {_listed('v', VERSION_COLUMNS)} FROM {_table(ConfigVersion)} v "
            f"WHERE v.{_column(ConfigVersion, 'id')} = %s")


@cache
def _submitter_query() -> str:
    """The pending count (the ``request_owner_state`` index answers it) and the group names as a
    JSON array."""
    membership = User.groups.through
    aggregate = "json_agg" if connection.vendor == "postgresql" else "json_group_array"
    pending = (f"SELECT COUNT(*) FROM {_table(RequestRow)} "
               f"WHERE {_column(RequestRow, 'owner')} = %s AND {_column(RequestRow, 'state')} = %s")
    groups = (f"SELECT {aggregate}(g.{_column(Group, 'name')}) FROM {_table(membership)} m "
              f"JOIN {_table(Group)} g ON g.{_column(Group, 'id')} = m.{_column(membership, 'group')} "
              f"WHERE m.{_column(membership, 'user')} = %s")
    return f"SELECT ({pending}), ({groups})"


@cache
def _acting_for_query() -> str:
    """The grant (to the user, or to one of their groups) as 0 or 1, and the user's columns, null
    when no user has the name."""
    granted, membership, allowed = User.user_permissions.through, User.groups.through, Group.permissions.through
    permission = (f"SELECT p.{_column(Permission, 'id')} FROM {_table(Permission)} p "
                  f"JOIN {_table(ContentType)} t "
                  f"ON t.{_column(ContentType, 'id')} = p.{_column(Permission, 'content_type')} "
                  f"WHERE t.{_column(ContentType, 'app_label')} = %s AND p.{_column(Permission, 'codename')} = %s")
    own = (f"SELECT 1 FROM {_table(granted)} g WHERE g.{_column(granted, 'permission')} IN ({permission}) "
           f"AND g.{_column(granted, 'user')} = %s")
    by_group = (f"SELECT 1 FROM {_table(allowed)} a JOIN {_table(membership)} m "
                f"ON m.{_column(membership, 'group')} = a.{_column(allowed, 'group')} "
                f"WHERE a.{_column(allowed, 'permission')} IN ({permission}) AND m.{_column(membership, 'user')} = %s")
    return (f"SELECT CASE WHEN EXISTS ({own}) OR EXISTS ({by_group}) THEN 1 ELSE 0 END, {_listed('u', USER_COLUMNS)} "
            f"FROM (SELECT 1 AS one) one LEFT JOIN {_table(User)} u ON u.{_column(User, 'username')} = %s")


@cache
def _submission_query() -> str:
    fields, quote = _inserted(RequestRow), connection.ops.quote_name
    history = ("request", "at", "state", "reason", "message", "attempt", "pool")
    event = ("type", "owner", "data", "created_at")
    return (f"WITH outbox AS (SELECT pg_advisory_xact_lock(%s)), "
            f"r AS (INSERT INTO {_table(RequestRow)} ({', '.join(quote(f.column) for f in fields)}) "
            f"SELECT {', '.join(['%s'] * len(fields))} FROM outbox RETURNING *), "
            f"c AS (INSERT INTO {_table(RequestChange)} ({', '.join(_column(RequestChange, n) for n in history)}) "
            f"SELECT r.{_column(RequestRow, 'id')}, %s, r.{_column(RequestRow, 'state')}, "
            f"r.{_column(RequestRow, 'reason')}, r.{_column(RequestRow, 'message')}, "
            f"r.{_column(RequestRow, 'attempt')}, NULL FROM r), "
            f"e AS (INSERT INTO {_table(Event)} ({', '.join(_column(Event, n) for n in event)}) "
            f"SELECT %s, %s, jsonb_set(%s::jsonb, '{{id}}', to_jsonb(r.{_column(RequestRow, 'id')}))::text, %s FROM r) "
            f"SELECT {_column(RequestRow, 'id')} FROM r")
