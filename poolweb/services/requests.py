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
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from poolweb import sql
from poolweb.models import Request as RequestRow
from poolweb.selectors.requests import request_by_idempotency_key, submitter_of
from poolweb.selectors.versions import EngineVersion, live_engine_version
from poolweb.services import audit, events
from poolweb.selectors.burns import budget_burns
from poolweb.services.budgets import refusal as budget_refusal
from poolweb.services.request_acts import (  # noqa: F401 (the refusals callers of these calls catch)
    ActionRefused, RequestConflict, RequestNotFound, RequestNotLive, fresh, owner_detail, request_act,
)
from poolweb.services.triggers import reconcile_soon
from poolweb.sql import api_calls
from reconcile import Config, Reason, State, Vector, lifecycle
from reconcile.budgets import Burn
from reconcile.quota import Ineligible, eligibility

log = logging.getLogger(__name__)

MAX_RETRIES = 10


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
        row = fresh(row.pk)  # the pass ran here: it may be granted
    return row, created


def submit(*, user, submission: SubmissionSource,
           idempotency_key: str | None = None) -> tuple[RequestRow, bool]:
    """Store a submission without asking for a pass. In this order, each before the next is read:

    1. a retried ``idempotency_key`` of ``user``, the submitting account, returns the first
       request, whatever the submission says (for whomever it was);
    2. to 5.: ``Intake.row`` (whom it is for, the owner's pending cap, the submission read against
       the live configuration, the owner's group);
    6. it is stored (``stored_or_earlier``).
    """
    if idempotency_key is not None:
        earlier = request_by_idempotency_key(user=user, key=idempotency_key)
        if earlier is not None:
            return earlier, False
    return stored_or_earlier(Intake(user).row(submission, idempotency_key), account=user)


class Intake:
    """Steps 2 to 5 of ``submit`` for the submissions of one account ``user``, each read made once
    however many it checks (a batch, ``request_batches``): the live configuration, each owner named
    with whether ``user`` may act for them, and each owner's pending count and groups, to which the
    pending requests checked here are added, so that a batch meets an owner's cap where its items'
    single calls would."""

    def __init__(self, user) -> None:
        self.user = user
        self._live: EngineVersion | None = None
        self._acting_for: dict[str, api_calls.ActingFor] = {}
        self._standing: dict[int, api_calls.Submitter] = {}
        self._burns: dict[str, Burn | None] = {}

    def row(self, submission: SubmissionSource, idempotency_key: str | None) -> RequestRow:
        """The request to store (``request_row``), unsaved, or why not:

        2. for an owner other than ``user`` (a username): ``PermissionDenied`` unless ``user`` was
           granted ``poolweb.submit_for_others``, ``OwnerUnknown`` when no active user has the name
           (one statement reads both, ``api_calls.acting_for``); from here on the owner is the one
           checked, and the one who owns the request;
        3. ``TooManyPending`` when the owner has ``POOLWEB_MAX_PENDING_PER_USER`` pending requests;
        4. the submission is read against the live configuration;
        5. ``PermissionDenied`` when the owner is neither staff nor in the policy's group.
        """
        owner = submission.owner_name()
        on_behalf = owner is not None and owner != self.user.get_username()
        holder = self._owner(owner) if on_behalf else self.user
        standing = self._standing.get(holder.pk) or submitter_of(user=holder)
        cap = settings.POOLWEB["MAX_PENDING_PER_USER"]
        if standing.pending >= cap:
            raise TooManyPending(standing.pending, cap, holder.get_username() if on_behalf else None)
        self._live = self._live or live_engine_version()
        config = self._live.config
        read = submission.read(config)
        if not may_submit(holder, config, read.policy, standing.groups):
            who, are = (f"{holder.get_username()} may", "they are") if on_behalf else ("you may", "you are")
            raise PermissionDenied(f"{who} not submit to policy {read.policy}: {are} not in its group "
                                   f"{config.policy[read.policy].group or '(none)'}")
        row = request_row(user=holder, submission=read, live=self._live, idempotency_key=idempotency_key,
                          submitted_by=self.user if on_behalf else None, burn=self._burn(read.policy))
        pending = row.state == State.PENDING.value
        self._standing[holder.pk] = standing._replace(pending=standing.pending + pending)
        return row

    def _burn(self, policy: str) -> Burn | None:
        """The policy's budget burn (R-71), read once per policy for a whole batch."""
        if policy not in self._burns:
            self._burns.update(budget_burns(self._live.config, timezone.now(), {policy}) or {policy: None})
        return self._burns[policy]

    def _owner(self, username: str):
        if username not in self._acting_for:
            self._acting_for[username] = api_calls.acting_for(self.user.pk, username)
        return owner_of(self._acting_for[username], username)


def owner_of(found: api_calls.ActingFor, username: str):
    """The user named ``username`` as ``api_calls.acting_for`` found them, if the caller may submit
    for others (decision 131) and the user is active."""
    if not found.permitted:
        raise PermissionDenied(f"you may not submit for another user: that needs the permission "
                               f"poolweb.{api_calls.SUBMIT_FOR_OTHERS[1]}, granted explicitly")
    if found.owner is None or not found.owner.is_active:
        raise OwnerUnknown(f"there is no active user named {username[:150]!r}")
    return found.owner


