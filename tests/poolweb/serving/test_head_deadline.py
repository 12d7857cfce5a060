"""``poolweb.http_protocol.HeadDeadline`` driven as uvicorn drives it, on a transport of our own:
it leans on uvicorn's private protocol class, so these fail when uvicorn changes under it.
tests/poolweb/serving/test_http_server.py shows the same against a running server."""

from __future__ import annotations

import asyncio

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from poolweb.http_protocol import HOOKS, HeadDeadline

BOUND = 0.1  # seconds: the head's deadline here
PAST_IT = 3 * BOUND


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written, self.closed = b"", False

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def write(self, data) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def no_content(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def on_a_loop(scenario):
    """The test runs ``scenario`` in an event loop of its own (the suite has no asyncio plugin)."""
    def test() -> None:
        asyncio.run(scenario())
    return test


@pytest.fixture(autouse=True)
def short_bound(settings):
    settings.POOLWEB = {**settings.POOLWEB, "HTTP_HEADER_TIMEOUT_SECONDS": BOUND}


def opened() -> tuple[HeadDeadline, Transport]:
    config = Config(app=no_content, http=HeadDeadline, lifespan="off", timeout_keep_alive=75)
    config.load()
    protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


def test_it_overrides_hooks_uvicorn_still_has():
    assert issubclass(HeadDeadline, HttpToolsProtocol)
    assert all(callable(getattr(HttpToolsProtocol, hook, None)) for hook in HOOKS)
    overridden = {name for name in vars(HeadDeadline) if not name.startswith("__") and hasattr(HttpToolsProtocol, name)}
    assert overridden == set(HOOKS)


@on_a_loop
async def test_a_connection_that_sends_nothing_is_closed_after_the_bound():
    protocol, transport = opened()
    await asyncio.sleep(PAST_IT)
    assert transport.closed and transport.written == b""


@on_a_loop
async def test_a_head_sent_in_parts_has_the_bound_from_the_connection_opening():
    protocol, transport = opened()
    for part in (b"GET / HTTP/1.1\r\n", b"Host: x\r\n", b"Accept: */*\r\n"):
        await asyncio.sleep(BOUND / 4)  # each part well within the bound, the whole not
        protocol.data_received(part)
    await asyncio.sleep(BOUND)
    assert transport.closed and transport.written == b""


@on_a_loop
async def test_a_whole_head_is_answered_and_the_connection_kept_past_the_bound():
    protocol, transport = opened()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.sleep(PAST_IT)
    assert transport.written.startswith(b"HTTP/1.1 204 ")
    assert not transport.closed


@on_a_loop
async def test_a_later_head_on_a_kept_alive_connection_has_the_bound_from_its_first_byte():
    protocol, transport = opened()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.sleep(PAST_IT)  # idle between requests: the keep-alive timeout's, not the head's
    protocol.data_received(b"GET /next HTTP/1.1\r\nHo")
    assert not transport.closed
    await asyncio.sleep(PAST_IT)
    assert transport.closed and transport.written.count(b"HTTP/1.1 204 ") == 1
