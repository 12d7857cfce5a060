from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from poolweb.accounts import AdminSignInForm, account_paths
from poolweb.directory.oidc import oidc_paths
from poolweb.metrics.views import metrics


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers and feed readers ask for /favicon.ico whatever a page links: the console's logo
    (not permanent: the static file's address may change)."""
    return redirect(static("console/logo.svg"))


# The admin's sign-in says when the directory is down or a name is taken, as /accounts/login/ does,
# and offers the OpenID Connect provider when one is configured.
admin.site.login_form = AdminSignInForm
admin.site.login_template = "admin/poolweb_login.html"

urlpatterns = [
    path("favicon.ico", favicon),
    path("admin/", admin.site.urls),
    path("accounts/", include(account_paths() + oidc_paths())),  # oidc/login/, oidc/callback/
    path("api/v1/", include("poolweb.api.urls")),
    path("metrics", metrics, name="metrics"),  # Prometheus's conventional address, outside the API
    # The contract is public; every endpoint it describes still asks who is calling.
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny]), name="schema"),
    # Swagger UI with its settings as a script of their own (?script), not inline: the page's policy
    # lets no inline script run (poolweb/content_policy.py).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", permission_classes=[AllowAny]),
         name="api-docs"),
    re_path(r"^api(/v1)?/?$", RedirectView.as_view(url="/api/v1/")),
    path("", include("poolweb.console.urls")),
]

# Django's own answers (a foreign Host, a path no route takes, a bug, a database that is down):
# JSON under /api/, the console's pages elsewhere.
handler400 = "poolweb.error_views.bad_request"
handler403 = "poolweb.error_views.permission_denied"
handler404 = "poolweb.error_views.page_not_found"
handler500 = "poolweb.error_views.server_error"
