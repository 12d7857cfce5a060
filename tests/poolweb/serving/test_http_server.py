"""HTTP as ``serve`` serves it (uvicorn), raw: bodies sent chunked or slowly, heads sent slowly,
paths that climb out of the static files, a Host header that is not ours. Each must get an honest
status, and the log one line at most; a slow client must not hold up anyone else."""

from __future__ import annotations

import http.client
import json
import select
import socket
from collections.abc import Iterable, Iterator

import pytest

from poolweb.models import Request as RequestRow
from poolweb.services.tokens import token_issue
from tests.live_server import LiveServer

from tests.poolweb import processes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
HEAD_SECONDS, BODY_SECONDS = 3, 5  # the server's bounds here; well above a prompt answer
PROMPT_SECONDS = 2.5  # an answer to anyone else while the slow clients wait: below both bounds
SLOW_CLIENT_TIMEOUT = 20  # how long a slow client waits for the server to give up on it


@pytest.fixture
def server(transactional_db, tmp_path) -> Iterator[LiveServer]:
    with processes.live_server(tmp_path, web_only=True, POOLWEB_HTTP_HEADER_TIMEOUT_SECONDS=str(HEAD_SECONDS),
                               POOLWEB_HTTP_BODY_TIMEOUT_SECONDS=str(BODY_SECONDS)) as running:
        yield running


def call(server, method: str, path: str, body: bytes | Iterable[bytes] | None = None,
         headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, bytes]:
    """One request; an iterable body goes out with ``Transfer-Encoding: chunked``."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        chunked = body is not None and not isinstance(body, bytes)
        connection.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def chunks(data: bytes, size: int = 7) -> Iterator[bytes]:
    return (data[i:i + size] for i in range(0, len(data), size))


def test_a_chunked_submission_is_read_whole(server, provisioned, bob):
    token = token_issue(user=bob)
    body = json.dumps({"policy": "dev", "profile": "half", "name": "chunked"}).encode()

    status, content = call(server, "POST", "/api/v1/requests", chunks(body),
                           {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})

    assert status == 201, content
    assert json.loads(content)["name"] == "chunked"
    assert RequestRow.objects.get().name == "chunked"


def test_a_chunked_body_above_the_limit_is_413_not_a_misread(server, provisioned, bob):
    token = token_issue(user=bob)
    body = b'{"policy": "dev", "profile": "half", "name": "' + b"x" * (5 * 1024 * 1024) + b'"}'

    status, content = call(server, "POST", "/api/v1/requests", chunks(body, 64 * 1024),
                           {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})

    assert status == 413, content
    assert "larger than" in json.loads(content)["detail"]
    assert not RequestRow.objects.exists()


def test_a_body_with_its_length_is_read_as_before(server, provisioned, bob):
    token = token_issue(user=bob)

    status, content = call(server, "POST", "/api/v1/requests", b'{"policy": "dev", "profile": "half"}',
                           {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})

    assert status == 201, content


def test_a_path_out_of_the_static_files_and_a_foreign_host_are_answered_quietly(server):
    climbing = call(server, "GET", "/static/..%2f..%2fetc%2fpasswd")
    foreign = call(server, "GET", "/api/v1/pools", headers={"Host": "evil.example"})
    served = call(server, "GET", "/static/rest_framework/css/bootstrap.min.css")

    assert climbing[0] == 404 and b"root:" not in climbing[1]
    assert foreign[0] == 400
    assert served[0] in (200, 404)  # the static files may not be collected here; never a 500
    output = server.stop()
    assert "Traceback" not in output, output
    assert sum("evil.example" in line for line in output.splitlines()) <= 1, output


def slow_body(server, path: str) -> socket.socket:
    """A POST whose body stops after its first byte, once the application waits for it: the head
    asks to continue, and uvicorn says "100 Continue" when the application first reads the body."""
    client = socket.create_connection(("127.0.0.1", server.port), timeout=SLOW_CLIENT_TIMEOUT)
    client.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: 100\r\nExpect: 100-continue\r\n\r\n".encode())
    assert client.recv(64).startswith(b"HTTP/1.1 100 Continue")
    client.sendall(b"{")
    return client


def slow_head(server, sent: bytes) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", server.port), timeout=SLOW_CLIENT_TIMEOUT)
    client.sendall(sent)
    return client


def answered(clients: list[socket.socket]) -> list[socket.socket]:
    """Those of ``clients`` the server has answered or closed, now."""
    return select.select(clients, [], [], 0)[0]


def until_closed(client: socket.socket) -> bytes:
    """Everything the server sends before it closes the connection."""
    received = b""
    while chunk := client.recv(4096):
        received += chunk
    client.close()
    return received


def test_two_slow_bodies_hold_up_no_one_and_get_408_after_the_bound(server, provisioned, bob):
    """A process has two view threads: a thread taken before the body was read was held for as
    long as its client took to send it, so two slow clients stalled every other request."""
    api, page = slow_body(server, "/api/v1/requests"), slow_body(server, "/accounts/login/")

    status, _ = call(server, "GET", "/api/v1/pools", headers={"Authorization": f"Bearer {token_issue(user=bob)}"},
                     timeout=PROMPT_SECONDS)

    assert status == 200
    assert answered([api, page]) == []  # they are still waiting, within the bound
    api_answer, page_answer = until_closed(api), until_closed(page)
    assert api_answer.startswith(b"HTTP/1.1 408 "), api_answer
    assert json.loads(api_answer.split(b"\r\n\r\n", 1)[1]) == \
        {"detail": f"the request body was not sent within {BODY_SECONDS} s"}
    assert page_answer.startswith(b"HTTP/1.1 408 ") and b"content-type: text/plain" in page_answer, page_answer
    assert not RequestRow.objects.exists()


def test_a_head_sent_slowly_or_never_closes_the_connection_after_the_bound(server, bob):
    silent = slow_head(server, b"")
    partial = [slow_head(server, b"GET /api/v1/pools HTTP/1.1\r\nHost: 127.") for _ in range(3)]

    status, _ = call(server, "GET", "/api/v1/pools", headers={"Authorization": f"Bearer {token_issue(user=bob)}"},
                     timeout=PROMPT_SECONDS)

    assert status == 200
    assert answered([silent, *partial]) == []
    assert [until_closed(client) for client in [silent, *partial]] == [b""] * 4
