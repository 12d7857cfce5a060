"""Many requests in one call, for a bridge that speaks for many jobs (docs/slurm.md): submit many
(``POST /requests/batch``, decision 132), and heartbeat, release or cancel many
(``POST /requests/actions``, decision 141).

A batch of submissions is checked item by item as its single calls would be, with each read made
once for the batch (``requests.Intake``: the live configuration, each owner, each owner's
standing; the idempotency keys in one read), so an item refused leaves the others as they are;
then what passed is stored in one transaction, with its history and one event per request
(decision 135). A batch of actions locks its requests at once, decides each item by its single
call's rule, and writes them in one transaction (decision 136). Either keeps the lock order and
the bounded waits of decision 79, and sends an event only for what committed. What a batch adds
besides is the pass: one for the lot, asked for after the last item
(``requests.one_pass_after``), not one per item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Request as RequestRow, UnannouncedChange
from poolweb.selectors.requests import requests_by_idempotency_keys
from poolweb.services import audit, events
from poolweb.services.changes import HistoryEntry
from poolweb.services.request_acts import ActionRefused, RequestNotFound, change_of, locked_many
from poolweb.services.requests import Intake, Refusal, SubmissionSource, one_pass_after, stored_or_earlier
from reconcile import State


class BatchItem(NamedTuple):
    """One submission of a batch, as ``request_submit`` takes it."""

    submission: SubmissionSource
    idempotency_key: str | None = None


Outcome = tuple[RequestRow, bool] | Refusal | PermissionDenied  # (the request, whether new), or why not


class _ToStore(NamedTuple):
    """An item's outcome once the batch's new rows are stored: the ``index``-th row's, new unless
    ``again`` (a key an earlier item of the batch used)."""

    index: int
    again: bool = False


def request_submit_batch(*, user, items: Sequence[BatchItem]) -> list[Outcome]:
    """Submit each item as ``request_submit`` would, in order: a key ``user`` used before returns
    its request, then ``Intake.row`` checks it; the rows that passed are stored together
    (``store_submissions``), a key used twice in the batch stored once. Then one pass for them all,
    if any is new and pending. The outcomes in item order."""
    earlier = requests_by_idempotency_keys(
        user=user, keys={item.idempotency_key for item in items if item.idempotency_key is not None})
    intake, rows, first_of = Intake(user), [], {}
    answers: list[Outcome | _ToStore] = []
    for submission, key in items:
        if key in earlier:
            answers.append((earlier[key], False))
        elif key in first_of:
            answers.append(_ToStore(first_of[key], again=True))
        else:
            try:
                rows.append(intake.row(submission, key))
            except (Refusal, PermissionDenied) as refusal:
                answers.append(refusal)
                continue
            if key is not None:
                first_of[key] = len(rows) - 1
            answers.append(_ToStore(len(rows) - 1))
    stored = store_submissions(rows, account=user)
    outcomes = [(stored[a.index][0], stored[a.index][1] and not a.again) if isinstance(a, _ToStore) else a
                for a in answers]
    if any(created and row.state == State.PENDING.value for row, created in stored):
        fresh = one_pass_after([row.pk for row, _ in stored])
        outcomes = [(fresh.get(o[0].pk, o[0]), o[1]) if isinstance(o, tuple) else o for o in outcomes]
    return outcomes


def store_submissions(rows: Sequence[RequestRow], *, account) -> list[tuple[RequestRow, bool]]:
    """Store new requests submitted by ``account``, with their history and one event each, in one
    transaction: each row, and True; or, for a row whose idempotency key another call took after
    the batch read its keys, that call's request and False (``stored_or_earlier``, each row in a
    savepoint of the same transaction).

    The outbox lock is taken first, as one submission's statement takes it
    (``api_calls.insert_submission``), so that submissions meet there and never wait for one
    another's keys while holding it; no row of another request is locked, and the order of
    decision 79 holds. Rolled back whole, it sends no event."""
    if not rows:
        return []
    with transaction.atomic():
        sql.lock_outbox()
        try:
            with transaction.atomic():
                RequestRow.objects.bulk_create(rows)
            stored = [(row, True) for row in rows]
        except IntegrityError:  # rare: a retry of the batch racing the batch; each row on its own
            for row in rows:
                row.pk = None
            return [stored_or_earlier(row, account=account) for row in rows]
        sql.insert_changes([(row.pk, row.submitted_at, row.state, row.reason, row.message, row.attempt, None)
                            for row in rows])
        _audit(account, "submit", [row for row in rows if row.submitted_by is not None])
        events.publish_encoded([events.encoded_request_row(row) for row in rows])
    return stored


class ActionItem(NamedTuple):
    """One request of ``request_act_many``, and the attempt the caller runs as (heartbeat and
    release only, decision 9)."""

    request_id: int
    attempt: int | None = None


ActionOutcome = RequestRow | ActionRefused  # the request afterwards, or why nothing was done


def request_act_many(*, user, action: str, items: Sequence[ActionItem]) -> list[ActionOutcome]:
    """``action`` (one of ``requests.ACTIONS``) on each item as its single call decides it, in
    order, in one transaction (``act_together``); then one pass for them all, if a release or
    cancel changed a request (a heartbeat frees nothing). The outcomes in item order.

    A lock not free within its bound ends the batch as it ends one call (503, decision 79), with
    nothing done: the caller sends the batch again (every action is idempotent, R-51)."""
    with transaction.atomic():
        outcomes, freed = act_together(user=user, action=action, items=items)
    fresh = one_pass_after([o.pk for o in outcomes if isinstance(o, RequestRow)]) if freed else {}
    return [fresh.get(o.pk, o) if isinstance(o, RequestRow) else o for o in outcomes]


def act_together(*, user, action: str, items: Sequence[ActionItem]) -> tuple[list[ActionOutcome], bool]:
    """Inside the caller's transaction: the items' requests locked at once, in id order as a pass
    locks them (``request_acts.locked_many``); each item decided in order by its single call's rule
    (``request_acts.change_of``) on the request as the items before it left it; then the rows written,
    their history, and one event per request changed, the outbox last (decision 79's order). The
    outcomes, each request as the batch left it, and whether a release or cancel changed one.
    Nothing can change a locked row meanwhile, so the writes need no condition."""
    locked, now = locked_many(user, [item.request_id for item in items]), timezone.now()
    decided: list[int | ActionRefused] = []
    columns: dict[int, dict] = {}
    history: list[HistoryEntry] = []
    freed: list[UnannouncedChange] = []
    for request_id, attempt in items:
        current = locked.get(request_id)
        try:
            if current is None:
                raise RequestNotFound(f"there is no request {request_id}")
            change = change_of(user=user, action=action, locked=current, attempt=attempt, now=now)
        except ActionRefused as refusal:
            decided.append(refusal)
            continue
        decided.append(request_id)
        if change is None:
            continue
        locked[request_id] = current._replace(request=change.after)
        columns.setdefault(request_id, {}).update(change.columns)
        history += [change.history] if change.history is not None else []
        freed += [change.freed] if change.freed is not None else []
    sql.update_requests(columns)
    sql.insert_changes(history)
    UnannouncedChange.objects.bulk_create(freed)
    rows = RequestRow.objects.select_related("owner").in_bulk(sorted({d for d in decided if isinstance(d, int)}))
    _audit(user, action, [rows[request_id] for request_id in sorted(columns)])
    events.publish_request_rows([rows[request_id] for request_id in sorted(columns)])
    return [rows[d] if isinstance(d, int) else d for d in decided], bool(freed)


def _audit(user, action: str, rows: Sequence[RequestRow]) -> None:
    """The batch's one audit entry, for what it did to other users' requests (decision 156), in
    the batch's own transaction: it lists exactly what commits with it."""
    audit.record_batch(actor=user, action=action, items=[
        audit.BatchItem(row.pk, row.owner.get_username(), row.state) for row in rows if row.owner_id != user.pk])