def request_create(*, user, submission: Submission, live: EngineVersion, idempotency_key: str | None = None,
                   submitted_by=None) -> tuple[RequestRow, bool]:
    """Store a submission for its owner ``user`` (``request_row``); the pass judges it later."""
    burn = budget_burns(live.config, timezone.now(), {submission.policy}).get(submission.policy)
    return stored_or_earlier(request_row(user=user, submission=submission, live=live,
                                         idempotency_key=idempotency_key, submitted_by=submitted_by, burn=burn),
                             account=submitted_by or user)


def request_row(*, user, submission: Submission, live: EngineVersion, idempotency_key: str | None = None,
                submitted_by=None, burn: Burn | None = None) -> RequestRow:
    """A submission for its owner ``user`` as the row to store: ``rejected`` with its reason when
    it can never run (R-14) or its policy's budget ``burn`` is spent (R-71), else ``pending``.
    ``submitted_by``, the account that submitted it for ``user``, is named in the request and in
    its first history entry (the audit, decision 131)."""
    s, now = submission, timezone.now()
    _, failure = eligibility(live.terms, s.policy, s.profile, s.resources, s.preemptible)
    spent = budget_refusal(burn, s.preemptible) if failure is None else None
    if spent is not None:
        failure = Ineligible(Reason.BUDGET_SPENT, spent)
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
    return RequestRow(**fields)


def stored_or_earlier(row: RequestRow, *, account) -> tuple[RequestRow, bool]:
    """Store ``row``, submitted by ``account`` (its history, its event and, for another owner, its
    audit entry with it, ``_store``): it, and True. Two racing submissions with one idempotency key
    meet at the unique constraint; the loser's transaction (or savepoint) rolls back and it returns
    the winner's request, and False."""
    try:
        return _store(row, account), True
    except IntegrityError:
        key = row.idempotency_key
        earlier = request_by_idempotency_key(user=account, key=key) if key is not None else None
        if earlier is None:
            raise
        return earlier, False


def _store(row: RequestRow, account) -> RequestRow:
    """The new row, its first history entry, its event and, when ``account`` submitted it for
    another owner, the audit entry (decision 154), in one transaction; inside a caller's, a
    savepoint, so the idempotency key's constraint leaves that transaction usable. On PostgreSQL
    one statement does the first three (``api_calls.insert_submission``: the figure of decision
    110, alone in autocommit unless audited); elsewhere the ORM does, as below."""
    audited = row.submitted_by is not None
    with transaction.atomic() if audited or not api_calls.submission_in_one_statement() else nullcontext():
        if api_calls.submission_in_one_statement():
            api_calls.insert_submission(row, events.encoded_request_row(row))
        else:
            row.save(force_insert=True)
            sql.insert_changes([(row.pk, row.submitted_at, row.state, row.reason, row.message, row.attempt, None)])
            events.publish_request_rows([row])
        if audited:
            audit.record(actor=account, action="request.submit", target=audit.request_target(row.pk),
                         after=row.state, request_ids=[row.pk], detail=owner_detail(row, policy=row.policy,
                                                                                    profile=row.profile))
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
    return request_act(user=user, action="heartbeat", request_id=request_id, attempt=attempt)[0]


def request_release(*, user, request_id: int, attempt: int | None = None) -> RequestRow:
    """R-51: done (or acknowledging preemption). Idempotent: a finished or queued request comes back
    unchanged, and so does one whose ``attempt`` (when given) is over: the holder of attempt 1 may
    release after the grace already queued attempt 2, and must not release attempt 2."""
    return _act(user, "release", request_id, attempt)


def request_cancel(*, user, request_id: int) -> RequestRow:
    """R-51: withdraw. Idempotent: a finished request comes back unchanged."""
    return _act(user, "cancel", request_id)


def one_pass_after(ids: Sequence[int]) -> dict[int, RequestRow]:
    """Ask for the one pass a batch's changes need; when it ran here, the batch's requests
    ``ids`` as it left them, in one read; else nothing (the answers stand as written)."""
    if not _reconcile():
        return {}
    return RequestRow.objects.select_related("owner").in_bulk(list(ids))


def _act(user, action: str, request_id: int, attempt: int | None = None) -> RequestRow:
    row, changed = request_act(user=user, action=action, request_id=request_id, attempt=attempt)
    if changed and _reconcile():
        row = fresh(request_id)  # the pass ran here and may have moved it on
    return row


def _reconcile() -> bool:
    """Ask for a pass; True if it ran here (inline). The change is committed already, so a failing
    pass must not fail the call."""
    try:
        return reconcile_soon("request")
    except Exception:  # the next pass re-plans from the database; nothing is lost
        log.exception("reconcile pass after a request change failed")
        return True  # it ran here, half-way: read the request again
