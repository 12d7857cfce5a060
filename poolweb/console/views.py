"""The console's pages (docs/console.md). Thin: a selector or a service read for what the page
shows, a template. Every write is the REST API's, called by the page's JavaScript; the two
``editor/…`` fragments only render (the draft being edited, the preview of the saved draft).
"""

from __future__ import annotations

import json
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from poolweb.console import pages
from poolweb.console.cards import config_board
from poolweb.console.drafts import document_board, draft_board
from poolweb.json_input import JSONRefused, read_json
from poolweb.selectors.configuration import live_configuration
from poolweb.selectors.diffs import draft_changes, version_changes
from poolweb.selectors.drafts import draft_info
from poolweb.selectors.events import newest_seq
from poolweb.selectors.live import pool_states
from poolweb.selectors.versions import ConfigNotFound, live_config, version_get, version_list
from poolweb.services.preview import draft_preview
from reconcile.diff import summarize
from reconcile.document import NAME_PATTERN, NAME_RULE, Issue

VERSIONS_PER_PAGE = 50
MAX_FINDING_PATH = 1000  # the API's paths are a few dozen characters; Python reads any index this long
MAX_FINDINGS = 2000  # of each level: the API reports 1,000 errors at most, and a warning or two per entry


def admin_required(view):
    """Signed in (else to the sign-in page) and an admin (else 403)."""
    @login_required
    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("only administrators may see this page")
        return view(request, *args, **kwargs)
    return checked


@login_required
@require_GET
def configuration(request: HttpRequest) -> HttpResponse:
    # The seq first: the page follows the stream from it, so an event committed while the page is
    # read comes once more rather than not at all.
    seq = newest_seq()
    view = live_configuration()
    draft = draft_info() if request.user.is_staff else None
    board = config_board(view.config, usage=pool_states(), pending=view.pending, running=view.running)
    return render(request, "console/configuration.html", {
        "view": view, "board": board, "draft": draft, "name_rule": NAME_RULE, "name_pattern": NAME_PATTERN.pattern,
        "page": {"admin": request.user.is_staff, "live_version": view.version, "seq": seq,
                 "draft": draft is not None and draft.exists},
    })


@admin_required
@require_POST
def editor_board(request: HttpRequest) -> HttpResponse:
    """The board of the draft being edited: ``{"document", "errors", "warnings"}`` in, HTML out."""
    try:
        body = read_json(request.body)
        if not isinstance(body, dict):
            return HttpResponseBadRequest('the body is {"document", "errors", "warnings"}')
        errors, warnings = _findings(body, "errors"), _findings(body, "warnings")
    except JSONRefused as refused:
        return HttpResponseBadRequest(str(refused))
    board = draft_board(body.get("document"), config_board(live_config()), errors, warnings)
    return render(request, "console/partials/board.html", {"board": board})


@admin_required
@require_POST
def editor_preview(request: HttpRequest) -> HttpResponse:
    try:
        preview, changes = draft_preview(), draft_changes()
    except ConfigNotFound:
        raise Http404("there is no draft: save it first") from None
    return render(request, "console/partials/preview.html", {"preview": pages.preview_sections(preview, changes)})


@admin_required
@require_GET
def versions(request: HttpRequest) -> HttpResponse:
    page = Paginator(version_list(), VERSIONS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [(version, version.summary) for version in page]
    return render(request, "console/versions.html", {"page_obj": page, "rows": rows,
                                                     "draft": draft_info()})


@admin_required
@require_GET
def version(request: HttpRequest, number: int) -> HttpResponse:
    try:
        row = version_get(number)
    except ConfigNotFound as missing:
        raise Http404(str(missing)) from None
    draft = draft_info()
    return render(request, "console/version.html", {
        "version": row, "board": document_board(row.document), "draft": draft,
        "document": json.dumps(row.document, indent=2, ensure_ascii=False),
        "page": {"version": number, "draft": draft.exists},
    })


@admin_required
@require_GET
def version_diff(request: HttpRequest, a: int, b: int) -> HttpResponse:
    try:
        changes = version_changes(before=a, after=b)
    except ConfigNotFound as missing:
        raise Http404(str(missing)) from None
    return render(request, "console/version_diff.html", {
        "before": a, "after": b, "sections": pages.diff_sections(changes), "summary": summarize(changes),
    })


@admin_required
@require_GET
def version_compare(request: HttpRequest) -> HttpResponse:
    """The compare form of the versions page: ``?before=a&after=b`` to the diff page."""
    try:
        a, b = int(request.GET["before"]), int(request.GET["after"])
    except (KeyError, ValueError):
        return HttpResponseBadRequest("choose two versions to compare")
    return redirect("console:version-diff", a=a, b=b)


def _findings(body: dict, field: str) -> list:
    """The API's errors or warnings as the page sends them back, read leniently (anything but a
    list is none, the first ``MAX_FINDINGS`` are shown), but a path longer than any the API writes
    is refused: its index is no card's."""
    found = body.get(field)
    if not isinstance(found, list):
        return []
    found = found[:MAX_FINDINGS]
    for i, issue in enumerate(found):
        if isinstance(issue, dict) and len(str(issue.get("path", ""))) > MAX_FINDING_PATH:
            raise JSONRefused(Issue(f"{field}[{i}].path", "too_long",
                                    f"a path has at most {MAX_FINDING_PATH} characters"))
    return found
