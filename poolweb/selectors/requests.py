"""Reads of requests for the API and the console: who sees what, filters, one request.

Users list and read their own requests, staff (admins) everyone's; a request another user cannot
read is reported exactly like one that does not exist (no leak of existence). Where a user does
see others' requests — a pool's queue — an ``Audience`` says how much of each (docs/api.md §4
"Privacy"): all of their own, of those in a policy whose group they are in, and, for admins, of
every one; of the others only what ``services.payloads.request_data_for`` keeps.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from poolweb import sql
from poolweb.models import Request, RequestChange
from poolweb.selectors.versions import live_config
from poolweb.sql import api_calls
from poolweb.sql.labels import has_label
from reconcile import LIVE_STATES, Config, State
from reconcile.document import NAME_PATTERN

MAX_ID = 2**63 - 1  # larger ids cannot be in the table, and some databases refuse to compare them
USERNAME_PATTERN = re.compile(r"[\w.@+-]{1,150}")  # Django's username validator


@dataclass(frozen=True)
class RequestFilters:
    """What ``GET /requests`` may filter on; ``None`` = no filter. Values are already validated."""

    states: Sequence[str] | None = None
    policy: str | None = None
    profile: str | None = None
    pool: str | None = None
    owner: str | None = None  # a username
    labels: tuple[tuple[str, str], ...] = ()  # (key, value) pairs, all to match; () = no filter


@dataclass(frozen=True)
class FilterError:
    field: str  # the query parameter
    message: str
    code: str  # as DRF's error codes: ``invalid_name``, ``invalid_choice``


class FiltersInvalid(ValueError):
    """Filter values that cannot match any request; ``errors`` names each parameter."""

    def __init__(self, errors: Sequence[FilterError]) -> None:
        super().__init__("; ".join(error.message for error in errors))
        self.errors = tuple(errors)


def parse_filters(params: Mapping[str, str]) -> RequestFilters:
    """The filters of ``GET /requests`` (and of the console's requests page) from query
    parameters: an empty value means no filter, ``state`` takes states separated by commas.
    ``FiltersInvalid`` for a value that cannot match, naming the parameter."""
    errors, values = [], {}
    for field in ("policy", "profile", "pool", "owner"):
        value = params.get(field) or None
        pattern = USERNAME_PATTERN if field == "owner" else NAME_PATTERN
        if value is not None and not pattern.fullmatch(value):
            errors.append(FilterError(field, f"{field} is not a valid name", "invalid_name"))
        values[field] = value
    states = params.get("state") or None
    if states is not None:
        states = states.split(",")
        unknown = [s for s in states if s not in State.__members__.values()]
        if unknown:
            errors.append(FilterError("state", f"{unknown[0][:40]!r} is not a state: use "
                                               f"{', '.join(s.value for s in State)}", "invalid_choice"))
    if errors:
        raise FiltersInvalid(errors)
    return RequestFilters(states=states, **values)


@dataclass(frozen=True)
class Audience:
    """Who reads requests, for the privacy rule: a user, whether an admin, and the policies of
    the live configuration whose group the user is in (their teams' queues)."""

    user_id: int
    is_admin: bool = False
    team_policies: frozenset[str] = frozenset()

    def sees_details(self, owner_id: int, policy: str) -> bool:
        """Whether a request of ``owner_id`` in ``policy`` shows its name, owner, labels and message."""
        return self.is_admin or owner_id == self.user_id or policy in self.team_policies


def audience_of(user, config: Config | None = None) -> Audience:
    """``user`` as a reader of requests; a member's teams judged by the live configuration (or
    ``config``, read already)."""
    if user.is_staff:
        return Audience(user.pk, is_admin=True)
    groups = set(user.groups.values_list("name", flat=True))
    return Audience(user.pk, team_policies=frozenset(
        policy.name for policy in (config or live_config()).policies if policy.group and policy.group in groups))


def requests_visible(*, user) -> QuerySet[Request]:
    rows = Request.objects.select_related("owner")
    return rows if user.is_staff else rows.filter(owner=user)


def request_list(*, user, filters: RequestFilters = RequestFilters()) -> QuerySet[Request]:
    """Visible requests matching ``filters``, newest first (id descending, a stable order for paging)."""
    rows = requests_visible(user=user)
    if filters.states is not None:
        rows = rows.filter(state__in=list(filters.states))
    for field in ("policy", "profile", "pool"):
        value = getattr(filters, field)
        if value is not None:
            rows = rows.filter(**{field: value})
    if filters.owner is not None:
        rows = rows.filter(owner__username=filters.owner)
    for key, value in filters.labels:
        rows = rows.filter(has_label(key, value))
    return rows.order_by("-id")


def request_get(*, user, request_id: int) -> Request | None:
    """One request if ``user`` may see it, else None (absent and hidden look the same)."""
    if not 1 <= request_id <= MAX_ID:
        return None
    return requests_visible(user=user).filter(pk=request_id).first()


def submitter_of(*, user) -> api_calls.Submitter:
    """What a submission by ``user`` reads first: their pending count and their groups."""
    return api_calls.submitter(user.pk)


def request_history(*, user, request_id: int) -> list[RequestChange] | None:
    """The changes of a request ``user`` may see, oldest first; None as for ``request_get``."""
    if request_get(user=user, request_id=request_id) is None:
        return None
    return list(RequestChange.objects.filter(request_id=request_id).order_by("id"))


def request_by_idempotency_key(*, user, key: str) -> Request | None:
    """The request ``user`` submitted earlier with this ``Idempotency-Key``: for themselves, or for
    another user (keys are the submitting account's, decision 131). Each side of the ``or`` is one
    of the two unique constraints' indexes, the key inside each: with the key outside the ``or``,
    SQLite scanned the table."""
    mine = (Q(owner=user, submitted_by__isnull=True, idempotency_key=key)
            | Q(submitted_by=user.get_username(), idempotency_key=key))
    return Request.objects.select_related("owner").filter(mine).first()


def requests_by_idempotency_keys(*, user, keys: Collection[str]) -> dict[str, Request]:
    """``request_by_idempotency_key`` for many keys in one read: the request of each key found."""
    found: dict[str, Request] = {}
    keys = sorted(keys)
    for start in range(0, len(keys), sql.CHUNK):
        part = keys[start:start + sql.CHUNK]
        mine = (Q(owner=user, submitted_by__isnull=True, idempotency_key__in=part)
                | Q(submitted_by=user.get_username(), idempotency_key__in=part))
        for row in Request.objects.select_related("owner").filter(mine).order_by("id"):
            found.setdefault(row.idempotency_key, row)  # the first, as request_by_idempotency_key's
    return found


def running_of_policies(names: Sequence[str], most: int) -> dict[str, tuple[list[Request], int]]:
    """Per policy of ``names``: its live requests (allocated or preempting), longest running first
    and at most ``most`` of them, and how many it has in all. Two queries, whatever the number of
    policies (a window numbers each policy's requests) and of requests."""
    live = Request.objects.filter(policy__in=names, state__in=LIVE_STATES)
    counts = dict(live.order_by().values("policy").annotate(n=Count("id")).values_list("policy", "n"))
    place = Window(RowNumber(), partition_by=F("policy"), order_by=(F("allocated_at").asc(), F("grant_order").asc(), F("id").asc()))
    found: dict[str, tuple[list[Request], int]] = {name: ([], counts.get(name, 0)) for name in names}
    for row in live.annotate(place=place).filter(place__lte=most).select_related("owner").order_by("place"):
        found[row.policy][0].append(row)
    return found
