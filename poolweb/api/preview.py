"""``POST /config/draft/preview`` (docs/api.md §2): what provisioning the draft would do to the live
requests — granted, preempted, rejected, cancelled — and usage per policy, scope and key before
and after. The engine decides (services/preview.py); this renders it."""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from poolweb.api.admin_only import NO_DRAFT, TAG, AdminView
from poolweb.api.errors import VerdictSchema, issue_data
from poolweb.services.payloads import quantity
from poolweb.services.preview import DraftPreview, draft_preview
from reconcile import Decision
from reconcile.report import UsageRow, row_order


class RefusalSchema(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["pool", "profile", "policy"])
    name = serializers.CharField()
    requests = serializers.ListField(child=serializers.IntegerField())
    message = serializers.CharField()


class PreviewRequestSchema(serializers.Serializer):
    id = serializers.IntegerField()
    policy = serializers.CharField(allow_null=True)
    profile = serializers.CharField(allow_null=True)
    owner = serializers.CharField(allow_null=True)
    pool = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    message = serializers.CharField()
    preempted_by = serializers.IntegerField(allow_null=True)


class UsageFiguresSchema(serializers.Serializer):
    usage = serializers.FloatField()
    reserved = serializers.FloatField(allow_null=True)
    limit = serializers.FloatField(allow_null=True)
    borrowed = serializers.FloatField()


class UsageChangeSchema(serializers.Serializer):
    policy = serializers.CharField()
    scope = serializers.CharField()
    key = serializers.CharField()
    before = UsageFiguresSchema(allow_null=True, help_text="null: no such row before")
    after = UsageFiguresSchema(allow_null=True, help_text="null: no such row after")


class PreviewSchema(VerdictSchema):
    refusals = RefusalSchema(many=True, help_text="R-57: removals that live allocations forbid")
    granted = PreviewRequestSchema(many=True)
    preempted = PreviewRequestSchema(many=True)
    rejected = PreviewRequestSchema(many=True)
    cancelled = PreviewRequestSchema(many=True)
    usage = UsageChangeSchema(many=True)


class DraftPreviewView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_draft_preview", request=None,
                   responses={200: PreviewSchema, 404: NO_DRAFT},
                   summary="What provisioning the draft would do to current requests; changes nothing",
                   description="An invalid draft answers valid false with its errors and empty lists.")
    def post(self, request):
        return Response(preview_data(draft_preview()))


def preview_data(result: DraftPreview) -> dict:
    body = {"valid": result.valid, "errors": [issue_data(e) for e in result.errors]}
    if result.preview is None:
        return {**body, "refusals": [], "granted": [], "preempted": [], "rejected": [], "cancelled": [], "usage": []}
    decided = result.preview.plan
    groups = {"granted": decided.grants, "preempted": decided.preemptions, "rejected": decided.rejections,
              "cancelled": decided.cancellations}
    return {
        **body,
        "refusals": [{"kind": r.kind, "name": r.name, "requests": list(r.request_ids), "message": r.message}
                     for r in result.preview.refusals],
        **{name: [_entry(d, result) for d in group] for name, group in groups.items()},
        "usage": _usage_changes(result.preview.usage_before, result.preview.usage_after),
        # Only when the draft changes a budget: a preview without one is as it was before budgets.
        **({"budgets": [b.data() for b in result.budgets]} if result.budgets else {}),
    }


def _entry(decision: Decision, result: DraftPreview) -> dict:
    request = result.requests.get(decision.request_id)
    return {"id": decision.request_id, "policy": request.policy if request else None,
            "profile": request.profile if request else None, "owner": result.owners.get(decision.request_id),
            "pool": decision.pool, "reason": decision.reason.value, "message": decision.message,
            "preempted_by": decision.preempted_by}


def _usage_changes(before: Iterable[UsageRow], after: Iterable[UsageRow]) -> list[dict]:
    rows: dict[tuple[str, str, str], dict] = {}
    for side, report in (("before", before), ("after", after)):
        for row in report:
            entry = rows.setdefault((row.policy, row.scope, row.key), {
                "policy": row.policy, "scope": row.scope, "key": row.key, "before": None, "after": None})
            entry[side] = {"usage": quantity(row.usage), "reserved": quantity(row.reserved),
                           "limit": quantity(row.limit), "borrowed": quantity(row.borrowed)}
    return [rows[k] for k in sorted(rows, key=row_order)]
