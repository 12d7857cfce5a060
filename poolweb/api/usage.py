"""``GET /api/v1/usage``: key-hours of a period by policy, profile, pool or user, in share and
borrowed, and each reservation's idle part (docs/usage.md), as JSON or CSV (``Accept: text/csv``
or ``?format=csv``). Any signed-in user; by user, a member sees names only where the requests'
privacy lets them (selectors/usage.py)."""

from __future__ import annotations

import csv
import io

from django.http import Http404
from django.urls import path
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.admin_only import BAD_REQUEST
from poolweb.selectors.usage import (
    GROUPINGS, ReservationRow, UsageAskInvalid, UsageReport, UsageRow, hours_text, parse_ask, usage_report,
)
from poolweb.services.payloads import api_time

MEASURES = ("used", "in_share", "borrowed")
CSV_NOTE = "milli-units × seconds"


def row_data(row: UsageRow, by: str) -> dict:
    data = {by: row.group, "key": row.key}
    data.update({name: hours_text(getattr(row, name)) for name in MEASURES})
    data["exact"] = {name: getattr(row, name) for name in MEASURES}
    return data


def reservation_data(row: ReservationRow) -> dict:
    return {"policy": row.policy, "scope": row.scope, "key": row.key, "reserved": hours_text(row.reserved),
            "idle": hours_text(row.idle), "exact": {"reserved": row.reserved, "idle": row.idle}}


def report_data(report: UsageReport) -> dict:
    return {
        "since": api_time(report.since), "until": api_time(report.until),
        "counted_until": api_time(report.counted_until), "by": report.by,
        "rows": [row_data(row, report.by) for row in report.rows],
        "reservations": [reservation_data(row) for row in report.reservations],
        "chart": {"key": "gpu", "step_seconds": report.bucket_seconds,
                  "buckets": [api_time(b) for b in report.buckets],
                  "series": {policy: [hours_text(v) for v in values] for policy, values in report.series.items()}},
    }


def report_csv(data: dict) -> str:
    """The rows as CSV: the group, the key, key-hours, then the exact milli-unit-seconds."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    by = data["by"]
    writer.writerow([by, "key", *(f"{m}_hours" for m in MEASURES), *(f"{m}_milli_unit_seconds" for m in MEASURES)])
    for row in data["rows"]:
        writer.writerow([row[by] if row[by] is not None else "", row["key"], *(row[m] for m in MEASURES),
                         *(row["exact"][m] for m in MEASURES)])
    return out.getvalue()


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
