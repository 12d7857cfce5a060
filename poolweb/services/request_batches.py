"""Many requests in one call, for a bridge that speaks for many jobs (docs/slurm.md): submit many
(``POST /requests/batch``, decision 132), and heartbeat, release or cancel many
(``POST /requests/actions``, decision 141).

A batch is its items, each done as its single call does it (``requests.submit``,
``requests.request_act``): its own decision in its own transaction, with the lock order and the
bounded waits of one call (decision 79), so an item refused leaves the others as they are and an
event goes out only for what committed. What a batch adds is the pass: one for the lot, asked for
after the last item (``requests.one_pass_after``), not one per item, and one audit entry for
the items done for other users (decision 156), written once they are, listing only what
committed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from django.core.exceptions import PermissionDenied
from django.db import transaction

from poolweb.models import Request as RequestRow
from poolweb.services import audit
from poolweb.services.requests import (
    ActionRefused, Refusal, SubmissionSource, one_pass_after, request_act, submit,
)
from reconcile import State

log = logging.getLogger(__name__)


class BatchItem(NamedTuple):
    """One submission of a batch, as ``request_submit`` takes it."""

    submission: SubmissionSource
    idempotency_key: str | None = None


Outcome = tuple[RequestRow, bool] | Refusal | PermissionDenied  # (the request, whether new), or why not


def request_submit_batch(*, user, items: Sequence[BatchItem]) -> list[Outcome]:
    """Submit each item as ``request_submit`` does, in order; then one pass for them all, if any
    is new and pending. The outcomes in item order."""
    outcomes: list[Outcome] = []
    for item in items:
        try:
            outcomes.append(submit(user=user, submission=item.submission, idempotency_key=item.idempotency_key,
                                   audited=False))
        except (Refusal, PermissionDenied) as refusal:
            outcomes.append(refusal)
    stored = [outcome for outcome in outcomes if isinstance(outcome, tuple)]
    _audit(user, "submit", [row for row, created in stored if created and row.submitted_by is not None])
    if any(created and row.state == State.PENDING.value for row, created in stored):
        fresh = one_pass_after([row.pk for row, _ in stored])
        outcomes = [(fresh.get(o[0].pk, o[0]), o[1]) if isinstance(o, tuple) else o for o in outcomes]
    return outcomes


class ActionItem(NamedTuple):
    """One request of ``request_act_many``, and the attempt the caller runs as (heartbeat and
    release only, decision 9)."""

    request_id: int
    attempt: int | None = None


ActionOutcome = RequestRow | ActionRefused  # the request afterwards, or why nothing was done


def request_act_many(*, user, action: str, items: Sequence[ActionItem]) -> list[ActionOutcome]:
    """``action`` (one of ``requests.ACTIONS``) on each item as its single call does it, in order;
    then one pass for them all, if any release or cancel changed a request (a heartbeat frees
    nothing). The outcomes in item order.

    A lock not free within its bound ends the batch as it ends one call (503, decision 79): the
    items before it are done and their pass is still asked for, so the caller's retry of the whole
    batch (every action is idempotent, R-51) finds nothing left waiting for the periodic pass."""
    outcomes: list[ActionOutcome] = []
    acted: list[RequestRow] = []  # what the audit lists: renewed, released or cancelled
    changed = False
    try:
        for item in items:
            try:
                row, done = request_act(user=user, action=action, request_id=item.request_id, attempt=item.attempt)
            except ActionRefused as refusal:
                outcomes.append(refusal)
                continue
            outcomes.append(row)
            changed |= done
            if done or action == "heartbeat":
                acted.append(row)
    except Exception:
        _audit(user, action, acted, after_error=True)  # what committed; the answer is the error
        if changed:
            one_pass_after([])
        raise
    _audit(user, action, acted)
    fresh = one_pass_after([o.pk for o in outcomes if isinstance(o, RequestRow)]) if changed else {}
    return [fresh.get(o.pk, o) if isinstance(o, RequestRow) else o for o in outcomes]


def _audit(user, action: str, rows: Sequence[RequestRow], *, after_error: bool = False) -> None:
    """The batch's one audit entry, for its items on other users' requests (decision 156): in a
    transaction of its own, after the items' own, so it lists only what committed."""
    items = [audit.BatchItem(row.pk, row.owner.get_username(), row.state) for row in rows if row.owner_id != user.pk]
    if not items:
        return
    try:
        with transaction.atomic():
            audit.record_batch(actor=user, action=action, items=items)
    except Exception:
        if not after_error:
            raise
        log.exception("the audit entry of a batch cut short was not written: %s of %d requests by %s",
                      action, len(items), user.get_username())
