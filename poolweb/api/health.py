"""``GET /api/v1/health`` (admin only): the database, the last pass, the worker's last sign of
life, and the invariant checker's result on the stored state (selectors/health.py). 200 when all
is well, 503 when something is not, with the same body, so a probe needs only the status."""

from __future__ import annotations

from django.urls import path
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.selectors.health import Health, health
from poolweb.services.payloads import api_time


class ViolationSchema(serializers.Serializer):
    invariant = serializers.CharField(help_text="I-1 … I-8 of the scheduling rules")
    message = serializers.CharField()


class HealthSchema(serializers.Serializer):
    ok = serializers.BooleanField()
    database = serializers.DictField(help_text='{"ok": bool, "vendor": "sqlite" | "postgresql"}')
    last_pass = serializers.DictField(allow_null=True, help_text="at, duration_ms, conflicts, trigger, grants, "
                                                                 "preemptions; null before the first pass that wrote")
    worker = serializers.DictField(help_text='{"ok", "passes": "worker" | "inline", "last_seen_at"}')
    invariants = serializers.DictField(help_text='{"ok", "checked", "violations": [{invariant, message}], '
                                                 '"live", "pending"}')


class HealthView(APIView):
    permission_classes = [IsAdminUser]

    @extend_schema(tags=["operations"], operation_id="health_retrieve",
                   responses={200: HealthSchema, 503: OpenApiResponse(HealthSchema, description="something is wrong")},
                   summary="Database, last pass, worker and invariants of the stored state")
    def get(self, request):
        now = timezone.now()
        report = health(now)
        ok = report.ok(now)
        return Response(health_data(report, now, ok), status=status.HTTP_200_OK if ok else 503)


def health_data(report: Health, now, ok: bool) -> dict:
    last, state = report.last_pass, report.state
    return {
        "ok": ok,
        "database": {"ok": report.database, "vendor": report.vendor},
        "last_pass": None if last is None else {
            "at": api_time(last.started_at), "duration_ms": last.duration_ms, "conflicts": last.conflicts,
            "trigger": last.trigger, "grants": last.grants, "preemptions": last.preemptions},
        "worker": {"ok": report.worker_ok(now), "passes": report.passes, "last_seen_at": api_time(report.worker_seen_at)},
        "invariants": None if state is None else {
            "ok": state.ok, "checked": list(state.checked), "live": state.live, "pending": state.pending,
            "violations": [{"invariant": v.invariant, "message": v.message} for v in state.violations]},
    }


urlpatterns = [path("health", HealthView.as_view(), name="health")]
