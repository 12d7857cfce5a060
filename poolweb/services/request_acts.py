"""Acting on requests already stored: the heartbeat, release and cancel of R-50 and R-51, decided
on the request locked for the caller's transaction (``change_of``) and written with their history,
their event and, for another user's request, their audit entry (``request_act``). One call does
one (``requests``); a batch decides many on the rows it locked at once (``request_batches``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Request as RequestRow, UnannouncedChange
from poolweb.selectors.requests import MAX_ID
from poolweb.selectors.snapshot import SNAPSHOT_FIELDS, to_engine
from poolweb.services import audit, events
from poolweb.services.changes import HistoryEntry, decision_columns, history_entry
from poolweb.services.payloads import api_time
from poolweb.sql import api_calls
from reconcile import Decision, Request, lifecycle


class ActionRefused(Exception):
    """Why a heartbeat, release or cancel did nothing; a batch records it for its item and goes on
    (``request_batches.request_act_many``)."""


class RequestNotFound(ActionRefused):
    """No such request, or one the user may not see."""


class RequestNotLive(ActionRefused):
    """A heartbeat for a request that holds no capacity."""


class RequestConflict(ActionRefused):
    """The request changed between reading and writing it; the caller may retry."""


ACTIONS = ("heartbeat", "release", "cancel")
_DECIDE: dict[str, Callable[[Request, str], Decision | None]] = {"release": lifecycle.release,
                                                                 "cancel": lifecycle.cancel}


class Change(NamedTuple):
    """What an action does to a request: the request after it, and what to write."""

    after: Request
    columns: dict  # column → value, of its row
    history: HistoryEntry | None  # the entry of its history, for a change of state
    freed: UnannouncedChange | None  # a release or cancel: the numbers the next pass announces


def change_of(*, user, action: str, locked: Locked, attempt: int | None, now) -> Change | None:
    """What ``action`` (one of ``ACTIONS``) by ``user`` does to the locked request, or None when it
    does nothing; a heartbeat that cannot renew is ``RequestNotLive``. Cancel takes no ``attempt``.

    The pool's and the policy's new numbers are left to the pass a release or cancel asks for
    (``UnannouncedChange``): computing them here read every live and queued request of the pool
    and the policy, on every release."""
    before = locked.request
    if action == "heartbeat":
        after = _renewed(before, attempt, now)
        return Change(after, {"lease_expires_at": after.lease_expires_at}, None, None)
    if attempt is not None and attempt != before.attempt:
        return None
    decision = _DECIDE[action](before, user.get_username())
    if decision is None:
        return None
    after, columns = decision_columns(before, decision, now)
    # Its capacity or its place is free now: the pass announces the pool's and the policy's numbers.
    freed = UnannouncedChange(pool=before.pool or locked.queue_pool or "", policy=before.policy)
    return Change(after, columns, history_entry(after, decision, now), freed)


def _renewed(before: Request, attempt: int | None, now) -> Request:
    request_id = before.id
    if attempt is not None and attempt != before.attempt:
        raise RequestNotLive(f"attempt {attempt} is not the current attempt of request {request_id}: it is at "
                             f"attempt {before.attempt}, {before.state.value}")
    if lifecycle.lease_expired(before, now):
        raise RequestNotLive(f"the lease of request {request_id} ran out at {before.lease_expires_at.isoformat()}")
    try:
        return lifecycle.heartbeat(before, now)
    except lifecycle.NotLive:
        raise RequestNotLive(f"request {request_id} is {before.state.value}, not live: "
                             "there is no lease to renew") from None


@transaction.atomic
def request_act(*, user, action: str, request_id: int, attempt: int | None = None) -> tuple[RequestRow, bool]:
    """One of ``ACTIONS`` on one request ``user`` may see, in its own transaction, without the pass
    a release or cancel asks for: the request afterwards, and whether it asks for one.

    The write is conditional on the state read: a pass that moved the request meanwhile makes it
    a ``RequestConflict`` instead of a lost update. A heartbeat's event tells whoever follows the
    request its new ``lease_expires_at``."""
    locked = locked_one(user, request_id)
    change = change_of(user=user, action=action, locked=locked, attempt=attempt, now=timezone.now())
    if change is None:
        return fresh(request_id), False
    if not api_calls.update_request(request_id, locked.request.state.value, change.columns):
        raise RequestConflict(f"request {request_id} changed meanwhile; try again")
    if change.history is not None:
        sql.insert_changes([change.history])
    if change.freed is not None:
        change.freed.save()
    row = fresh(request_id)
    events.publish_request_rows([row])
    if row.owner_id != user.pk:  # an admin's (or a service account's) act for another user, decision 154
        before, after = _audited_change(action, locked.request, row)
        audit.record(actor=user, action=f"request.{action}", target=audit.request_target(request_id), before=before,
                     after=after, request_ids=[request_id], detail=owner_detail(row, attempt=locked.request.attempt))
    return row, change.freed is not None


def _audited_change(action: str, before: Request, row: RequestRow) -> tuple[str, str]:
    """Old → new of an audited act: the lease's end for a heartbeat, else the state."""
    if action == "heartbeat":
        return api_time(before.lease_expires_at) or "", api_time(row.lease_expires_at)
    return before.state.value, row.state


def owner_detail(row: RequestRow, **more) -> dict:
    """What an audit entry of an act on ``row`` for its owner keeps of it."""
    return {"owner": row.owner.get_username(), "owner_id": row.owner_id, **more}


class Locked(NamedTuple):
    """A request read to be changed, locked to the end of the transaction."""

    request: Request  # as the engine sees it
    queue_pool: str | None  # the pool it queued for, while pending


LOCKED_FIELDS = (*SNAPSHOT_FIELDS, "queue_pool", "owner")


def locked_one(user, request_id: int) -> Locked:
    """The request locked for this transaction, if ``user`` may see it."""
    found = locked_many(user, [request_id]).get(request_id)
    if found is None:
        raise RequestNotFound(f"there is no request {request_id}")
    return found


def locked_many(user, request_ids: Sequence[int]) -> dict[int, Locked]:
    """The requests of ``request_ids`` that ``user`` may see, by id, locked for this transaction in
    id order, the order a pass locks its rows in (``planned_rows``), so neither waits for the other
    in a cycle. One plain statement, the pass's: through the ORM this read cost a release more than
    its writes (decision 71)."""
    ids = sorted({request_id for request_id in request_ids if 1 <= request_id <= MAX_ID})
    found: dict[int, Locked] = {}
    for values in sql.select_requests(LOCKED_FIELDS, "id", ids, lock=True) if ids else ():
        row = dict(zip(LOCKED_FIELDS, values))
        if user.is_staff or row["owner"] == user.pk:
            found[row["id"]] = Locked(to_engine([row[name] for name in SNAPSHOT_FIELDS], {}), row["queue_pool"])
    return found


def fresh(request_id: int) -> RequestRow:
    """The request as it is now (one its caller found ``user`` may see)."""
    row = api_calls.request_with_owner(request_id)
    if row is None:  # deleted meanwhile (its owner was)
        raise RequestNotFound(f"there is no request {request_id}")
    return row
