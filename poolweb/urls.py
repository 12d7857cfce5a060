from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from poolweb.accounts import account_paths
from poolweb.api.errors import unknown_path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(account_paths())),
    path("api/v1/", include("poolweb.api.urls")),
    # The contract is public; every endpoint it describes still asks who is calling.
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema", permission_classes=[AllowAny]),
         name="api-docs"),
    re_path(r"^api(/v1)?/?$", RedirectView.as_view(url="/api/v1/")),
    re_path(r"^api/(?P<path>.*)$", unknown_path),  # a JSON 404, as the API's own
    path("", include("poolweb.console.urls")),
]
