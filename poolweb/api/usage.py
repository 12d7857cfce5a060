"""``GET /api/v1/usage``: key-hours of a period by policy, profile, pool or user, in share and
borrowed, and each reservation's idle part (docs/usage.md), as JSON or CSV (``Accept: text/csv``
or ``?format=csv``). Any signed-in user; by user, a member sees names only where the requests'
privacy lets them (selectors/usage.py)."""

from __future__ import annotations

from django.http import Http404
from django.urls import path
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.admin_only import BAD_REQUEST
from poolweb.selectors.usage import GROUPINGS, UsageAskInvalid, parse_ask, usage_report
from poolweb.services.usage_data import CSV_NOTE, report_csv, report_data

class CSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return report_csv(data).encode()


class UsageRowSchema(serializers.Serializer):
    key = serializers.CharField()
    used = serializers.CharField(help_text="key-hours, three decimals")
    in_share = serializers.CharField(help_text="key-hours within the policy's reservations")
    borrowed = serializers.CharField(help_text="key-hours above them")
    exact = serializers.DictField(child=serializers.IntegerField(), help_text=f"used, in_share, borrowed in {CSV_NOTE}")


class UsageSchema(serializers.Serializer):
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    counted_until = serializers.DateTimeField(help_text="until, or now when that is earlier")
    by = serializers.ChoiceField(GROUPINGS)
    rows = UsageRowSchema(many=True, help_text="each also names its group under the key `by` says")
    reservations = serializers.ListField(child=serializers.DictField(),
                                         help_text="policy, scope, key, reserved, idle (key-hours), exact")
    chart = serializers.DictField(help_text="key, step_seconds, buckets, series: policy → GPU-hours per bucket")


PARAMETERS = [
    OpenApiParameter("since", OpenApiTypes.STR, description="ISO 8601 date or time; default: until − 30 days"),
    OpenApiParameter("until", OpenApiTypes.STR, description="ISO 8601 date or time; default: now"),
    OpenApiParameter("by", OpenApiTypes.STR, enum=list(GROUPINGS), description="default: policy"),
]


class UsageView(APIView):
    renderer_classes = [JSONRenderer, CSVRenderer]

    def perform_content_negotiation(self, request, force=False):
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:  # ?format= names no renderer: the caller's input, not a missing page
            raise exceptions.ValidationError({"format": [exceptions.ErrorDetail("format must be json or csv",
                                                                                "invalid_choice")]})

    def handle_exception(self, exc):
        """Every error in JSON, whatever was asked for (api.md §0), so a client reads why."""
        response = super().handle_exception(exc)
        self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return response

    @extend_schema(tags=["live"], operation_id="usage_retrieve", parameters=PARAMETERS,
                   responses={(200, "application/json"): UsageSchema, (200, "text/csv"): OpenApiTypes.STR,
                              400: BAD_REQUEST},
                   summary="Key-hours of a period, in share and borrowed, and idle reservations")
    def get(self, request):
        try:
            ask = parse_ask(request.query_params, timezone.now())
        except UsageAskInvalid as invalid:
            detail: dict[str, list] = {}
            for error in invalid.errors:
                detail.setdefault(error.field, []).append(exceptions.ErrorDetail(error.message, code=error.code))
            raise exceptions.ValidationError(detail)
        report = usage_report(user=request.user, since=ask.since, until=ask.until, by=ask.by, now=timezone.now())
        return Response(report_data(report))


urlpatterns = [path("usage", UsageView.as_view(), name="usage")]
