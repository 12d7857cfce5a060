"""uvicorn's HTTP protocol (httptools) with a deadline on the request head.

uvicorn closes a kept-alive connection left idle, but has no bound on the head: a connection that
opens and sends nothing, or sends its head a byte at a time, is kept for as long as its client
likes. Here the head must be complete within ``POOLWEB_HTTP_HEADER_TIMEOUT_SECONDS`` of the
connection opening (its first request) or of its first byte (a later request on a kept-alive
connection), or the connection is closed. Once the head is in, the body's deadline is the
application's (``poolweb.asgi.WholeBodies``).

The one place that leans on uvicorn's internals: ``serve`` names this class as uvicorn's
``--http``, and it overrides the protocol's ``HOOKS``, which
tests/poolweb/test_http_protocol.py checks are still there and still called as this expects.
"""

from __future__ import annotations

import asyncio

from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HOOKS = ("connection_made", "on_message_begin", "on_headers_complete", "connection_lost")


class HeadDeadline(HttpToolsProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout: float = settings.POOLWEB["HTTP_HEADER_TIMEOUT_SECONDS"]
        self.head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_deadline is None:  # a later request: from its first byte (the first one's runs already)
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def head_timed_out(self) -> None:
        self.head_deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def _arm(self) -> None:
        self.head_deadline = self.loop.call_later(self.head_timeout, self.head_timed_out)

    def _disarm(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None
