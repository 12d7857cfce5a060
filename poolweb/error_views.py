"""The answers Django gives itself, outside DRF (``handler400`` … ``handler500`` in poolweb/urls.py
and ``CSRF_FAILURE_VIEW``): a foreign Host, too many query parameters, a path no route takes, a
refused CSRF check, a bug, a database that is down.

Under /api/ each is JSON ``{"detail": …}``, as the API's own errors; elsewhere the console's page
(templates/4xx.html, 500.html, 503.html). A database that is down or restarting is a 503 with
``Retry-After`` on both: the client did nothing wrong and may try again shortly.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.views import csrf, defaults

from poolweb.api.errors import echo

# What a database that is down, restarting or dropped the connection raises (a lock timeout on
# SQLite too): worth a retry, not a traceback.
DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 5


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
    # Django calls this while it handles the exception, so sys.exc_info() is the error behind it.
    if isinstance(sys.exc_info()[1], DATABASE_DOWN):
        return database_unavailable(request)
    if not is_api(request):
        return defaults.server_error(request)
    return _detail(500, "an error on the server's side; it is logged")


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503; the page is rendered without the request, whose user and session would need the database."""
    if is_api(request):
        response = _detail(503, "the database is unavailable; try again shortly")
    else:
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    if not is_api(request):
        return csrf.csrf_failure(request, reason)
    return _detail(403, f"CSRF check failed: {reason}; an API client sends a bearer token")
