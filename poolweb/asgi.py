"""HTTP and websockets in one ASGI application (``manage.py serve`` runs it under uvicorn)."""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.core.handlers.base import BaseHandler  # noqa: E402
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


class OneHop(ASGIHandler):
    """Django's ASGI handler with its middleware and the view run in one hop to a thread.

    Django's own loads the middleware in async mode: every middleware of Django's is sync, so
    each ``process_request`` and ``process_response`` hopped from the event loop to the view's
    thread and back, a dozen hops a request before the view's own (measured: the hops, their
    futures and the GIL handed to and fro were a third of the web process's time at 4 clients).
    Loaded in sync mode, the chain runs as under WSGI: one hop in, one out.
    """

    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


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


django.setup(set_prefix=False)  # as get_asgi_application does
django_application = ChunkedBodies(LongLivedThreads(StaticFiles(OneHop()),
                                                    settings.POOLWEB["HTTP_THREADS"]))

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
