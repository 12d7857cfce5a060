"""HTTP and websockets in one ASGI application (``manage.py serve`` runs it under uvicorn)."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

from asgiref.sync import ThreadSensitiveContext  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402


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


# The admin's and the API docs' static files come from the same process: `make run` needs no
# separate web server in front.
django_application = LongLivedThreads(ASGIStaticFilesHandler(get_asgi_application()),
                                      settings.POOLWEB["HTTP_THREADS"])

# These use the models, so they come once get_asgi_application has set Django up.
from channels.auth import AuthMiddlewareStack  # noqa: E402

from poolweb.realtime.routing import websocket_urlpatterns  # noqa: E402

# The event stream (api.md §3). AuthMiddlewareStack reads the console's session from the
# cookie; a connection without one signs in with a token message instead (poolweb.realtime).
application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
})
