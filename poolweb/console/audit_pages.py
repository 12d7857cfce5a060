"""The audit page (``/audit/``, docs/console.md), for administrators: the audit log newest first,
filtered as ``GET /api/v1/audit`` filters it (selectors.audit), 50 entries a page. Reads only."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from poolweb.console.access import admin_required
from poolweb.models import AuditEntry
from poolweb.selectors.audit import ACTIONS, FiltersInvalid, audit_list, parse_audit_filters

ENTRIES_PER_PAGE = 50
FIELDS = ("actor", "action", "object", "request", "since", "until")
# An object with a page of its own: its link.
PAGES = {"version": "/versions/{}/", "request": "/requests/{}/"}
SHOWN_IDS = 20  # a batch's requests linked in its row; the rest counted


@dataclass(frozen=True)
class AuditRow:
    """One entry as its row shows it (partials/audit_row.html)."""

    entry: AuditEntry
    what: str  # the action in words
    href: str | None  # the object's page, if it has one
    requests: tuple[int, ...]  # a batch's requests, the first SHOWN_IDS
    more: int  # how many more it lists

    @property
    def change(self) -> str:
        before, after = self.entry.before, self.entry.after
        return f"{before} → {after}" if before else after


def audit_row(entry: AuditEntry) -> AuditRow:
    found = re.fullmatch(r"(version|request):([0-9]+)", entry.target)
    href = PAGES[found[1]].format(found[2]) if found else None
    ids = tuple(entry.request_ids) if entry.target == "requests" else ()
    return AuditRow(entry, ACTIONS.get(entry.action, entry.action), href, ids[:SHOWN_IDS], max(len(ids) - SHOWN_IDS, 0))


@admin_required
@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    values = {field: request.GET.get(field, "") for field in FIELDS}
    try:
        filters, errors = parse_audit_filters(values), ()
    except FiltersInvalid as invalid:
        filters, errors = None, invalid.errors
    rows = audit_list(filters) if filters else AuditEntry.objects.none()
    page = Paginator(rows, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "console/audit.html", {
        "page_obj": page, "rows": [audit_row(entry) for entry in page], "values": values, "errors": errors,
        "active": any(values.values()), "actions": ACTIONS,
    }, status=400 if errors else 200)
