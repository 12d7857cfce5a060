"""Writing the event stream's outbox (api.md §3). Every function here must run inside the
transaction of the decision it reports: the events commit with it or not at all.

Readers relay rows in ``seq`` order and remember the last one they sent, so ``seq`` order must
be commit order. PostgreSQL hands out sequence values at insert time, so two transactions could
commit 7 before 6 and a reader would skip 6; taking one advisory lock (held to commit) before the
first insert makes writers of events commit one at a time. SQLite has a single writer anyway.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from types import SimpleNamespace

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from poolweb.api.representations import LivePoolSerializer, PolicyStateSerializer, request_data
from poolweb.models import Event
from poolweb.selectors.live import policy_states, pool_states
from poolweb.services.state import decoded, moment, request_rows

REQUEST_UPDATED = "request.updated"
POOL_UPDATED = "pool.updated"
POLICY_UPDATED = "policy.updated"
CONFIG_PROVISIONED = "config.provisioned"
MANAGEMENT_CHANGED = "management.changed"

OUTBOX_LOCK = 0x706F_6F6C_0001  # pg_advisory_xact_lock key of the outbox writers


def publish(type: str, data: dict, *, owner_id: int | None = None) -> None:
    """One event; ``owner_id`` limits it to that user (and admins)."""
    _write([(type, owner_id, data)])


REQUEST_FIELDS = ("id", "name", "policy", "profile", "owner", "resources", "preemptible", "max_retries",
                  "attempt", "state", "reason", "message", "pool", "position", "preempted_by", "labels",
                  "submitted_at", "allocated_at", "finished_at", "lease_expires_at", "lease_seconds", "queue_pool")
MOMENTS = ("submitted_at", "allocated_at", "finished_at", "lease_expires_at")


def publish_requests(request_ids: Iterable[int]) -> None:
    """``request.updated`` with the request object of each, as the API shows it now. Read by
    plain queries, not as model instances: a pass may announce ten thousand."""
    rows = [dict(zip(REQUEST_FIELDS, row)) for row in request_rows(REQUEST_FIELDS, "id", sorted(request_ids))]
    usernames = dict(User.objects.filter(pk__in={row["owner"] for row in rows}).values_list("id", "username"))
    events = []
    for row in rows:
        owner_id = row["owner"]
        row.update({name: moment(row[name]) for name in MOMENTS}, resources=decoded(row["resources"]),
                   labels=decoded(row["labels"]), owner=SimpleNamespace(username=usernames[owner_id]), pk=row["id"])
        events.append((REQUEST_UPDATED, owner_id, request_data(SimpleNamespace(**row))))
    _write(events)


def publish_live(pools: Collection[str], policies: Collection[str]) -> None:
    """``pool.updated`` and ``policy.updated`` for the named pools and policies that are live."""
    events = [(POOL_UPDATED, None, LivePoolSerializer(state).data) for state in pool_states(pools)] if pools else []
    if policies:
        events += [(POLICY_UPDATED, None, PolicyStateSerializer(state).data) for state in policy_states(policies)]
    _write(events)


def prune(older_than: datetime, keep: int) -> int:
    """Forget the oldest events: those older than ``older_than`` beyond the newest ``keep``. Always
    a prefix in ``seq`` order (``created_at`` is only nearly in that order), so a client resuming
    from before the oldest kept one gets ``resync`` and one resuming after it misses nothing."""
    newest = Event.objects.order_by("-seq").values_list("seq", flat=True).first()
    if newest is None:
        return 0
    cut = (Event.objects.filter(seq__lte=newest - keep, created_at__lt=older_than)
           .order_by("-seq").values_list("seq", flat=True).first())
    if cut is None:
        return 0
    deleted, _ = Event.objects.filter(seq__lte=cut).delete()
    return deleted


def _write(events: list[tuple[str, int | None, dict]]) -> None:
    """Insert ``(type, owner_id, data)`` rows, 500 to a statement: model instances and
    ``bulk_create`` cost more than the insert itself at 10^4 rows."""
    if not events:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events are written in the transaction of the decision they report")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [OUTBOX_LOCK])
    meta, quote = Event._meta, connection.ops.quote_name
    columns = [meta.get_field(name) for name in ("type", "owner", "data", "created_at")]
    now = columns[3].get_db_prep_save(timezone.now(), connection)
    encode = columns[2].get_db_prep_save
    rows = [(type, owner_id, encode(data, connection), now) for type, owner_id, data in events]
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            part = rows[start:start + 500]
            cursor.execute(f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(c.column) for c in columns)}) "
                           f"VALUES {', '.join(['(%s, %s, %s, %s)'] * len(part))}",
                           [value for row in part for value in row])
