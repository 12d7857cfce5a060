"""The ``Content-Security-Policy`` of every page Django serves (Django 5.2 has none built in).

The console is the console's own ES modules and stylesheet from /static/, with fetch and the event
stream to this origin: a script injected into a page would not run, nor send anything elsewhere.
The admin keeps to the same. Swagger UI at /api/docs/ (drf-spectacular-sidecar) brings an inline
``<style>`` in its page and styles its own elements, so there styles may be inline.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

_COMMON = ("default-src 'self'", "script-src 'self'", "img-src 'self' data:", "connect-src 'self'",
           "object-src 'none'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'")
CONSOLE = "; ".join((*_COMMON, "style-src 'self'",
                     # The usage bars' widths, computed on the server: an attribute runs no script and,
                     # with the sources above, loads nothing from elsewhere (<style> stays refused).
                     "style-src-attr 'unsafe-inline'"))
API_DOCS = "; ".join((*_COMMON, "style-src 'self' 'unsafe-inline'"))


class ContentSecurityPolicy(MiddlewareMixin):
    """A ``MiddlewareMixin``, as poolweb.accounts' middleware, so it runs in either mode without a hop."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        policy = API_DOCS if request.path_info.startswith("/api/docs/") else CONSOLE
        response.setdefault("Content-Security-Policy", policy)
        return response
