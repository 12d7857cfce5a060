"""The resource configuration page (``/``, docs/console.md) and the two fragments its editor
draws with: the board of the draft being edited and the preview of the saved draft. Thin: a
selector or a service read for what the page shows, a template. Every write is the REST API's,
called by the page's JavaScript (static/console/configuration.js, editor.js); the fragments only
render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from poolweb.console import pages
from poolweb.console.access import admin_required
from poolweb.console.cards import config_board
from poolweb.console.drafts import draft_board
from poolweb.json_input import JSONRefused, read_json
from poolweb.selectors.configuration import live_configuration
from poolweb.selectors.diffs import draft_changes
from poolweb.selectors.drafts import draft_info
from poolweb.selectors.events import newest_seq
from poolweb.selectors.live import pool_states
from poolweb.selectors.versions import ConfigNotFound, live_config
from poolweb.services.preview import draft_preview
from reconcile.document import NAME_PATTERN, NAME_RULE, Issue

MAX_FINDING_PATH = 1000  # the API's paths are a few dozen characters; Python reads any index this long
MAX_FINDINGS = 2000  # of each level: the API reports 1,000 errors at most, and a warning or two per entry


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
