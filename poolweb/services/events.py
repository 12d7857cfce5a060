"""Writing the event stream's outbox (docs/events.md). Every function here must run inside the
transaction of the decision it reports: the events commit with it or not at all. Readers relay
rows in ``seq`` order, so ``seq`` order must be commit order (``sql.lock_outbox``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
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

_MOMENTS = ("submitted_at", "allocated_at", "finished_at", "lease_expires_at", "preempted_at", "time_limit_at")


def publish(type: str, data: dict, *, owner_id: int | None = None) -> None:
    """One event; ``owner_id`` limits it to that user (and admins)."""
    _write([(type, owner_id, data)])


def publish_requests(request_ids: Iterable[int]) -> None:
    """``request.updated`` with the request object of each, as the API shows it now."""
    publish_request_dicts(request_dicts(request_ids).values())


def request_dicts(request_ids: Iterable[int], read: tuple[Sequence[str], Mapping[int, tuple]] | None = None,
                  ) -> dict[int, dict]:
    """The requests' ``REQUEST_COLUMNS`` by id, decoded, for ``publish_request_dicts``. Read by plain
    queries, not as model instances: a pass may announce ten thousand. A pass hands the rows it
    read already as ``read`` (their columns, and the rows by id) and lays its own columns over
    them before it writes."""
    if read is None:
        raw = sql.select_requests(REQUEST_COLUMNS, "id", sorted(request_ids))
    else:
        columns, by_id = read
        picked = itemgetter(*(columns.index(name) for name in REQUEST_COLUMNS))
        raw = [picked(by_id[request_id]) for request_id in sorted(request_ids)]
    rows = [dict(zip(REQUEST_COLUMNS, row)) for row in raw]
    owners = {owner_id: SimpleNamespace(username=username) for owner_id, username in
              User.objects.filter(pk__in={row["owner"] for row in rows}).values_list("id", "username")}
    # Decoded once per distinct text and shared (they are only read): most rows have their
    # profile's resources and no labels, and decoding each was a tenth of a cold pass.
    documents: dict[object, object] = {}
    stored_time = sql.stored_time
    for row in rows:
        for name in _MOMENTS:
            row[name] = stored_time(row[name])
        for name in ("resources", "labels"):
            text = row[name]
            if isinstance(text, str):
                row[name] = documents[text] if text in documents else documents.setdefault(text, json.loads(text))
        row.update(owner_id=row["owner"], owner=owners[row["owner"]], pk=row["id"])
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


def encoded_request_row(row) -> Encoded:
    """``request.updated`` of a request whose row is at hand, encoded (its id may be null yet:
    ``sql.api_calls.insert_submission`` fills it in)."""
    return REQUEST_UPDATED, row.owner_id, sql.json_text(request_data(row))


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
