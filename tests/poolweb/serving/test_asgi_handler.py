"""``poolweb.django_internals.SyncMiddlewareASGIHandler``, driven as the server drives it: a response in memory and a streaming
one both arrive whole, and each request's ``request_finished`` comes once, after its body is
produced (a streaming response is closed only once it has been sent)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.core import signals
from django.http import HttpResponse, StreamingHttpResponse
from django.urls import path

from poolweb.django_internals import SyncMiddlewareASGIHandler

events: list[str] = []


def plain(request):
    return HttpResponse(b"in memory")


def streamed(request):
    def parts():
        for part in (b"one ", b"two"):
            events.append(f"sent {part.decode().strip()}")
            yield part

    return StreamingHttpResponse(parts())


urlpatterns = [path("plain", plain), path("streamed", streamed)]


def finished(**kwargs) -> None:
    events.append("finished")


@pytest.fixture
def recorded():
    events.clear()
    signals.request_finished.connect(finished)
    yield events
    signals.request_finished.disconnect(finished)


async def call(url: str) -> tuple[int, bytes]:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": url, "raw_path": url.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    communicator = ApplicationCommunicator(SyncMiddlewareASGIHandler(), scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start, body = await communicator.receive_output(5), b""
    while True:
        message = await communicator.receive_output(5)
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await communicator.wait(5)
    return start["status"], body


@pytest.mark.urls(__name__)
def test_a_response_in_memory_is_closed_in_its_hop_and_sent_whole(recorded):
    assert async_to_sync(call)("/plain") == (200, b"in memory")
    assert recorded == ["finished"]


@pytest.mark.urls(__name__)
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators")
def test_a_streaming_response_is_sent_then_closed(recorded):
    assert async_to_sync(call)("/streamed") == (200, b"one two")
    assert recorded == ["sent one", "sent two", "finished"]
