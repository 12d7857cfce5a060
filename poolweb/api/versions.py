"""What changed (an extension of docs/api.md §2, admin only; decision 43): the structural diff between
two versions, the draft's base version, and the 409 that refuses to provision a stale draft.

- ``GET /config/versions/{a}/diff/{b}``: what changed from version a to version b (0: nothing).
- ``GET /config/draft/info``: whether a draft exists, the version it was made from, whether
  that is still the live one.
- ``PUT /config/draft?base_version=N`` and ``POST /config/draft/provision`` with
  ``confirm_stale`` are in poolweb.api.config; the helpers they use are here.
"""

from __future__ import annotations

import re

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from poolweb.api.admin_only import TAG, AdminView
from poolweb.api.errors import DetailSchema
from poolweb.selectors.diffs import version_changes
from poolweb.selectors.drafts import draft_info
from poolweb.services.config import ConfigInvalid
from poolweb.services.draft_base import MAX_VERSION, DraftStale
from poolweb.services.payloads import json_ready
from reconcile.diff import Change, summarize
from reconcile.document import Issue

_NUMBER = re.compile(r"[0-9]{1,10}")

BASE_VERSION = OpenApiParameter(
    "base_version", OpenApiTypes.INT, OpenApiParameter.QUERY, required=False,
    description="The live version this draft was made from (0: from nothing). Provisioning the draft is then "
                "refused with 409 once another version is live, unless confirm_stale. Without it the draft "
                "has no base and is never refused for that.")


class ConfigFieldChangeSchema(serializers.Serializer):
    field = serializers.CharField(help_text="e.g. capacity.gpu, connections, connections[h100].name, "
                                            "quotas[*/gpu].limit, execution_order, policies")
    before = serializers.JSONField(allow_null=True, help_text="null: absent before")
    after = serializers.JSONField(allow_null=True, help_text="null: absent after")


class ConfigChangeSchema(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["pool", "profile", "policy"])
    name = serializers.CharField()
    action = serializers.ChoiceField(choices=["added", "changed", "removed"])
    fields = ConfigFieldChangeSchema(many=True)
    text = serializers.CharField(help_text="the change as a sentence")


class DiffSchema(serializers.Serializer):
    before = serializers.IntegerField(help_text="version a (0: the empty configuration)")
    after = serializers.IntegerField(help_text="version b")
    summary = serializers.CharField()
    changes = ConfigChangeSchema(many=True)


class StaleSchema(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.ChoiceField(choices=["stale_draft"])
    base_version = serializers.IntegerField()
    live_version = serializers.IntegerField()
    changes = ConfigChangeSchema(many=True, help_text="what changed from base_version to live_version")


class DraftInfoSchema(serializers.Serializer):
    exists = serializers.BooleanField()
    base_version = serializers.IntegerField(allow_null=True, help_text="null: saved without a base")
    based_on = serializers.IntegerField(allow_null=True, help_text="informational: the live version when first saved")
    live_version = serializers.IntegerField(help_text="0 before the first provision")
    stale = serializers.BooleanField(help_text="base_version is set and is not the live version")
    updated_by = serializers.CharField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)


STALE = OpenApiResponse(StaleSchema, description="the draft was made from a version that is no longer live")


def change_data(change: Change) -> dict:
    return {"kind": change.kind, "name": change.name, "action": change.action, "text": str(change),
            "fields": [{"field": f.field, "before": json_ready(_listed(f.before)), "after": json_ready(_listed(f.after))}
                       for f in change.fields]}


def _listed(value):
    return list(value) if isinstance(value, tuple) else value


def stale_response(stale: DraftStale) -> Response:
    changes = version_changes(before=stale.base_version, after=stale.live_version)
    return Response({"detail": f"{stale}: review what changed, then provision with confirm_stale true",
                     "code": "stale_draft", "base_version": stale.base_version, "live_version": stale.live_version,
                     "changes": [change_data(c) for c in changes]}, status=status.HTTP_409_CONFLICT)


def base_version_param(request: Request) -> int | None:
    """``?base_version=N`` as a number, None when absent; ``ConfigInvalid`` naming it otherwise."""
    raw = request.query_params.get("base_version")
    if raw is None:
        return None
    if not _NUMBER.fullmatch(raw) or int(raw) > MAX_VERSION:
        raise ConfigInvalid([Issue("base_version", "invalid",
                                   "base_version is a version number, 0 for a draft made from nothing")])
    return int(raw)


class VersionDiffView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_versions_diff",
                   parameters=[OpenApiParameter("a", OpenApiTypes.INT, OpenApiParameter.PATH,
                                                description="the version compared from (0: nothing)"),
                               OpenApiParameter("b", OpenApiTypes.INT, OpenApiParameter.PATH,
                                                description="the version compared to (0: nothing)")],
                   responses={200: DiffSchema, 404: OpenApiResponse(DetailSchema, description="no such version")},
                   summary="What changed from version a to version b, entry by entry and field by field")
    def get(self, request: Request, a: int, b: int) -> Response:
        changes = version_changes(before=a, after=b)  # ConfigNotFound: AdminView's 404
        return Response({"before": a, "after": b, "summary": summarize(changes),
                         "changes": [change_data(c) for c in changes]})


class DraftInfoView(AdminView):
    @extend_schema(tags=[TAG], operation_id="config_draft_info", responses={200: DraftInfoSchema},
                   summary="Whether there is a draft, the version it was made from and whether that is still live")
    def get(self, request: Request) -> Response:
        return Response(DraftInfoSchema(draft_info()).data)


urlpatterns = [
    path("config/draft/info", DraftInfoView.as_view(), name="config-draft-info"),
    path("config/versions/<int:a>/diff/<int:b>", VersionDiffView.as_view(), name="config-versions-diff"),
]
