"""/api/v1: one module of routes per endpoint family."""

from django.urls import include, path

urlpatterns = [
    path("", include("poolweb.api.index")),
    path("", include("poolweb.api.config")),
    path("", include("poolweb.api.versions")),
    path("", include("poolweb.api.requests")),
    path("", include("poolweb.api.request_batch")),
    path("", include("poolweb.api.request_actions")),
    path("", include("poolweb.api.live")),
    path("", include("poolweb.api.tokens")),
    path("", include("poolweb.api.health")),
    path("", include("poolweb.api.me")),
    path("", include("poolweb.api.audit")),
    path("", include("poolweb.api.usage")),
]
