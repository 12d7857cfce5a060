"""HTTP and websockets in one ASGI application (``manage.py serve`` runs it under uvicorn)."""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.exceptions import SuspiciousFileOperation  # noqa: E402
from django.http import Http404  # noqa: E402

from poolweb.django_internals import SyncMiddlewareASGIHandler  # noqa: E402


class StaticFiles(ASGIStaticFilesHandler):
    """The admin's and the API docs' static files from the same process (`make run` needs no
    web server in front). A path that climbs out of the static directories (``..%2f``) is a
    file that is not there: 404, not Django's SuspiciousFileOperation as a 500. A file is
    served outside the middleware, so ``nosniff`` is added here: a browser takes it for the type
    its name gives, never guessing a script or a page from its content."""

    def serve(self, request):
        try:
            response = super().serve(request)
        except SuspiciousFileOperation:
            raise Http404("no such static file") from None
        response["X-Content-Type-Options"] = "nosniff"
        return response


class LongLivedThreads:
    """Django's HTTP handling on a fixed set of long-lived threads, one request at a time each.

    Django's ASGI handler opens a ``ThreadSensitiveContext`` per request, and asgiref gives each
    such context a new single-thread executor: every request's view ran in a new thread, so with
    thread-local connections every request opened a new database connection (on SQLite a connect
    and three pragmas, about 2 ms measured, a fifth of a ``GET /management``) and
    ``CONN_MAX_AGE`` could keep none. The outermost context wins, so entering one with an
    executor of ours first makes Django's a no-op: a request runs on one of ``threads`` threads,
    each keeping its connection. A request waits (in the event loop, holding no thread) while all
    are busy.
    """

    def __init__(self, application, threads: int) -> None:
        self.application = application
        self.threads = threads
        self._idle: asyncio.Queue[ThreadPoolExecutor] | None = None

    async def __call__(self, scope, receive, send) -> None:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for n in range(self.threads):
                self._idle.put_nowait(ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"poolweb-http-{n}"))
        executor = await self._idle.get()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.application(scope, receive, send)
        finally:
            self._idle.put_nowait(executor)


class WholeBodies:
    """Reads a request's whole body in the event loop, before a view thread is taken, and hands
    it on with its length: 408 when the client has not sent it within
    ``POOLWEB_HTTP_BODY_TIMEOUT_SECONDS`` of its head, 413 above ``DATA_UPLOAD_MAX_MEMORY_SIZE``.

    A thread taken first (``LongLivedThreads``) waited for the body with it: two clients sending
    slowly held both of a process's threads and stalled every other request. A body sent without
    a length (``Transfer-Encoding: chunked``) reached Django without ``Content-Length``, which
    Django and DRF take for no body: a submission read as "policy is required"."""

    def __init__(self, application, timeout: float) -> None:
        self.application = application
        self.timeout = timeout

    async def __call__(self, scope, receive, send) -> None:
        limit = body_limit()
        try:
            async with asyncio.timeout(self.timeout):
                body = await _read_body(receive, limit)
        except TimeoutError:  # and the connection closed: the client is not sending its body
            return await _refuse(send, scope, 408, f"the request body was not sent within {self.timeout:g} s",
                                 close=True)
        except BodyTooLarge:  # the server reads the rest and drops it, so the client reads this answer
            return await _refuse(send, scope, 413, f"the request body is larger than {limit} bytes")
        if body is None:
            return  # the client went away
        if body and not any(name.lower() == b"content-length" for name, _ in scope["headers"]):
            scope = {**scope, "headers": [*scope["headers"], (b"content-length", str(len(body)).encode())]}
        await self.application(scope, _replay(body, receive), send)


class BodyTooLarge(Exception):
    pass


async def _read_body(receive, limit: int) -> bytes | None:
    """The whole body, or None when the client disconnects first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            raise BodyTooLarge
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive):
    """``receive`` that gives the body read already, then whatever comes next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed():
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse(send, scope, status: int, detail: str, *, close: bool = False) -> None:
    """An answer before the body is read whole: JSON under /api/, as the API's errors are, plain
    text elsewhere."""
    if scope["path"].startswith("/api/"):
        content, content_type = json.dumps({"detail": detail}).encode(), b"application/json"
    else:
        content, content_type = detail.encode(), b"text/plain; charset=utf-8"
    headers = [(b"content-type", content_type), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status,
                "headers": headers + [(b"connection", b"close")] if close else headers})
    await send({"type": "http.response.body", "body": content})


django.setup(set_prefix=False)  # as get_asgi_application does
django_application = WholeBodies(LongLivedThreads(StaticFiles(SyncMiddlewareASGIHandler()), settings.POOLWEB["HTTP_THREADS"]),
                                 settings.POOLWEB["HTTP_BODY_TIMEOUT_SECONDS"])

# These use the models, so they come once Django is set up.
from channels.auth import AuthMiddlewareStack  # noqa: E402

from poolweb.api.parsers import body_limit  # noqa: E402
from poolweb.realtime.routing import websocket_urlpatterns  # noqa: E402

# The event stream (docs/events.md). AuthMiddlewareStack reads the console's session from the
# cookie; a connection without one signs in with a token message instead (poolweb.realtime).
application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
})
