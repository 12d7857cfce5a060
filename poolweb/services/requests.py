"""Requests: submit, heartbeat, release and cancel (api.md §2; spec R-14, R-50, R-51).

Each write is one ``@transaction.atomic`` function; a reconcile pass is asked for
(``reconcile_soon``) only once that transaction is done, so the pass sees the committed row —
which is why the public ``request_submit``, ``request_release`` and ``request_cancel`` wrap
their transaction instead of being one. State changes go through ``reconcile.lifecycle`` and are
written conditionally on the state that was read.

Choices where api.md is silent (also in the docstrings below):
- every field is checked and all errors are reported together; ``null`` is no field's value;
- ``resources`` may repeat ``step_run: 1`` (as a returned request object shows it), no other value;
- a dynamic profile's allotment gives the amount of every key the request leaves out; a key
  given as 0 (``gpu_count: 0``) removes it;
- a retried ``Idempotency-Key`` returns the first request whatever the new body says;
- a heartbeat after the lease ran out is refused (409) even before a pass has expired the request.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from poolweb.models import Request as RequestRow
from poolweb.selectors.requests import MAX_ID, request_by_idempotency_key, request_get
from poolweb.services import events
from poolweb.services.state import SNAPSHOT_FIELDS, live_config, to_engine
from poolweb.services.triggers import reconcile_soon
from reconcile import Config, Profile, Reason, State, Vector, lifecycle
from reconcile.document_checks import json_type, show
from reconcile.quota import TermsCache, eligibility
from reconcile.resource_settings import ResourceError, child, read_resources, resources_from_settings

log = logging.getLogger(__name__)

FIELDS = ("policy", "profile", "resources", "resource_settings", "preemptible", "max_retries", "lease_seconds",
          "name", "labels")
MAX_RETRIES = 10
MAX_NAME, MAX_LABELS, MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_IDEMPOTENCY_KEY = 200, 50, 63, 200, 200
STEP_RUN = {"step_run": 1000}  # the server adds step_run: 1 to every request (§1)
_BAD_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # control characters (NUL breaks PostgreSQL)


class RequestInputError(Exception):
    """The input cannot be accepted; ``errors`` lists each problem as {path, code, message}."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__(errors[0]["message"] if errors else "invalid input")
        self.errors = errors


class RequestNotFound(Exception):
    """No such request, or one the user may not see."""


class RequestNotLive(Exception):
    """A heartbeat for a request that holds no capacity (409)."""


class RequestConflict(Exception):
    """The request changed between reading and writing it (409; the client may retry)."""


@dataclass(frozen=True)
class Submission:
    """A validated submission: everything ``request_create`` needs."""

    policy: str
    profile: str
    resources: Vector  # step_run included
    preemptible: bool = True
    max_retries: int = 0
    lease_seconds: int = lifecycle.LEASE_SECONDS_DEFAULT
    name: str = ""
    labels: dict[str, str] | None = None


# --- submit --------------------------------------------------------------------------------------

def request_submit(*, user, data: Any, idempotency_key: str | None = None) -> tuple[RequestRow, bool]:
    """Submit a request; returns it (fresh, possibly allocated already) and whether it is new.

    400 (``RequestInputError``) for malformed input or an unknown queue, 403 (``PermissionDenied``)
    when ``user`` is neither staff nor in the policy's group. A retried ``idempotency_key`` returns
    the first request with ``created`` False, before anything else is checked.
    """
    if idempotency_key is not None:
        _check_idempotency_key(idempotency_key)
        earlier = request_by_idempotency_key(user=user, key=idempotency_key)
        if earlier is not None:
            return earlier, False
    config = live_config()
    submission = read_submission(data, config)
    if not may_submit(user, config, submission.policy):
        raise PermissionDenied(f"you may not submit to policy {submission.policy}: you are not in its group "
                               f"{config.policy[submission.policy].group or '(none)'}")
    row, created = request_create(user=user, submission=submission, config=config, idempotency_key=idempotency_key)
    if created and row.state == State.PENDING.value:
        _reconcile()
    return RequestRow.objects.select_related("owner").get(pk=row.pk), created


