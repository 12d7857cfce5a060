"""The event stream across processes, as deployed: a real web process (uvicorn, as ``serve`` runs
it) serving poolweb.asgi on the test database, a websocket client, and events committed by this
process (standing in for the worker) — the relay must find them in the database, with no channel
layer in between.

The server reads the same test database: the test's DATABASE_URL with the test database's name
(test_test on PostgreSQL; on SQLite the test database is a file, see settings).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.db import transaction
from websockets.sync.client import ClientConnection, connect

from poolweb.services.tokens import token_issue
from poolweb.realtime.outbox import newest_seq
from poolweb.services.events import POOL_UPDATED, REQUEST_UPDATED, publish

from tests.poolweb import processes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RECEIVE_TIMEOUT = 5.0


@pytest.fixture
def server_url(transactional_db, tmp_path) -> Iterator[str]:
    """A web process serving the application, polling the outbox often."""
    with processes.live_server(tmp_path, web_only=True, POOLWEB_EVENT_POLL_MS="20") as server:
        yield f"ws://127.0.0.1:{server.port}/ws/events/"


def commit(type: str, data: dict, owner=None) -> None:
    with transaction.atomic():
        publish(type, data, owner_id=owner.pk if owner is not None else None)


def next_message(client: ClientConnection) -> dict:
    return json.loads(client.recv(timeout=RECEIVE_TIMEOUT))


def test_an_event_committed_in_another_process_reaches_a_client_of_the_server(server_url, bob, carol):
    token = token_issue(user=bob)
    with connect(server_url, open_timeout=RECEIVE_TIMEOUT) as client:
        # Resuming from the newest seq makes the start independent of when the token is checked.
        client.send(json.dumps({"token": token, "resume_from": newest_seq()}))

        commit(REQUEST_UPDATED, {"id": 2, "owner": "carol"}, owner=carol)  # not bob's to see
        commit(POOL_UPDATED, {"name": "h100", "used": {"gpu": 4000}})
        commit(REQUEST_UPDATED, {"id": 1, "owner": "bob"}, owner=bob)

        first, second = next_message(client), next_message(client)
    assert (first["type"], first["data"]) == ("pool.updated", {"name": "h100", "used": {"gpu": 4000}})
    assert (second["type"], second["data"]) == ("request.updated", {"id": 1, "owner": "bob"})
    assert first["seq"] < second["seq"]


def test_the_server_refuses_a_bad_token_and_keeps_serving(server_url, bob):
    with connect(server_url, open_timeout=RECEIVE_TIMEOUT) as client:
        client.send(json.dumps({"token": "wrong"}))
        assert next_message(client)["code"] == "unauthenticated"

    token = token_issue(user=bob)
    with connect(server_url, open_timeout=RECEIVE_TIMEOUT) as client:
        client.send(json.dumps({"token": token, "resume_from": newest_seq()}))
        commit(POOL_UPDATED, {"name": "a100"})
        assert next_message(client)["data"] == {"name": "a100"}
