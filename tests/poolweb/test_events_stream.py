"""The event stream at /ws/events/ (api.md §3), in process: channels' WebsocketCommunicator
against the whole ASGI application, events written to the outbox as a decision writes them.

Each test is a coroutine run by ``async_to_sync``, so the consumer's and the relay's database
calls run on the test's thread and connection. The database is transactional (committed rows),
as channels needs for ``database_sync_to_async``.
"""

from __future__ import annotations

import functools

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import transaction
from django.test import Client
from django.utils import timezone

from poolweb.services.tokens import token_issue
from poolweb.asgi import application
from poolweb.models import Event
from poolweb.services.events import POOL_UPDATED, REQUEST_UPDATED, prune, publish

pytestmark = pytest.mark.django_db(transaction=True)

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


async def connect(user=None, *, origin: bytes = b"http://testserver", path: str = "/ws/events/"):
    """A connected communicator, signed in by ``user``'s session (anonymous when None)."""
    headers = [(b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await database_sync_to_async(_session_cookie)(user)))
    communicator = WebsocketCommunicator(application, path, headers=headers)
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

    await write([pool(2)])

    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 2}]
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


# -- resuming -----------------------------------------------------------------------------------


@in_event_loop
async def test_resuming_returns_exactly_the_missed_events_then_new_ones(bob, carol):
    stream = await connect(bob)
    await write([pool(1), request_of(bob, 2)])
    last = (await receive(stream, 2))[-1]["seq"]
    await stream.disconnect()

    await write([pool(3), request_of(carol, 4), request_of(bob, 5)])  # missed while away
    stream = await connect(bob)
    await stream.send_json_to({"resume_from": last})

    assert payloads(await receive(stream, 2)) == [{"name": "h100", "n": 3}, {"id": 5, "owner": "bob"}]
    await write([pool(6)])
    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 6}]
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_events_written_while_resuming_come_once_and_in_order(alice):
    seqs = await write([pool(n) for n in range(5)])
    stream = await connect(alice)
    await write([pool(5), pool(6)])  # after the subscription, before the stream starts

    await stream.send_json_to({"resume_from": seqs[1]})

    assert [m["data"]["n"] for m in await receive(stream, 5)] == [2, 3, 4, 5, 6]
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_resuming_from_the_newest_event_returns_only_new_ones(bob):
    seqs = await write([pool(1), pool(2)])
    stream = await connect(bob)
    await stream.send_json_to({"resume_from": seqs[-1]})
    assert await nothing_more(stream)

    await write([pool(3)])

    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 3}]
    await stream.disconnect()


@in_event_loop
async def test_resync_when_the_missed_events_are_no_longer_kept(bob):
    seqs = await write([pool(n) for n in range(5)])
    await database_sync_to_async(prune)(timezone.now() + timezone.timedelta(hours=1), keep=2)
    stream = await connect(bob)

    await stream.send_json_to({"resume_from": seqs[1]})  # seqs[2] is pruned

    assert await receive(stream, 1) == [{"type": "resync"}]
    await write([pool(9)])
    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 9}]
    await stream.disconnect()


@in_event_loop
async def test_no_resync_when_only_events_before_the_resume_point_are_pruned(bob):
    seqs = await write([pool(n) for n in range(5)])
    await database_sync_to_async(prune)(timezone.now() + timezone.timedelta(hours=1), keep=3)
    stream = await connect(bob)

    await stream.send_json_to({"resume_from": seqs[1]})  # seqs[2] is the oldest kept

    assert [m["data"]["n"] for m in await receive(stream, 3)] == [2, 3, 4]
    await stream.disconnect()


@in_event_loop
async def test_resync_when_resuming_from_beyond_the_newest_event(bob):
    seqs = await write([pool(1)])
    stream = await connect(bob)

    await stream.send_json_to({"resume_from": seqs[-1] + 1000})  # another database's seq

    assert await receive(stream, 1) == [{"type": "resync"}]
    await stream.disconnect()


@in_event_loop
async def test_a_slow_client_catches_up_from_the_outbox_without_a_gap(settings, bob):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "CLIENT_BUFFER": 3, "START_MS": 10_000}
    stream = await connect(bob)
    await write([pool(n) for n in range(10)])  # more than the buffer holds, before the start
    await stream.receive_nothing(timeout=0.1)  # the relay has read them and overflowed

    await stream.send_json_to({"resume_from": None})

    assert [m["data"]["n"] for m in await receive(stream, 10)] == list(range(10))
    await write([pool(10)])
    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 10}]
    await stream.disconnect()


# -- signing in ---------------------------------------------------------------------------------


@in_event_loop
async def test_a_token_signs_in_an_anonymous_connection(bob):
    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect()
    await stream.send_json_to({"token": token, "resume_from": None})
    await stream.receive_nothing(timeout=0.2)  # signed in: the stream starts from now

    await write([request_of(bob, 1)])

    assert payloads(await receive(stream, 1)) == [{"id": 1, "owner": "bob"}]
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

    await write([pool(1)])

    assert payloads(await receive(good, 1)) == [{"name": "h100", "n": 1}]
    await bad.disconnect()
    await good.disconnect()
