"""``GET /api/v1/``: what the API has, as links — a starting point for a person with curl and for
a client that follows links rather than building paths."""

from __future__ import annotations

from django.urls import path, reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

# family → the route name of its entry point
RESOURCES = {
    "config": "config", "config_draft": "config-draft", "config_versions": "config-versions",
    "management": "management", "requests": "request-list", "pools": "pools", "policies": "policies",
    "tokens": "tokens", "me": "me", "health": "health", "audit": "audit", "schema": "schema", "docs": "api-docs",
}


class ApiIndexView(APIView):
    permission_classes = [AllowAny]  # links only: every one of them still asks who is calling

    @extend_schema(tags=["index"], operation_id="api_index", summary="Links to every part of the API",
                   responses={200: inline_serializer("ApiIndex", {
                       **{name: serializers.URLField() for name in RESOURCES},
                       "events": serializers.CharField(help_text="the event stream's websocket URL")})})
    def get(self, request):
        links = {name: request.build_absolute_uri(reverse(route)) for name, route in RESOURCES.items()}
        scheme = "wss" if request.is_secure() else "ws"
        return Response({**links, "events": f"{scheme}://{request.get_host()}/ws/events/"})


urlpatterns = [path("", ApiIndexView.as_view(), name="api-index")]
