"""Previewing the draft: what provisioning it would do to the live requests (api.md §2,
R-55…R-57), as the engine's preview says, JSON-ready."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from poolweb.models import Request as RequestRow
from poolweb.services.config import draft_get, json_ready, refusal_errors, validate_document
from poolweb.services.state import load_snapshot
from reconcile import Decision, format_quantity
from reconcile.preview import preview
from reconcile.report import UsageRow


def draft_preview() -> dict:
    """What provisioning the draft would do to the live requests, JSON-ready (api.md §2)."""
    checked = validate_document(draft_get())
    nothing = {"refusals": [], "granted": [], "preempted": [], "rejected": [], "cancelled": [], "usage": []}
    if checked.config is None:
        return {"valid": False, "errors": checked.errors, **nothing}
    snapshot = load_snapshot(timezone.now())
    result = preview(snapshot, checked.config)
    requests = {r.id: r for r in snapshot.requests}
    decided = result.plan
    groups = {"granted": decided.grants, "preempted": decided.preemptions, "rejected": decided.rejections,
              "cancelled": decided.cancellations}
    ids = {d.request_id for group in groups.values() for d in group}
    owners = dict(RequestRow.objects.filter(pk__in=ids).values_list("id", "owner__username")) if ids else {}
    errors = refusal_errors(result.refusals)
    return {
        "valid": not errors, "errors": errors,
        "refusals": [{"kind": r.kind, "name": r.name, "requests": list(r.request_ids), "message": r.message}
                     for r in result.refusals],
        **{name: [_entry(d, requests, owners) for d in group] for name, group in groups.items()},
        "usage": _usage_changes(result.usage_before, result.usage_after),
    }


def _entry(decision: Decision, requests: dict, owners: dict[int, str]) -> dict:
    request = requests.get(decision.request_id)
    return {"id": decision.request_id, "policy": request.policy if request else None,
            "profile": request.profile if request else None, "owner": owners.get(decision.request_id),
            "pool": decision.pool, "reason": decision.reason.value, "message": decision.message,
            "preempted_by": decision.preempted_by}


def _usage_changes(before: Iterable[UsageRow], after: Iterable[UsageRow]) -> list[dict]:
    rows: dict[tuple[str, str, str], dict] = {}
    for side, report in (("before", before), ("after", after)):
        for row in report:
            entry = rows.setdefault((row.policy, row.scope, row.key), {
                "policy": row.policy, "scope": row.scope, "key": row.key, "before": None, "after": None})
            entry[side] = {"usage": _number(row.usage), "reserved": _number(row.reserved),
                           "limit": _number(row.limit), "borrowed": _number(row.borrowed)}
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1] != "*", k[1], k[2]))]


def _number(milli: int | None) -> int | float | None:
    return None if milli is None else json_ready(format_quantity(milli))
