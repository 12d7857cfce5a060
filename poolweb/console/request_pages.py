"""The requests pages (docs/console.md): ``/requests/`` — one's own requests (admins: everyone's),
filtered as ``GET /api/v1/requests`` filters them — and ``/requests/<id>/``, one request with its
lease and its history. Reads only; ``Cancel`` and ``Release`` are the REST API's, called by the
pages' JavaScript (static/console/requests.js, request.js).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from poolweb.console.queues import WhyView, why_view
from poolweb.models import Request
from poolweb.selectors.events import newest_seq
from poolweb.selectors.requests import (
    FilterError, FiltersInvalid, RequestFilters, audience_of, parse_filters, request_get, request_history,
    request_list,
)
from poolweb.selectors.versions import live_config
from poolweb.selectors.waiting import why_waits
from poolweb.services.payloads import request_data, request_warnings
from reconcile import LIVE_STATES, UNFINISHED_STATES, State

REQUESTS_PER_PAGE = 50
ACTIVE = ",".join(UNFINISHED_STATES)
STATE_CHOICES = (("", "Any state"), (ACTIVE, "Active (pending or live)"),
                 *((s.value, s.value) for s in State))
# Which states offer Cancel and Release: the one definition, rendered into every page for its
# scripts too (base.html, static/console/shared/states.js).
ACTIONS = {"cancellable": UNFINISHED_STATES, "releasable": LIVE_STATES}
OWNER_FOR_ADMINS = "Only administrators filter by owner: these are your own requests."


@dataclass(frozen=True)
class FilterForm:
    """What the filter form shows: the values asked for (valid or not) and the choices."""

    values: dict[str, str]
    policies: tuple[str, ...]
    pools: tuple[str, ...]
    errors: tuple[FilterError, ...]
    notes: tuple[str, ...]

    @property
    def active(self) -> bool:
        return any(self.values.values())


@login_required
@require_GET
def request_list_page(request: HttpRequest) -> HttpResponse:
    seq = newest_seq()  # before the rows: the page follows the stream from here (decision 44)
    params, notes = _own_filters(request)
    try:
        filters, errors = parse_filters(params), ()
    except FiltersInvalid as invalid:
        filters, errors = None, invalid.errors
    rows = request_list(user=request.user, filters=filters) if filters else Request.objects.none()
    page = Paginator(rows, REQUESTS_PER_PAGE).get_page(request.GET.get("page"))
    form = _filter_form(params, errors, notes)
    return render(request, "console/requests.html", {
        "page_obj": page, "form": form, "state_choices": STATE_CHOICES, **ACTIONS,
        "page": {"seq": seq, "newest": page.number == 1 and not form.active,
                 "top": max((row.pk for row in page), default=0)},
    }, status=400 if errors else 200)


def _own_filters(request: HttpRequest) -> tuple[QueryDict, tuple[str, ...]]:
    """The query's filters; a member's ``owner`` is dropped, saying so (they see only their own)."""
    params = request.GET.copy()
    if request.user.is_staff or not params.get("owner"):
        return params, ()
    del params["owner"]
    return params, (OWNER_FOR_ADMINS,)


def _filter_form(params: QueryDict, errors: tuple[FilterError, ...], notes: tuple[str, ...]) -> FilterForm:
    config = live_config()
    values = {field: params.get(field, "") for field in ("state", "policy", "profile", "pool", "owner")}
    return FilterForm(values, _choices([p.name for p in config.policies], values["policy"]),
                      _choices([p.name for p in config.pools], values["pool"]), errors, notes)


def _choices(names: list[str], asked: str) -> tuple[str, ...]:
    """The live configuration's names, and the one asked for if it is not among them (a policy
    or pool of an older version that requests still name)."""
    return tuple(names + [asked] if asked and asked not in names else names)


@dataclass(frozen=True)
class Lease:
    """A live request's lease. A grant sets it to ``allocated_at + lease_seconds`` and a heartbeat
    to ``now + lease_seconds`` (reconcile.transition, lifecycle.heartbeat), so the last heartbeat
    is ``expires - lease_seconds`` exactly: no column stores it."""

    granted: datetime | None
    expires: datetime | None
    renewed: datetime | None  # the last heartbeat; None when none came since the grant


def lease_of(row: Request) -> Lease:
    if row.state not in ACTIONS["releasable"] or row.lease_expires_at is None:
        return Lease(row.allocated_at, None, None)
    renewed = row.lease_expires_at - timedelta(seconds=row.lease_seconds)
    heartbeat = renewed if row.allocated_at is None or renewed > row.allocated_at else None
    return Lease(row.allocated_at, row.lease_expires_at, heartbeat)


@login_required
@require_GET
def request_page(request: HttpRequest, request_id: int) -> HttpResponse:
    seq = newest_seq()
    row = request_get(user=request.user, request_id=request_id)
    if row is None:  # another user's request is hidden as a missing one, as the API hides it
        raise Http404(f"there is no request {request_id}")
    history = request_history(user=request.user, request_id=request_id) or []
    return render(request, "console/request.html", {
        "row": row, "lease": lease_of(row), "history": history, "labels": sorted(row.labels.items()), **ACTIONS,
        "why": _why(request, row),
        "warnings": request_warnings(row.state, row.preemptible, row.max_retries),
        "page": {"seq": seq, "request": request_data(row), "changes": len(history)},
    })


@login_required
@require_GET
def request_history_rows(request: HttpRequest, request_id: int) -> HttpResponse:
    """The request's state changes after the first ``?after=`` as rows (history_row.html, the only
    markup of one), in a ``<tbody data-count>`` with how many there are in all: what its page
    appends when a change arrives live."""
    try:
        after = int(request.GET.get("after", 0))
    except ValueError:
        return HttpResponseBadRequest("after is a whole number")
    history = request_history(user=request.user, request_id=request_id)
    if history is None:
        raise Http404(f"there is no request {request_id}")
    return render(request, "console/partials/history_rows.html",
                  {"history": history[max(after, 0):], "count": len(history)})


def _why(request: HttpRequest, row: Request) -> WhyView | None:
    """"Why it waits" for a request that waits: pending, or preempting (its grace)."""
    if row.state not in (State.PENDING.value, State.PREEMPTING.value):
        return None
    return why_view(why_waits(row), audience_of(request.user), request.user.get_username())


def filters_query(filters: RequestFilters) -> str:
    """The ``/requests/`` query that shows ``filters`` (links from other pages)."""
    params = QueryDict(mutable=True)
    for field in ("policy", "profile", "pool", "owner"):
        if (value := getattr(filters, field)) is not None:
            params[field] = value
    if filters.states is not None:
        params["state"] = ",".join(filters.states)
    return params.urlencode()
