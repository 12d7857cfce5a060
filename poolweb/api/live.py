"""Live state (docs/api.md §4): ``GET /pools``, ``GET /pools/{name}/queue``, ``GET /pools/{name}/running``,
``GET /policies``.

Any signed-in user may read them; anonymous callers get 401. Quantities are JSON numbers.

A pool's queue is shared: every signed-in user sees every pending entry of it — every request the
pool may serve, wherever it waits (decision 119) — in order, so people can tell how much is ahead
of theirs. Each entry is the request object, whole for the
reader's own requests, their teams' (a policy whose group they are in) and for admins; of
anyone else's only the public fields (docs/api.md §4, ``services.payloads.request_data_for``).
"""

from __future__ import annotations

from django.urls import path
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.errors import echo
from poolweb.api.reads import CatchUpOnRead
from poolweb.api.representations import LivePoolSerializer, PolicyStateSerializer, RequestSerializer
from poolweb.models import Request as RequestRow
from poolweb.selectors.live import live_pool_exists, policy_states, pool_queue, pool_running, pool_states
from poolweb.selectors.requests import audience_of
from poolweb.selectors.versions import live_config, live_engine_version
from poolweb.selectors.burns import budget_burns
from poolweb.services.budgets import burn_data
from poolweb.services.payloads import PUBLIC_REQUEST_FIELDS, request_data_for
from reconcile import Config
from reconcile.document import NAME_PATTERN


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Documents poolweb.api.auth.BearerTokenAuthentication (``Authorization: Bearer <token>``)."""

    target_class = "poolweb.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "A token printed by `manage.py create_api_token USERNAME`."}


class QueueEntrySerializer(RequestSerializer):
    """A request object; another team's shows only ``PUBLIC_REQUEST_FIELDS``. (Only written, never
    read: the other fields are not read-only here only so the schema can say they may be absent.)"""

    def get_fields(self):
        fields = super().get_fields()
        for name, field in fields.items():
            if name not in PUBLIC_REQUEST_FIELDS:
                field.read_only, field.required = False, False
                field.help_text = "only on your own requests, your teams' (and for admins)"
        return fields


class LiveErrorSerializer(serializers.Serializer):
    """401 (no or a bad token) and 404 (no such pool)."""

    detail = serializers.CharField()


POOL_NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, pattern=f"^{NAME_PATTERN.pattern}$",
                             description="A pool of the live configuration.")


class PoolListView(CatchUpOnRead, APIView):
    @extend_schema(operation_id="pools_list", tags=["live"],
                   responses={200: LivePoolSerializer(many=True), 401: LiveErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(LivePoolSerializer(pool_states(), many=True).data)


class PoolQueueView(CatchUpOnRead, GenericAPIView):
    serializer_class = QueueEntrySerializer
    queryset = RequestRow.objects.none()  # for the schema; reads go through the selector

    def rows(self, name: str, config: Config):
        return pool_queue(name, config)

    @extend_schema(operation_id="pools_queue_list", parameters=[POOL_NAME], tags=["live"],
                   responses={200: QueueEntrySerializer(many=True), 401: LiveErrorSerializer,
                              404: LiveErrorSerializer})
    def get(self, request: Request, name: str) -> Response:
        config = live_config()
        if not live_pool_exists(name, config):
            raise NotFound(f"no pool {echo(name)} in the live configuration")
        audience = audience_of(request.user)
        page = self.paginate_queryset(self.rows(name, config))
        return self.get_paginated_response([request_data_for(row, audience) for row in page])


class PoolRunningView(PoolQueueView):
    """The pool's live requests, oldest grant first (decision 51), with the queue's privacy."""

    def rows(self, name: str, config: Config):
        return pool_running(name)

    @extend_schema(operation_id="pools_running_list", parameters=[POOL_NAME], tags=["live"],
                   responses={200: QueueEntrySerializer(many=True), 401: LiveErrorSerializer,
                              404: LiveErrorSerializer})
    def get(self, request: Request, name: str) -> Response:
        return super().get(request, name)


class PolicyListView(CatchUpOnRead, APIView):
    @extend_schema(operation_id="policies_list", tags=["live"],
                   responses={200: PolicyStateSerializer(many=True), 401: LiveErrorSerializer})
    def get(self, request: Request) -> Response:
        version = live_engine_version()
        burns = budget_burns(version.config, timezone.now())
        data = PolicyStateSerializer(policy_states(version=version), many=True).data
        for entry in data:  # a policy without a budget has no such field: its entry is as before budgets
            if entry["name"] in burns:
                entry["budget"] = burn_data(burns[entry["name"]])
        return Response(data)


urlpatterns = [
    path("pools", PoolListView.as_view(), name="pools"),
    path("pools/<str:name>/queue", PoolQueueView.as_view(), name="pool-queue"),
    path("pools/<str:name>/running", PoolRunningView.as_view(), name="pool-running"),
    path("policies", PolicyListView.as_view(), name="policies"),
]
