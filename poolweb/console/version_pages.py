"""The versions pages (``/versions/``, ``/versions/<n>/``, ``/versions/<a>/diff/<b>/``,
docs/console.md), for administrators. Thin: a selector for what the page shows, a template;
Restore is the REST API's, called by static/console/version.js.
"""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from poolweb.console import pages
from poolweb.console.access import admin_required
from poolweb.console.drafts import document_board
from poolweb.selectors.diffs import version_changes
from poolweb.selectors.drafts import draft_info
from poolweb.selectors.versions import ConfigNotFound, version_get, version_list
from reconcile.diff import summarize

VERSIONS_PER_PAGE = 50


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
