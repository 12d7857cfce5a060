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

from django.db import connection, transaction

from poolweb.api.representations import LivePoolSerializer, PolicyStateSerializer, request_data
from poolweb.models import Event, Request as RequestRow
from poolweb.selectors.live import policy_states, pool_states

REQUEST_UPDATED = "request.updated"
POOL_UPDATED = "pool.updated"
POLICY_UPDATED = "policy.updated"
CONFIG_PROVISIONED = "config.provisioned"
MANAGEMENT_CHANGED = "management.changed"

OUTBOX_LOCK = 0x706F_6F6C_0001  # pg_advisory_xact_lock key of the outbox writers


def publish(type: str, data: dict, *, owner_id: int | None = None) -> None:
    """One event; ``owner_id`` limits it to that user (and admins)."""
    _write([Event(type=type, data=data, owner_id=owner_id)])


def publish_requests(request_ids: Iterable[int]) -> None:
    """``request.updated`` with the request object of each, as the API shows it now."""
    rows = RequestRow.objects.filter(pk__in=list(request_ids)).select_related("owner").order_by("id")
    _write([Event(type=REQUEST_UPDATED, data=request_data(row), owner_id=row.owner_id) for row in rows])


def publish_live(pools: Collection[str], policies: Collection[str]) -> None:
    """``pool.updated`` and ``policy.updated`` for the named pools and policies that are live."""
    events = [Event(type=POOL_UPDATED, data=LivePoolSerializer(state).data)
              for state in pool_states() if state.name in pools]
    events += [Event(type=POLICY_UPDATED, data=PolicyStateSerializer(state).data)
               for state in policy_states() if state.name in policies]
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


def _write(events: list[Event]) -> None:
    if not events:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events are written in the transaction of the decision they report")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [OUTBOX_LOCK])
    Event.objects.bulk_create(events, batch_size=500)
