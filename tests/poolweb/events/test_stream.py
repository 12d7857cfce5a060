"""The event stream at /ws/events/ (api.md §3), in process: what arrives, signing in, and
malformed input (helpers in streams.py; resuming in test_resume.py, rights while a
stream is open in test_rights.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from uvicorn.protocols.utils import ClientDisconnected

from poolweb.asgi import application
from poolweb.realtime import auth, consumer
from poolweb.services.tokens import token_issue

from .streams import quick_stream  # noqa: F401 (an autouse fixture: the streams here poll often)
from .streams import (
    TIMEOUT, connect, gets_next, in_event_loop, nothing_more, payloads, pool, receive, refusal, request_of, write,
)

pytestmark = pytest.mark.django_db(transaction=True)


# -- what arrives -------------------------------------------------------------------------------


@in_event_loop
async def test_a_signed_in_user_receives_new_events_in_seq_order(bob):
    stream = await connect(bob)

    seqs = await write([pool(1), pool(2), pool(3)])

    messages = await receive(stream, 3)
    assert [m["seq"] for m in messages] == seqs == sorted(seqs)
    assert messages[0] == {"seq": seqs[0], "type": "pool.updated", "data": {"name": "h100", "n": 1}}
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_a_new_connection_starts_from_now(bob):
    await write([pool(1)])
    stream = await connect(bob)

    assert await gets_next(stream, pool(2))
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_events_of_several_transactions_arrive_in_commit_order(bob):
    stream = await connect(bob)

    for n in range(20):
        await write([pool(n)])

    messages = await receive(stream, 20)
    assert [m["data"]["n"] for m in messages] == list(range(20))
    assert [m["seq"] for m in messages] == sorted(m["seq"] for m in messages)
    await stream.disconnect()


@in_event_loop
async def test_a_user_sees_their_own_requests_and_the_aggregates_but_not_others_requests(bob, carol):
    bobs, carols = await connect(bob), await connect(carol)

    await write([request_of(bob, 1), request_of(carol, 2), pool(3)])

    assert payloads(await receive(bobs, 2)) == [{"id": 1, "owner": "bob"}, {"name": "h100", "n": 3}]
    assert payloads(await receive(carols, 2)) == [{"id": 2, "owner": "carol"}, {"name": "h100", "n": 3}]
    assert await nothing_more(bobs) and await nothing_more(carols)
    await bobs.disconnect()
    await carols.disconnect()


@in_event_loop
async def test_an_admin_receives_every_event(alice, bob, carol):
    stream = await connect(alice)

    await write([request_of(bob, 1), request_of(carol, 2), pool(3)])

    assert [m["data"] for m in await receive(stream, 3)] == [
        {"id": 1, "owner": "bob"}, {"id": 2, "owner": "carol"}, {"name": "h100", "n": 3}]
    await stream.disconnect()


# -- signing in ---------------------------------------------------------------------------------


@in_event_loop
async def test_a_token_signs_in_an_anonymous_connection(bob):
    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect()
    await stream.send_json_to({"token": token, "resume_from": None})
    await stream.receive_nothing(timeout=0.2)  # signed in: the stream starts from now

    assert await gets_next(stream, request_of(bob, 1))
    await stream.disconnect()


@in_event_loop
async def test_a_token_message_may_carry_the_resume_point(bob):
    seqs = await write([pool(1), pool(2)])
    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect()

    await stream.send_json_to({"token": token, "resume_from": seqs[0]})

    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 2}]
    await stream.disconnect()


@in_event_loop
async def test_the_resume_point_may_follow_the_token(bob):
    seqs = await write([pool(1), pool(2)])
    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect()

    await stream.send_json_to({"token": token})
    await stream.send_json_to({"resume_from": seqs[0]})

    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 2}]
    await stream.disconnect()


@in_event_loop
async def test_a_bad_token_is_refused(bob):
    stream = await connect()

    await stream.send_json_to({"token": "not-a-token"})

    assert await refusal(stream) == ("unauthenticated", 4401)
    await stream.disconnect()


@in_event_loop
async def test_an_inactive_users_token_is_refused(bob):
    token = await database_sync_to_async(token_issue)(user=bob)
    bob.is_active = False
    await database_sync_to_async(bob.save)()
    stream = await connect()

    await stream.send_json_to({"token": token})

    assert await refusal(stream) == ("unauthenticated", 4401)
    await stream.disconnect()


@in_event_loop
async def test_an_anonymous_connection_must_send_a_token_first(db):
    stream = await connect()

    await stream.send_json_to({"resume_from": 0})

    assert await refusal(stream) == ("unauthenticated", 4401)
    await stream.disconnect()


@in_event_loop
async def test_an_anonymous_connection_is_closed_when_no_token_comes_in_time(settings):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "AUTH_TIMEOUT_MS": 100}
    stream = await connect()

    assert await refusal(stream) == ("authentication_timeout", 4408)
    await stream.disconnect()


@in_event_loop
async def test_a_session_is_not_used_from_another_sites_page(bob):
    stream = await connect(bob, origin=b"https://evil.example")

    await stream.send_json_to({"resume_from": None})

    assert await refusal(stream) == ("unauthenticated", 4401)
    await stream.disconnect()


@in_event_loop
async def test_a_session_connection_may_not_send_a_token_as_well(bob):
    stream = await connect(bob)

    await stream.send_json_to({"token": "x"})

    assert await refusal(stream) == ("bad_message", 4400)
    await stream.disconnect()


@in_event_loop
async def test_an_unknown_path_is_refused(db):
    communicator = WebsocketCommunicator(application, "/ws/nothing/")

    connected, _ = await communicator.connect(timeout=TIMEOUT)

    assert not connected


# -- malformed input ----------------------------------------------------------------------------


@pytest.mark.parametrize("frame, expected", [
    ("hello", ("bad_message", 4400)),
    ('{"resume_from": ', ("bad_message", 4400)),
    ("[1, 2]", ("bad_message", 4400)),
    ("{}", ("bad_message", 4400)),
    ('{"resume_from": -1}', ("bad_message", 4400)),
    ('{"resume_from": true}', ("bad_message", 4400)),
    ('{"resume_from": "12"}', ("bad_message", 4400)),
    ('{"resume_from": 1.5}', ("bad_message", 4400)),
    ('{"resume_from": 9223372036854775808}', ("bad_message", 4400)),
    ('{"type": "ping"}', ("bad_message", 4400)),
    ('{"token": 42}', ("bad_message", 4400)),
    ('{"token": ""}', ("bad_message", 4400)),
    ("[" * 4000 + "]" * 4000, ("message_too_large", 4413)),
    ("[" * 2000 + "]" * 2000, ("bad_message", 4400)),
    ('{"token": "' + "x" * 10_000 + '"}', ("message_too_large", 4413)),
    (b"\x00\x01", ("bad_message", 4400)),
])
@in_event_loop
async def test_malformed_input_is_refused_with_a_reason(bob, frame, expected):
    stream = await connect()
    if isinstance(frame, bytes):
        await stream.send_to(bytes_data=frame)
    else:
        await stream.send_to(text_data=frame)

    assert await refusal(stream) == expected
    await stream.disconnect()


@in_event_loop
async def test_a_message_after_the_start_is_refused(bob):
    stream = await connect(bob)
    await stream.send_json_to({"resume_from": None})

    await stream.send_json_to({"resume_from": 1})

    assert await refusal(stream) == ("bad_message", 4400)
    await stream.disconnect()


@in_event_loop
async def test_a_refused_client_does_not_disturb_the_others(bob):
    good, bad = await connect(bob), await connect()
    await bad.send_to(text_data="garbage")
    await refusal(bad)

    assert await gets_next(good, pool(1))
    await bad.disconnect()
    await good.disconnect()


@in_event_loop
async def test_a_token_client_gets_what_changed_between_its_connection_opening_and_its_sign_in(bob):
    """A client re-reads what it follows once the connection is open, then sends its token: an
    event committed in between reaches it, so the re-read and the stream leave no gap."""
    token = await database_sync_to_async(token_issue)(user=bob)
    await write([request_of(bob, 1)])
    stream = await connect()

    await write([request_of(bob, 2)])  # after the client's re-read, before its token is checked
    await stream.send_json_to({"token": token, "resume_from": None})

    assert payloads(await receive(stream, 1)) == [{"id": 2, "owner": "bob"}]
    assert await nothing_more(stream)
    await stream.disconnect()


# -- closing ------------------------------------------------------------------------------------


def stream_log(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name.startswith("poolweb.realtime")]


@pytest.mark.parametrize("while_sending", [False, True])
@in_event_loop
async def test_a_client_that_closes_is_one_info_line(caplog, bob, while_sending):
    caplog.set_level(logging.INFO, logger="poolweb.realtime")
    gone, refused = False, asyncio.Event()

    async def server(scope, receive, send):
        async def send_unless_gone(message):
            if gone:  # as uvicorn does once the client's close has come: the disconnect is queued
                refused.set()
                raise ClientDisconnected()
            await send(message)

        await application(scope, receive, send_unless_gone)

    stream = await connect(bob, app=server)
    await stream.send_json_to({"resume_from": None})
    if while_sending:  # the client closes as an event is on its way: the send is refused
        gone = True
        await write([pool(1)])
        async with asyncio.timeout(TIMEOUT):
            await refused.wait()

    await stream.send_input({"type": "websocket.disconnect", "code": 1000})
    await stream.wait(TIMEOUT)

    [line] = stream_log(caplog)
    assert (line.levelno, line.exc_info) == (logging.INFO, None)
    assert "closed" in line.getMessage() and "1000" in line.getMessage()


@in_event_loop
async def test_a_failure_a_client_can_repeat_logs_its_traceback_once_then_one_line_per_close(
        caplog, monkeypatch, bob):
    monkeypatch.setattr(consumer, "_tracebacks_logged", set())  # as in a new process

    def database_down(token, scope):
        raise RuntimeError("connection refused\n\tIs the server running on that host?")

    monkeypatch.setattr(auth, "token_credential", database_down)

    for _ in range(3):  # a client that reconnects at once, as clients do
        stream = await connect()
        await stream.send_json_to({"token": "any"})
        assert (await stream.receive_output(TIMEOUT))["code"] == 1011
        await stream.disconnect()

    lines = stream_log(caplog)
    assert [line.levelno for line in lines] == [logging.ERROR] * 3
    assert [line.exc_info is not None for line in lines] == [True, False, False]
    assert all("\n" not in line.getMessage() and "RuntimeError" in line.getMessage() for line in lines[1:])
