"""Live state (api.md §2): ``GET /pools``, ``GET /pools/{name}/queue``, ``GET /policies``.

Any signed-in user may read them; anonymous callers get 401. Quantities are JSON numbers.

A pool's queue is shared: every signed-in user sees every pending entry of it, owner username
and request name included, so people can tell whose work is ahead of theirs (as a cluster's
queue listing does). Request details beyond that (labels, lease) stay behind ``/requests``.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from poolweb.api.reads import CatchUpOnRead
from poolweb.api.representations import LivePoolSerializer, PolicyStateSerializer, QuantitiesField
from poolweb.selectors.live import live_pool_exists, policy_states, pool_queue, pool_states
from reconcile.document import NAME_PATTERN


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Documents poolweb.api.auth.BearerTokenAuthentication (``Authorization: Bearer <token>``)."""

    target_class = "poolweb.api.auth.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "A token printed by `manage.py create_api_token USERNAME`."}


class QueueEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    policy = serializers.CharField()
    profile = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    resources = QuantitiesField()
    preemptible = serializers.BooleanField()
    position = serializers.IntegerField(allow_null=True, help_text="1-based place in the pool's service order.")
    reason = serializers.CharField(help_text="Why it waits (spec §9), e.g. WaitingForCapacity.")
    message = serializers.CharField()
    submitted_at = serializers.DateTimeField()


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


class PoolQueueView(CatchUpOnRead, ListAPIView):
    serializer_class = QueueEntrySerializer

    def get_queryset(self):
        return pool_queue(self.kwargs["name"])

    def list(self, request: Request, *args, **kwargs) -> Response:
        name = self.kwargs["name"]
        if not live_pool_exists(name):
            raise NotFound(f"no pool {name!r} in the live configuration")
        return super().list(request, *args, **kwargs)

    @extend_schema(operation_id="pools_queue_list", parameters=[POOL_NAME], tags=["live"],
                   responses={200: QueueEntrySerializer(many=True), 401: LiveErrorSerializer,
                              404: LiveErrorSerializer})
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class PolicyListView(CatchUpOnRead, APIView):
    @extend_schema(operation_id="policies_list", tags=["live"],
                   responses={200: PolicyStateSerializer(many=True), 401: LiveErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(PolicyStateSerializer(policy_states(), many=True).data)


urlpatterns = [
    path("pools", PoolListView.as_view(), name="pools"),
    path("pools/<str:name>/queue", PoolQueueView.as_view(), name="pool-queue"),
    path("policies", PolicyListView.as_view(), name="policies"),
]
