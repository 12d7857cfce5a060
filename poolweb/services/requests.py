"""Requests: submit (one, for another user), heartbeat, release and cancel (docs/api.md §3;
docs/scheduling.md R-14, R-50, R-51); ``request_batches`` does many of either in one call.

Each write is one transaction; a reconcile pass is asked for (``reconcile_soon``) only once that
transaction is done, so the pass sees the committed row — which is why ``request_submit``,
``request_release`` and ``request_cancel`` wrap their transaction instead of being one. What a
release or cancel does is ``reconcile.lifecycle``'s decision, carried out as every decision is
(``services.changes``), and written conditionally on the state that was read.

Choices where api.md is silent:
- a retried ``Idempotency-Key`` returns the first request whatever the new body says;
- a heartbeat after the lease ran out is refused, even before a pass has expired the request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Request as RequestRow, UnannouncedChange
from poolweb.selectors.requests import MAX_ID, request_by_idempotency_key, submitter_of
from poolweb.selectors.snapshot import SNAPSHOT_FIELDS, to_engine
from poolweb.selectors.versions import EngineVersion, live_engine_version
from poolweb.services import events
from poolweb.services.changes import decision_columns, history_entry
from poolweb.services.triggers import reconcile_soon
from poolweb.sql import api_calls
from reconcile import Config, Decision, Reason, Request, State, Vector, lifecycle
from reconcile.quota import eligibility

log = logging.getLogger(__name__)

MAX_RETRIES = 10


class ActionRefused(Exception):
    """Why a heartbeat, release or cancel did nothing; a batch records it for its item and goes on
    (``request_batches.request_act_many``)."""


class RequestNotFound(ActionRefused):
    """No such request, or one the user may not see."""


class RequestNotLive(ActionRefused):
    """A heartbeat for a request that holds no capacity."""


class RequestConflict(ActionRefused):
    """The request changed between reading and writing it; the caller may retry."""


class Refusal(Exception):
    """A submission refused for a reason of its own, which its caller answers; a batch records it
    for its item and goes on (``request_batches.request_submit_batch``). ``PermissionDenied`` is
    one too."""


class TooManyPending(Refusal):
    """The owner has as many pending requests as one may have (``POOLWEB_MAX_PENDING_PER_USER``).
    Two submissions at once may both pass at the cap's edge: the cap bounds a runaway script, it is
    no quota (quotas are the engine's)."""

    def __init__(self, pending: int, cap: int, owner: str | None = None) -> None:
        who = "you have" if owner is None else f"{owner} has"
        super().__init__(f"{who} {pending} pending requests, and {cap} is the most one user may have "
                         f"(POOLWEB_MAX_PENDING_PER_USER): cancel some, or wait for them to start")


class OwnerUnknown(Refusal):
    """``owner`` names no active user."""


@dataclass(frozen=True)
class Submission:
    """A validated submission: everything ``request_create`` needs."""

    policy: str
    profile: str
    resources: Vector  # step_run included
    preemptible: bool = True
    max_retries: int = 0
    lease_seconds: int = lifecycle.LEASE_SECONDS_DEFAULT
    max_runtime_seconds: int | None = None
    name: str = ""
    labels: dict[str, str] | None = None
    owner: str | None = None  # the username it is submitted for; None: the submitter's own

    def owner_name(self) -> str | None:
        return self.owner

    def read(self, config: Config) -> Submission:
        """Read already: it is what it says (``SubmissionSource``)."""
        return self


class SubmissionSource(Protocol):
    """What a submission says, read against the live configuration once ``request_submit`` has
    it: a ``Submission`` read already, or the API's body (``api.submission.SubmissionBody``), whose
    reading raises its own error (a ``Refusal``) listing every problem. ``owner_name`` is read
    first, alone: whom it is for decides who is checked."""

    def owner_name(self) -> str | None: ...

    def read(self, config: Config) -> Submission: ...


# --- submit --------------------------------------------------------------------------------------

def request_submit(*, user, submission: SubmissionSource,
                   idempotency_key: str | None = None) -> tuple[RequestRow, bool]:
    """Submit a request; returns it (possibly allocated already, when the pass ran inline) and
    whether it is new (``submit`` says the order of its checks)."""
    row, created = submit(user=user, submission=submission, idempotency_key=idempotency_key)
    if created and row.state == State.PENDING.value and _reconcile():
        row = _fresh(row.pk)  # the pass ran here: it may be granted
    return row, created


def submit(*, user, submission: SubmissionSource,
           idempotency_key: str | None = None) -> tuple[RequestRow, bool]:
    """Store a submission without asking for a pass. In this order, each before the next is read:

    1. a retried ``idempotency_key`` of ``user``, the submitting account, returns the first
       request, whatever the submission says (for whomever it was);
    2. for an owner other than ``user`` (a username): ``PermissionDenied`` unless ``user`` was
       granted ``poolweb.submit_for_others``, ``OwnerUnknown`` when no active user has the name
       (one statement reads both, ``api_calls.acting_for``); from here on the owner is the one
       checked, and the one who owns the request;
    3. ``TooManyPending`` when the owner has ``POOLWEB_MAX_PENDING_PER_USER`` pending requests;
    4. the submission is read against the live configuration;
    5. ``PermissionDenied`` when the owner is neither staff nor in the policy's group;
    6. it is stored (``request_create``).
    """
    if idempotency_key is not None:
        earlier = request_by_idempotency_key(user=user, key=idempotency_key)
        if earlier is not None:
            return earlier, False
    owner = submission.owner_name()
    on_behalf = owner is not None and owner != user.get_username()
    holder = owner_for(caller=user, username=owner) if on_behalf else user
    standing = submitter_of(user=holder)
    cap = settings.POOLWEB["MAX_PENDING_PER_USER"]
    if standing.pending >= cap:
        raise TooManyPending(standing.pending, cap, holder.get_username() if on_behalf else None)
    live = live_engine_version()
    config = live.config
    read = submission.read(config)
    if not may_submit(holder, config, read.policy, standing.groups):
        who, are = (f"{holder.get_username()} may", "they are") if on_behalf else ("you may", "you are")
        raise PermissionDenied(f"{who} not submit to policy {read.policy}: {are} not in its group "
                               f"{config.policy[read.policy].group or '(none)'}")
    return request_create(user=holder, submission=read, live=live, idempotency_key=idempotency_key,
                          submitted_by=user if on_behalf else None)


def owner_for(*, caller, username: str):
    """The user ``caller`` submits for, if ``caller`` may submit for others (decision 131)."""
    found = api_calls.acting_for(caller.pk, username)
    if not found.permitted:
        raise PermissionDenied(f"you may not submit for another user: that needs the permission "
                               f"poolweb.{api_calls.SUBMIT_FOR_OTHERS[1]}, granted explicitly")
    if found.owner is None or not found.owner.is_active:
        raise OwnerUnknown(f"there is no active user named {username[:150]!r}")
    return found.owner


def request_create(*, user, submission: Submission, live: EngineVersion, idempotency_key: str | None = None,
                   submitted_by=None) -> tuple[RequestRow, bool]:
    """Store a submission for its owner ``user``: ``rejected`` with its reason when it can never
    run (R-14), else ``pending``. One transaction: the row, its history and its event; the pass
    judges it later. ``submitted_by``, the account that submitted it for ``user``, is named in the
    request and in its first history entry (the audit, decision 131).

    Two racing submissions with one ``idempotency_key`` meet at the unique constraint; the loser's
    transaction rolls back and it returns the winner's request.
    """
    s, now = submission, timezone.now()
    _, failure = eligibility(live.terms, s.policy, s.profile, s.resources, s.preemptible)
    fields = dict(owner=user, policy=s.policy, profile=s.profile, resources=dict(s.resources),
                  preemptible=s.preemptible, max_retries=s.max_retries, lease_seconds=s.lease_seconds,
                  max_runtime_seconds=s.max_runtime_seconds, name=s.name,
                  labels=s.labels or {}, submitted_at=now, idempotency_key=idempotency_key,
                  submitted_by=None if submitted_by is None else submitted_by.get_username())
    if failure is None:
        fields.update(state=State.PENDING.value, reason=Reason.SUBMITTED.value, message="waiting for the next pass")
    else:
        fields.update(state=State.REJECTED.value, reason=failure.reason.value, message=failure.message, finished_at=now)
    if submitted_by is not None:
        fields["message"] = f"submitted by {fields['submitted_by']} for {user.get_username()}: {fields['message']}"
    try:
        row = _store(RequestRow(**fields))
    except IntegrityError:
        account = submitted_by or user
        earlier = request_by_idempotency_key(user=account, key=idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return earlier, False
    return row, True


def _store(row: RequestRow) -> RequestRow:
    """The new row, its first history entry and its event, in one transaction; inside a caller's,
    a savepoint, so the idempotency key's constraint leaves that transaction usable. On
    PostgreSQL one statement does the three (``api_calls.insert_submission``: the figure of
    decision 110); elsewhere the ORM does, as below."""
    if api_calls.submission_in_one_statement():
        api_calls.insert_submission(row, events.encoded_request_row(row))
        return row
    with transaction.atomic():
        row.save(force_insert=True)
        sql.insert_changes([(row.pk, row.submitted_at, row.state, row.reason, row.message, row.attempt, None)])
        events.publish_request_rows([row])
    return row


def may_submit(user, config: Config, policy: str, groups: frozenset[str]) -> bool:
    """Admins may submit to any queue; others to the queues of a policy whose group (one of
    ``groups``, the names of the user's) they are in."""
    if user.is_staff:
        return True
    group = config.policy[policy].group
    return bool(group) and group in groups


# --- heartbeat, release, cancel --------------------------------------------------------------------

def request_heartbeat(*, user, request_id: int, attempt: int | None = None) -> RequestRow:
    """R-50: renew the lease of a live request for another ``lease_seconds``; ``RequestNotLive``
    otherwise, and when ``attempt`` is given and is not the request's current one. No pass: a
    renewal frees and takes nothing."""
    return _renew(user=user, request_id=request_id, attempt=attempt)


def request_release(*, user, request_id: int, attempt: int | None = None) -> RequestRow:
    """R-51: done (or acknowledging preemption). Idempotent: a finished or queued request comes back
    unchanged, and so does one whose ``attempt`` (when given) is over: the holder of attempt 1 may
    release after the grace already queued attempt 2, and must not release attempt 2."""
    return _act(user, request_id, lifecycle.release, attempt)


def request_cancel(*, user, request_id: int) -> RequestRow:
    """R-51: withdraw. Idempotent: a finished request comes back unchanged."""
    return _act(user, request_id, lifecycle.cancel)


Action = Callable[[Request, str], Decision | None]
ACTIONS = ("heartbeat", "release", "cancel")


def request_act(*, user, action: str, request_id: int, attempt: int | None = None) -> tuple[RequestRow, bool]:
    """One of ``ACTIONS`` on one request, in its own transaction, as ``request_heartbeat``,
    ``request_release`` and ``request_cancel`` do it, but without the pass a change asks for: the
    request afterwards and whether it changed, for a caller that asks for one pass after many
    (``request_batches.request_act_many``). Cancel takes no ``attempt``."""
    if action == "heartbeat":
        return _renew(user=user, request_id=request_id, attempt=attempt), False
    decide = {"release": lifecycle.release, "cancel": lifecycle.cancel}[action]
    return _carry_out(user=user, request_id=request_id, action=decide, attempt=attempt)


def one_pass_after(ids: Sequence[int]) -> dict[int, RequestRow]:
    """Ask for the one pass a batch's changes need; when it ran here, the batch's requests
    ``ids`` as it left them, in one read; else nothing (the answers stand as written)."""
    if not _reconcile():
        return {}
    return RequestRow.objects.select_related("owner").in_bulk(list(ids))


def _act(user, request_id: int, action: Action, attempt: int | None = None) -> RequestRow:
    row, changed = _carry_out(user=user, request_id=request_id, action=action, attempt=attempt)
    if changed and _reconcile():
        row = _fresh(request_id)  # the pass ran here and may have moved it on
    return row


@transaction.atomic
def _carry_out(*, user, request_id: int, action: Action, attempt: int | None) -> tuple[RequestRow, bool]:
    """Decide ``action`` on a request ``user`` may see and write it: the request as it is now,
    and whether anything changed.

    The write is conditional on the state read: a pass that moved the request meanwhile makes it
    a ``RequestConflict`` instead of a lost update. The pool's and the policy's new numbers are
    left to the pass this change asks for (``UnannouncedChange``): computing them here read every live
    and queued request of the pool and the policy, on every release.
    """
    locked = _locked(user, request_id)
    before = locked.request
    if attempt is not None and attempt != before.attempt:
        return _fresh(request_id), False
    decision = action(before, user.get_username())
    if decision is None:
        return _fresh(request_id), False
    now = timezone.now()
    after, columns = decision_columns(before, decision, now)
    if not api_calls.update_request(request_id, before.state.value, columns):
        raise RequestConflict(f"request {request_id} changed meanwhile; try again")
    sql.insert_changes([history_entry(after, decision, now)])
    # Its capacity or its place is free now: the pass announces the pool's and the policy's numbers.
    UnannouncedChange.objects.create(pool=before.pool or locked.queue_pool or "", policy=before.policy)
    row = _fresh(request_id)
    events.publish_request_rows([row])
    return row, True


@transaction.atomic
def _renew(*, user, request_id: int, attempt: int | None) -> RequestRow:
    before = _locked(user, request_id).request
    now = timezone.now()
    if attempt is not None and attempt != before.attempt:
        raise RequestNotLive(f"attempt {attempt} is not the current attempt of request {request_id}: it is at "
                             f"attempt {before.attempt}, {before.state.value}")
    if lifecycle.lease_expired(before, now):
        raise RequestNotLive(f"the lease of request {request_id} ran out at {before.lease_expires_at.isoformat()}")
    try:
        after = lifecycle.heartbeat(before, now)
    except lifecycle.NotLive:
        raise RequestNotLive(f"request {request_id} is {before.state.value}, not live: "
                             "there is no lease to renew") from None
    if not api_calls.update_request(request_id, before.state.value, {"lease_expires_at": after.lease_expires_at}):
        raise RequestConflict(f"request {request_id} changed meanwhile; try again")
    row = _fresh(request_id)
    events.publish_request_rows([row])  # its lease_expires_at is news to whoever follows it
    return row


class Locked(NamedTuple):
    """A request read to be changed, locked to the end of the transaction."""

    request: Request  # as the engine sees it
    queue_pool: str | None  # the pool it queued for, while pending


LOCKED_FIELDS = (*SNAPSHOT_FIELDS, "queue_pool", "owner")


def _locked(user, request_id: int) -> Locked:
    """The request locked for this transaction, if ``user`` may see it (by the pass's plain
    statement: through the ORM this read cost a release more than its writes, decision 71)."""
    rows = sql.select_requests(LOCKED_FIELDS, "id", [request_id], lock=True) if 1 <= request_id <= MAX_ID else []
    row = dict(zip(LOCKED_FIELDS, rows[0])) if rows else None
    if row is None or not (user.is_staff or row["owner"] == user.pk):
        raise RequestNotFound(f"there is no request {request_id}")
    return Locked(to_engine([row[name] for name in SNAPSHOT_FIELDS], {}), row["queue_pool"])


def _fresh(request_id: int) -> RequestRow:
    """The request as it is now (one its caller found ``user`` may see)."""
    row = api_calls.request_with_owner(request_id)
    if row is None:  # deleted meanwhile (its owner was)
        raise RequestNotFound(f"there is no request {request_id}")
    return row


def _reconcile() -> bool:
    """Ask for a pass; True if it ran here (inline). The change is committed already, so a failing
    pass must not fail the call."""
    try:
        return reconcile_soon("request")
    except Exception:  # the next pass re-plans from the database; nothing is lost
        log.exception("reconcile pass after a request change failed")
        return True  # it ran here, half-way: read the request again