@transaction.atomic
def request_create(*, user, submission: Submission, config: Config,
                   idempotency_key: str | None = None) -> tuple[RequestRow, bool]:
    """Store a submission: ``rejected`` with its reason when it can never run (R-14), else ``pending``.

    Two racing submissions with one ``idempotency_key`` meet at the unique constraint; the loser
    returns the winner's request.
    """
    s, now = submission, timezone.now()
    _, failure = eligibility(TermsCache(config), s.policy, s.profile, s.resources, s.preemptible)
    fields = dict(owner=user, policy=s.policy, profile=s.profile, resources=dict(s.resources),
                  preemptible=s.preemptible, max_retries=s.max_retries, lease_seconds=s.lease_seconds, name=s.name,
                  labels=s.labels or {}, submitted_at=now, idempotency_key=idempotency_key)
    if failure is None:
        fields.update(state=State.PENDING.value, reason=Reason.SUBMITTED.value, message="waiting for the next pass")
    else:
        fields.update(state=State.REJECTED.value, reason=failure.reason.value, message=failure.message, finished_at=now)
    try:
        with transaction.atomic():
            row = RequestRow.objects.create(**fields)
            events.publish_requests([row.pk])
            return row, True
    except IntegrityError:
        earlier = request_by_idempotency_key(user=user, key=idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return earlier, False


def may_submit(user, config: Config, policy: str) -> bool:
    """Admins may submit to any queue; others to the queues of a policy whose group they are in."""
    if user.is_staff:
        return True
    group = config.policy[policy].group
    return bool(group) and user.groups.filter(name=group).exists()


def _check_idempotency_key(key: str) -> None:
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise RequestInputError([_issue("Idempotency-Key", "invalid", f"the Idempotency-Key header must be 1 to "
                                        f"{MAX_IDEMPOTENCY_KEY} printable characters")])


# --- reading the body ----------------------------------------------------------------------------

def read_submission(data: Any, config: Config) -> Submission:
    """Validate a submission body against the live configuration; every error at once."""
    if not isinstance(data, Mapping):
        raise RequestInputError([_issue("", "invalid_type", "the body must be a JSON object")])
    errors: list[dict[str, str]] = [
        _issue(child("", field), "unknown_field", f"{show(field)} is not a field of a request; "
                                                  f"the fields are {', '.join(FIELDS)}")
        for field in data if field not in FIELDS
    ]
    policy, profile = _queue(data, config, errors)
    resources = _resources(data, profile, errors)
    values = dict(
        preemptible=_boolean(data, "preemptible", True, errors),
        max_retries=_integer(data, "max_retries", 0, (0, MAX_RETRIES), errors),
        lease_seconds=_integer(data, "lease_seconds", lifecycle.LEASE_SECONDS_DEFAULT,
                               (lifecycle.LEASE_SECONDS_MIN, lifecycle.LEASE_SECONDS_MAX), errors),
        name=_text(data.get("name", ""), "name", MAX_NAME, errors) or "",
        labels=_labels(data.get("labels", {}), errors),
    )
    if errors or policy is None or profile is None or resources is None:
        raise RequestInputError(errors)
    return Submission(policy=policy, profile=profile.name, resources=resources, **values)


def _queue(data: Mapping, config: Config, errors: list) -> tuple[str | None, Profile | None]:
    """The policy name and the profile, when they name a queue of the live configuration."""
    policy, profile = (_reference(data, field, errors) for field in ("policy", "profile"))
    if not config.policies:
        if policy is not None:
            errors.append(_issue("policy", "unknown_policy", "no configuration is provisioned: there are no queues"))
        return None, None
    if policy is not None and policy not in config.policy:
        errors.append(_issue("policy", "unknown_policy", f"there is no policy named {show(policy)}"))
        policy = None
    if profile is not None and profile not in config.profile:
        errors.append(_issue("profile", "unknown_profile", f"there is no profile named {show(profile)}"))
        profile = None
    if policy is not None and profile is not None and not config.queue_exists(policy, profile):
        errors.append(_issue("policy", "unknown_queue", f"policy {policy} may not use profile {profile}: "
                                                        f"there is no queue {policy}/{profile}"))
        return None, None
    return policy, (config.profile[profile] if profile is not None else None)


def _reference(data: Mapping, field: str, errors: list) -> str | None:
    if field not in data:
        errors.append(_issue(field, "required", f"{field} is required"))
        return None
    if not isinstance(data[field], str):
        errors.append(_issue(field, "invalid_type", f"{field} is a name (a string), not {json_type(data[field])}"))
        return None
    return data[field]


def _resources(data: Mapping, profile: Profile | None, errors: list) -> Vector | None:
    """The request's vector: a fixed profile's allotment, or a dynamic one's allotment overridden by
    the keys the request gives (``resources`` or ``resource_settings``); plus step_run: 1."""
    given: dict[str, int] = {}
    for field, read in (("resources", read_resources), ("resource_settings", resources_from_settings)):
        if field not in data:
            continue
        try:
            given = read(data[field], field)
        except ResourceError as error:
            errors.append(_issue(error.path, error.code, error.message))
            continue
        if profile is not None and not profile.dynamic:
            errors.append(_issue(field, "fixed_profile", f"profile {profile.name} is fixed ({profile.resources}): "
                                                         f"only a dynamic profile takes {field}"))
    if "resources" in data and "resource_settings" in data:
        errors.append(_issue("resource_settings", "conflict", "give resources or resource_settings, not both"))
    if profile is None:
        return None
    return Vector({**profile.resources, **given, **STEP_RUN})


def _boolean(data: Mapping, field: str, default: bool, errors: list) -> bool:
    value = data.get(field, default)
    if not isinstance(value, bool):
        errors.append(_issue(field, "invalid_type", f"{field} is true or false, not {json_type(value)}"))
        return default
    return value


def _integer(data: Mapping, field: str, default: int, bounds: tuple[int, int], errors: list) -> int:
    value, (low, high) = data.get(field, default), bounds
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(_issue(field, "invalid_type", f"{field} is an integer, not {json_type(value)}"))
        return default
    if not low <= value <= high:
        errors.append(_issue(field, "out_of_range", f"{field} must be between {low:,} and {high:,}"))
        return default
    return value


def _text(value: Any, path: str, limit: int, errors: list, *, what: str = "", empty: bool = True) -> str | None:
    """A string of at most ``limit`` characters, storable everywhere (no control characters, UTF-8)."""
    what = what or path
    if not isinstance(value, str):
        errors.append(_issue(path, "invalid_type", f"{what} is a string, not {json_type(value)}"))
    elif len(value) > limit or (not empty and not value):
        errors.append(_issue(path, "invalid_length", f"{what} must be {0 if empty else 1} to {limit} characters long"))
    elif _BAD_CHARACTERS.search(value) or not _utf8(value):
        errors.append(_issue(path, "invalid_character", f"{what} contains a control character or invalid text"))
    else:
        return value
    return None


def _labels(value: Any, errors: list) -> dict[str, str]:
    """At most 50 string → string entries; keys 1 to 63 characters, values up to 200."""
    if not isinstance(value, Mapping):
        errors.append(_issue("labels", "invalid_type",
                             f"labels is an object of string → string, not {json_type(value)}"))
        return {}
    if len(value) > MAX_LABELS:
        errors.append(_issue("labels", "too_many",
                             f"labels has {len(value)} entries, at most {MAX_LABELS} are allowed"))
        return {}
    labels = {}
    for key, text in value.items():
        at = child("labels", key)
        if _text(key, at, MAX_LABEL_KEY, errors, what=f"the label key {show(key)}", empty=False) is not None:
            if (checked := _text(text, at, MAX_LABEL_VALUE, errors, what=f"label {show(key)}")) is not None:
                labels[key] = checked
    return labels


# --- heartbeat, release, cancel --------------------------------------------------------------------

def request_heartbeat(*, user, request_id: int) -> RequestRow:
    """R-50: renew the lease of a live request for another ``lease_seconds``; ``RequestNotLive`` otherwise."""
    _renew(user=user, request_id=request_id)
    return _fresh(user, request_id)


def request_release(*, user, request_id: int) -> RequestRow:
    """R-51: done (or acknowledging preemption). Idempotent: a finished request comes back unchanged."""
    return _act(user, request_id, lifecycle.release, "released")


def request_cancel(*, user, request_id: int) -> RequestRow:
    """R-51: withdraw. Idempotent: a finished request comes back unchanged."""
    return _act(user, request_id, lifecycle.cancel, "cancelled")


Change = Callable[[Any, datetime], Any]


def _act(user, request_id: int, change: Change, verb: str) -> RequestRow:
    if request_transition(user=user, request_id=request_id, change=change, verb=verb):
        _reconcile()
    return _fresh(user, request_id)


@transaction.atomic
def request_transition(*, user, request_id: int, change: Change, verb: str) -> bool:
    """Apply a ``reconcile.lifecycle`` transition to a request ``user`` may see; True if it changed.

    The write is conditional on the state read: a pass that moved the request meanwhile makes it
    a ``RequestConflict`` instead of a lost update.
    """
    before = to_engine(_locked(user, request_id))
    now = timezone.now()
    after = change(before, now)
    if after == before:
        return False
    fields = {"state": after.state.value, "reason": after.reason.value, "message": _message(before, after, user, verb)}
    for name in ("attempt", "pool", "allocated_at", "lease_expires_at", "preempted_at", "held_pool", "preempted_by"):
        if getattr(after, name) != getattr(before, name):
            fields[name] = getattr(after, name)
    if after.state.terminal:
        fields.update(finished_at=now, position=None, queue_pool=None, held_pool=None)
    elif after.state == State.PENDING:  # re-queued after preemption: the next pass places it
        fields.update(position=None, queue_pool=None, preempted_by=None)
    if not RequestRow.objects.filter(pk=request_id, state=before.state.value).update(**fields):
        raise RequestConflict(f"request {request_id} changed meanwhile; try again")
    events.publish_requests([request_id])
    events.publish_live({before.pool} - {None}, {before.policy})  # its capacity or place is free now
    return True


@transaction.atomic
def _renew(*, user, request_id: int) -> None:
    before = to_engine(_locked(user, request_id))
    now = timezone.now()
    if lifecycle.lease_expired(before, now):
        raise RequestNotLive(f"the lease of request {request_id} ran out at {before.lease_expires_at.isoformat()}")
    try:
        after = lifecycle.heartbeat(before, now)
    except lifecycle.NotLive:
        raise RequestNotLive(f"request {request_id} is {before.state.value}, not live: "
                             "there is no lease to renew") from None
    if not RequestRow.objects.filter(pk=request_id, state=before.state.value).update(
            lease_expires_at=after.lease_expires_at):
        raise RequestConflict(f"request {request_id} changed meanwhile; try again")


def _locked(user, request_id: int) -> tuple:
    """The request's row (``SNAPSHOT_FIELDS``) locked for this transaction, if ``user`` may see it."""
    rows = RequestRow.objects.select_for_update().filter(pk=request_id)
    if not user.is_staff:
        rows = rows.filter(owner=user)
    row = rows.values_list(*SNAPSHOT_FIELDS).first() if 1 <= request_id <= MAX_ID else None
    if row is None:
        raise RequestNotFound(f"there is no request {request_id}")
    return row


def _message(before, after, user, verb: str) -> str:
    who = user.get_username()
    if before.state == State.PREEMPTING:
        if after.state == State.PENDING:
            return f"{verb} by {who} while being preempted; queued again (attempt {after.attempt})"
        return f"{verb} by {who} while being preempted; no retries left"
    if before.state == State.PENDING:
        return f"cancelled by {who} before it was allocated"
    return f"{verb} by {who}; its capacity on pool {before.pool} is free again"


def _fresh(user, request_id: int) -> RequestRow:
    row = request_get(user=user, request_id=request_id)
    if row is None:
        raise RequestNotFound(f"there is no request {request_id}")
    return row


def _reconcile() -> None:
    """Ask for a pass; the change is committed already, so a failing pass must not fail the call."""
    try:
        reconcile_soon("request")
    except Exception:  # the next pass re-plans from the database; nothing is lost
        log.exception("reconcile pass after a request change failed")


# --- small helpers -----------------------------------------------------------------------------------

def _issue(path: str, code: str, message: str) -> dict[str, str]:
    return {"path": path, "code": code, "message": message}


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from "\ud800" in JSON
        return False
    return True
