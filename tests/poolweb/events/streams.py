"""Helpers for the event stream's in-process tests: channels' WebsocketCommunicator against the
whole ASGI application, events written to the outbox as a decision writes them.

Each test is a coroutine run by ``async_to_sync`` (``in_event_loop``), so the consumer's and the
relay's database calls run on the test's thread and connection. The tests' database must be
transactional (committed rows), as channels needs for ``database_sync_to_async``.
"""

from __future__ import annotations

import functools

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client

from poolweb.asgi import application
from poolweb.models import Event
from poolweb.services.events import POOL_UPDATED, REQUEST_UPDATED, publish

TIMEOUT = 3  # seconds to wait for a message that must come


@pytest.fixture(autouse=True)
def quick_stream(settings):
    """Poll often and start soon, so a test waits milliseconds, not the production defaults."""
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "POLL_MS": 10, "START_MS": 30}


def in_event_loop(test):
    @functools.wraps(test)
    def run(*args, **kwargs):
        return async_to_sync(test)(*args, **kwargs)

    return run


# -- writing events, as a decision does ---------------------------------------------------------


def _write(events: list[tuple[str, dict, object]]) -> list[int]:
    """Publish ``(type, data, owner)`` events in one committed transaction; their seqs."""
    newest = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    with transaction.atomic():
        for type, data, owner in events:
            publish(type, data, owner_id=owner.pk if owner is not None else None)
    return list(Event.objects.filter(seq__gt=newest).values_list("seq", flat=True))


write = database_sync_to_async(_write)


def pool(n: int) -> tuple[str, dict, None]:
    return POOL_UPDATED, {"name": "h100", "n": n}, None


def request_of(owner, n: int) -> tuple[str, dict, object]:
    return REQUEST_UPDATED, {"id": n, "owner": owner.username}, owner


# -- connecting ---------------------------------------------------------------------------------


def _session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(user=None, *, origin: bytes | None = b"http://testserver", host: bytes = b"testserver",
                  path: str = "/ws/events/", extra: list[tuple[bytes, bytes]] = (), app=application):
    """A connected communicator, signed in by ``user``'s session (anonymous when None), opened
    from a page of ``origin`` (None: a program, which sends no Origin) on a server at ``host``;
    ``app`` wraps the application to play a server's part."""
    headers = [(b"host", host), *extra] + ([(b"origin", origin)] if origin is not None else [])
    if user is not None:
        headers.append((b"cookie", await database_sync_to_async(_session_cookie)(user)))
    communicator = WebsocketCommunicator(app, path, headers=headers)
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    assert connected
    return communicator


async def receive(communicator, count: int) -> list[dict]:
    return [await communicator.receive_json_from(timeout=TIMEOUT) for _ in range(count)]


async def refusal(communicator) -> tuple[str, int]:
    """The error code of the refusal and the close code that follows it."""
    error = await communicator.receive_json_from(timeout=TIMEOUT)
    closed = await communicator.receive_output(timeout=TIMEOUT)
    assert error["type"] == "error" and error["message"]
    assert closed["type"] == "websocket.close"
    return error["code"], closed["code"]


async def nothing_more(communicator) -> bool:
    return await communicator.receive_nothing(timeout=0.3)


def payloads(messages: list[dict]) -> list[dict]:
    return [message["data"] for message in messages]


async def gets_next(communicator, event: tuple[str, dict, object]) -> bool:
    """Whether ``event`` (``pool(n)``, ``request_of(user, n)``), written now, is the next message the
    stream sends: the stream goes on."""
    await write([event])
    return payloads(await receive(communicator, 1)) == [event[1]]


async def resyncs_then_goes_on(communicator) -> bool:
    """Whether the stream's next message is ``resync``, and a new event still follows it."""
    return await receive(communicator, 1) == [{"type": "resync"}] and await gets_next(communicator, pool(99))

