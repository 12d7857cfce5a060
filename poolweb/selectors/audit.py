"""Reads of the audit log (decision 158) for ``GET /audit``, the console's audit page and
``manage.py audit``: one set of filters, read strictly in one place, newest first.

Filters (an empty value is no filter): ``actor`` (the username, or a command line's ``user@host``),
``action`` (one of ``ACTIONS``), ``object`` (the target as stored, ``version:7``,
``token:Ab3dEf9h``, ``user:bridge``, ``management``, ``draft``; ``request:12`` also finds the
batches that list request 12), ``request`` (an id), and ``since``/``until`` (ISO 8601 times, ``Z``
or an offset; without one, UTC), ``since`` inclusive and ``until`` exclusive. A value that cannot
match is ``FiltersInvalid`` naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from django.db.models import QuerySet

from poolweb.models import AuditEntry
from poolweb.selectors.requests import MAX_ID, FilterError, FiltersInvalid
from poolweb.sql.ids import holds_id

# What the audit log records (services.audit): code → what it means, for people (docs/api.md §5).
ACTIONS = {
    "config.provision": "provisioned a configuration version",
    "draft.reset": "discarded the draft",
    "version.restore": "restored a version into the draft",
    "management.switch": "switched resource management on or off",
    "token.create": "created an API token",
    "token.revoke": "revoked an API token",
    "permission.grant": "granted the permission to submit for others",
    "permission.revoke": "revoked the permission to submit for others",
    "service_account.create": "created a service account",
    "service_account.revoke": "revoked a service account",
    "request.submit": "submitted a request for another user",
    "request.heartbeat": "renewed the lease of another user's request",
    "request.release": "released another user's request",
    "request.cancel": "cancelled another user's request",
    "requests.submit": "submitted requests for other users (a batch)",
    "requests.heartbeat": "renewed the leases of other users' requests (a batch)",
    "requests.release": "released other users' requests (a batch)",
    "requests.cancel": "cancelled other users' requests (a batch)",
}
ACTOR = re.compile(r"[\w.@+-]{1,150}")  # a username, or user@host
REQUEST_TARGET = re.compile(r"request:([0-9]{1,19})")
MAX_TARGET = 200  # AuditEntry.target


@dataclass(frozen=True)
class AuditFilters:
    actor: str | None = None
    action: str | None = None
    target: str | None = None
    request: int | None = None
    since: datetime | None = None
    until: datetime | None = None

    @property
    def active(self) -> bool:
        return any(value is not None for value in vars(self).values())


def parse_audit_filters(params: Mapping[str, str]) -> AuditFilters:
    errors: list[FilterError] = []
    values: dict = {}
    actor = params.get("actor") or None
    if actor is not None and not ACTOR.fullmatch(actor):
        errors.append(FilterError("actor", "actor is a username (or a command line's user@host)", "invalid_name"))
    action = params.get("action") or None
    if action is not None and action not in ACTIONS:
        errors.append(FilterError("action", f"{action[:40]!r} is not an audited action: use "
                                            f"{', '.join(ACTIONS)}", "invalid_choice"))
    target = params.get("object") or None
    if target is not None and (len(target) > MAX_TARGET or not target.isprintable()):
        errors.append(FilterError("object", f"object is at most {MAX_TARGET} printable characters", "invalid"))
    elif target is not None and (found := REQUEST_TARGET.fullmatch(target)):
        target, values["request"] = None, int(found[1])
    request = params.get("request") or None
    if request is not None:
        if not request.isascii() or not request.isdigit() or not 1 <= int(request) <= MAX_ID:
            errors.append(FilterError("request", "request is a request's id, an integer ≥ 1", "invalid"))
        elif values.get("request", int(request)) != int(request):
            errors.append(FilterError("request", "request and object name different requests", "invalid"))
        else:
            values["request"] = int(request)
    for field in ("since", "until"):
        values[field] = _time(params.get(field) or None, field, errors)
    if values["since"] and values["until"] and values["until"] <= values["since"]:
        errors.append(FilterError("until", "until is not after since: no entry can match", "invalid"))
    if errors:
        raise FiltersInvalid(errors)
    return AuditFilters(actor=actor, action=action, target=target, **values)


def _time(text: str | None, field: str, errors: list[FilterError]) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        hint = " (a '+' in a query is a space: write it %2B, or use Z)" if " " in text else ""
        errors.append(FilterError(field, f"{field} is not an ISO 8601 time such as 2026-12-01T09:30:00Z{hint}",
                                  "invalid_time"))
        return None
    try:
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)
    except OverflowError:  # year 1 with an offset west of UTC
        errors.append(FilterError(field, f"{field} is out of range", "invalid_time"))
        return None


def audit_list(filters: AuditFilters = AuditFilters()) -> QuerySet[AuditEntry]:
    """The entries matching ``filters``, newest first (id descending: a stable order for pages)."""
    rows = AuditEntry.objects.all()
    if filters.actor is not None:
        rows = rows.filter(actor=filters.actor)
    if filters.action is not None:
        rows = rows.filter(action=filters.action)
    if filters.target is not None:
        rows = rows.filter(target=filters.target)
    if filters.request is not None:
        rows = rows.filter(holds_id("request_ids", filters.request))
    if filters.since is not None:
        rows = rows.filter(at__gte=filters.since)
    if filters.until is not None:
        rows = rows.filter(at__lt=filters.until)
    return rows.order_by("-id")
