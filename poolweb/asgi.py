"""HTTP and websockets in one ASGI application (daphne serves it)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

import json  # noqa: E402

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.exceptions import SuspiciousFileOperation  # noqa: E402
from django.http import Http404  # noqa: E402


class StaticFiles(ASGIStaticFilesHandler):
    """The admin's and the API docs' static files from the same process (`make run` needs no
    web server in front). A path that climbs out of the static directories (``..%2f``) is a
    file that is not there: 404, not Django's SuspiciousFileOperation as a 500."""

    def serve(self, request):
        try:
            return super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None


class ChunkedBodies:
    """Reads a body sent without ``Content-Length`` (``Transfer-Encoding: chunked``) and hands
    it on with its length, or answers 413 above ``DATA_UPLOAD_MAX_MEMORY_SIZE``. Django (and
    DRF) take a request without a length for one without a body, so such a body was read as
    empty: a submission became "policy is required", and a huge one a 400 instead of a 413."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or any(name.lower() == b"content-length" for name, _ in scope["headers"]):
            return await self.application(scope, receive, send)
        limit = body_limit()
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                return await _too_large(send, limit)
            if not message.get("more_body", False):
                break
        if body:
            scope = {**scope, "headers": [*scope["headers"], (b"content-length", str(len(body)).encode())]}
        await self.application(scope, _replay(bytes(body), receive), send)


def _replay(body: bytes, receive):
    """``receive`` that gives the body read already, then whatever comes next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed():
        return pending.pop() if pending else await receive()

    return replayed


async def _too_large(send, limit: int) -> None:
    content = json.dumps({"detail": f"the request body is larger than {limit} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]})
    await send({"type": "http.response.body", "body": content})


django_application = ChunkedBodies(StaticFiles(get_asgi_application()))

# These use the models, so they come once get_asgi_application has set Django up.
from channels.auth import AuthMiddlewareStack  # noqa: E402

from poolweb.api.parsers import body_limit  # noqa: E402
from poolweb.realtime.routing import websocket_urlpatterns  # noqa: E402

# The event stream (api.md §3). AuthMiddlewareStack reads the console's session from the
# cookie; a connection without one signs in with a token message instead (poolweb.realtime).
application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
})
