"""The answers Django gives itself, outside DRF (``handler400`` … ``handler500`` in poolweb/urls.py
and ``CSRF_FAILURE_VIEW``): a foreign Host, too many query parameters, a path no route takes, a
refused CSRF check, a bug.

Under /api/ each is JSON ``{"detail": …}``, as the API's own errors; elsewhere the console's page
(templates/4xx.html, 500.html).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import csrf, defaults

from poolweb.api.errors import echo


def is_api(request: HttpRequest) -> bool:
    return request.path_info == "/api" or request.path_info.startswith("/api/")


def _detail(status: int, detail: str) -> JsonResponse:
    return JsonResponse({"detail": detail}, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return _detail(413, f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
    if isinstance(exception, DisallowedHost):
        return _detail(400, "the Host header names no site this server serves")
    if isinstance(exception, TooManyFieldsSent):
        return _detail(400, f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} query or form parameters")
    return _detail(400, "the request could not be understood")


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return _detail(403, str(exception) or "you may not do this")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return _detail(404, f"there is no API path {echo(request.path)}; see /api/v1/ and /api/docs/")


def server_error(request: HttpRequest) -> HttpResponse:
    if not is_api(request):
        return defaults.server_error(request)
    return _detail(500, "an error on the server's side; it is logged")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if not is_api(request):
        return csrf.csrf_failure(request, reason)
    return _detail(403, f"CSRF check failed: {reason}; an API client sends a bearer token")
