"""Writing the event stream's outbox (docs/events.md). Every function here must run inside the
transaction of the decision it reports: the events commit with it or not at all. Readers relay
rows in ``seq`` order, so ``seq`` order must be commit order (``sql.lock_outbox``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from types import SimpleNamespace

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Event
from poolweb.selectors.live import PolicyState, PoolState
from poolweb.services.payloads import REQUEST_COLUMNS, policy_state_data, pool_state_data, request_data

REQUEST_UPDATED = "request.updated"
POOL_UPDATED = "pool.updated"
POLICY_UPDATED = "policy.updated"
CONFIG_PROVISIONED = "config.provisioned"
MANAGEMENT_CHANGED = "management.changed"

_MOMENTS = ("submitted_at", "allocated_at", "finished_at", "lease_expires_at", "preempted_at")


def publish(type: str, data: dict, *, owner_id: int | None = None) -> None:
    """One event; ``owner_id`` limits it to that user (and admins)."""
    _write([(type, owner_id, data)])


def publish_requests(request_ids: Iterable[int]) -> None:
    """``request.updated`` with the request object of each, as the API shows it now."""
    publish_request_dicts(request_dicts(request_ids).values())


def request_dicts(request_ids: Iterable[int]) -> dict[int, dict]:
    """The requests' ``REQUEST_COLUMNS`` by id, decoded, for ``publish_request_dicts``. Read by plain
    queries, not as model instances: a pass may announce ten thousand. A pass reads them before
    its write transaction and lays its own columns over them."""
    rows = [dict(zip(REQUEST_COLUMNS, row)) for row in sql.select_requests(REQUEST_COLUMNS, "id", sorted(request_ids))]
    usernames = dict(User.objects.filter(pk__in={row["owner"] for row in rows}).values_list("id", "username"))
    for row in rows:
        row.update({name: sql.moment(row[name]) for name in _MOMENTS}, resources=sql.decoded(row["resources"]),
                   labels=sql.decoded(row["labels"]), owner_id=row["owner"],
                   owner=SimpleNamespace(username=usernames[row["owner"]]), pk=row["id"])
    return {row["id"]: row for row in rows}


def publish_request_dicts(rows: Iterable[dict]) -> None:
    publish_encoded(encoded_requests(rows).values())


Encoded = tuple[str, int | None, str]  # (type, owner_id, data as JSON text): an event ready to write


def encoded_requests(rows: Iterable[dict]) -> dict[int, Encoded]:
    """``request.updated`` of each row of ``request_dicts``, by request id, encoded already: a pass
    encodes its thousands before it takes the write lock."""
    return {row["id"]: (REQUEST_UPDATED, row["owner_id"], sql.json_text(request_data(SimpleNamespace(**row))))
            for row in rows}


def publish_encoded(events: Iterable[Encoded]) -> None:
    _write_encoded(list(events))


def publish_request_rows(rows: Iterable) -> None:
    """``request.updated`` for requests whose rows are at hand (model instances with their owner),
    as they are: a submission or a release announces its own row without reading it again."""
    _write([(REQUEST_UPDATED, row.owner_id, request_data(row)) for row in rows])


def publish_live(pools: Iterable[PoolState], policies: Iterable[PolicyState]) -> None:
    """``pool.updated`` and ``policy.updated`` with these states."""
    _write([(POOL_UPDATED, None, pool_state_data(state)) for state in pools]
           + [(POLICY_UPDATED, None, policy_state_data(state)) for state in policies])


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
    _write_encoded([(type, owner_id, sql.json_text(data)) for type, owner_id, data in events])


def _write_encoded(events: list[Encoded]) -> None:
    if not events:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("events are written in the transaction of the decision they report")
    sql.lock_outbox()
    sql.insert_events(events, timezone.now())
