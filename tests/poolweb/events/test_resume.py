"""Resuming the event stream (api.md §3): exactly the missed events, in seq order, whenever the
resume point arrives."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from poolweb.realtime import outbox
from poolweb.realtime.consumer import EventStreamConsumer
from poolweb.realtime.relay import current_relay
from poolweb.services.events import prune
from poolweb.services.tokens import token_issue

from .streams import quick_stream  # noqa: F401 (an autouse fixture: the streams here poll often)
from .streams import (
    TIMEOUT, connect, gets_next, in_event_loop, nothing_more, payloads, pool, receive, refusal, request_of,
    resyncs_then_goes_on, write,
)

pytestmark = pytest.mark.django_db(transaction=True)


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
    assert await gets_next(stream, pool(6))
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_events_written_while_resuming_come_once_and_in_order(settings, alice):
    # The start window is long: this is about the subscription and the catch-up overlapping, and
    # must not depend on the resume arriving within a window (late resumes are tested below).
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "START_MS": 60_000}
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

    assert await gets_next(stream, pool(3))
    await stream.disconnect()


@in_event_loop
async def test_resync_when_the_missed_events_are_no_longer_kept(bob):
    seqs = await write([pool(n) for n in range(5)])
    await database_sync_to_async(prune)(timezone.now() + timezone.timedelta(hours=1), keep=2)
    stream = await connect(bob)

    await stream.send_json_to({"resume_from": seqs[1]})  # seqs[2] is pruned

    assert await resyncs_then_goes_on(stream)
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
    assert await gets_next(stream, pool(10))
    await stream.disconnect()


# -- a prune while a client catches up ------------------------------------------------------------


def prune_keeping(keep: int) -> None:
    """The periodic pass's prune, with every row old enough: all but the newest ``keep`` go."""
    prune(timezone.now() + timezone.timedelta(hours=1), keep=keep)


@pytest.fixture
def prune_after_page(monkeypatch):
    """Pages of two rows; ``prune_after_page(n, keep)`` prunes once the ``n``-th page is sent, before
    the next is read."""
    monkeypatch.setattr("poolweb.realtime.consumer.PAGE", 2)

    def arrange(page: int, keep: int) -> None:
        deliver, sent = EventStreamConsumer._deliver, []

        async def deliver_then_prune(self, events, read_at):
            delivered = await deliver(self, events, read_at)
            sent.append(events)
            if len(sent) == page:
                await database_sync_to_async(prune_keeping)(keep)
            return delivered

        monkeypatch.setattr(EventStreamConsumer, "_deliver", deliver_then_prune)

    return arrange


async def relayed(seq: int) -> None:
    """Once this process's relay has read up to ``seq`` (it polls every few milliseconds)."""
    relay = current_relay()
    async with asyncio.timeout(TIMEOUT):
        while relay.cursor < seq:
            await asyncio.sleep(0.005)


def numbers(messages: list[dict]) -> list[int | str]:
    return [message["data"]["n"] if "data" in message else message["type"] for message in messages]


@in_event_loop
async def test_a_prune_between_pages_of_a_catch_up_gives_resync_never_a_gap(settings, prune_after_page, bob):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "START_MS": 60_000}
    seqs = await write([pool(n) for n in range(6)])
    stream = await connect(bob)
    later = await write([pool(n) for n in range(6, 10)])
    await relayed(later[-1])  # after the subscription: the relay holds them for the stream
    prune_after_page(3, keep=2)  # after 5 and 6, only 8 and 9 are kept

    await stream.send_json_to({"resume_from": seqs[0]})

    # 7 was pruned before the catch-up read it: resync, then the relay's events after the last
    # one sent (never 6 again).
    assert numbers(await receive(stream, 10)) == [1, 2, 3, 4, 5, 6, "resync", 7, 8, 9]
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_a_prune_just_before_the_first_page_is_read_gives_resync(monkeypatch, bob):
    seqs = await write([pool(n) for n in range(5)])
    visible, pruned = outbox._visible, []

    def prune_then_select(rows, viewer):
        # As a stream builds its read of the rows it may see (not the relay's read of every row):
        # after whatever it judged before, before the rows are read.
        if viewer is not None and not pruned:
            pruned.append(prune_keeping(2))  # 1 and 2 go
        return visible(rows, viewer)

    monkeypatch.setattr(outbox, "_visible", prune_then_select)
    stream = await connect(bob)

    await stream.send_json_to({"resume_from": seqs[0]})

    assert await resyncs_then_goes_on(stream)
    await stream.disconnect()


@in_event_loop
async def test_a_prune_while_a_slow_client_catches_up_gives_resync_never_a_gap(settings, prune_after_page, bob):
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "CLIENT_BUFFER": 3, "START_MS": 10_000}
    stream = await connect(bob)
    await write([pool(n) for n in range(10)])
    prune_after_page(1, keep=5)  # after 0 and 1, only 5 to 9 are kept

    await stream.send_json_to({"resume_from": None})

    assert numbers(await receive(stream, 3)) == [0, 1, "resync"]
    await write([pool(10)])
    assert numbers(await receive(stream, 1)) == [10]
    assert await nothing_more(stream)
    await stream.disconnect()


# -- a resume point after the start window (a slow link) -----------------------------------------


@pytest.fixture
def no_start_window(settings):
    """The window closes at once: every resume point below arrives after it."""
    settings.EVENT_STREAM = {**settings.EVENT_STREAM, "START_MS": 0}


@in_event_loop
async def test_a_resume_after_the_start_window_still_gets_exactly_the_missed_events(no_start_window, bob):
    seqs = await write([pool(n) for n in range(5)])
    stream = await connect(bob)
    assert await nothing_more(stream)  # started from now, and nothing sent yet

    await stream.send_json_to({"resume_from": seqs[1]})

    assert [m["data"]["n"] for m in await receive(stream, 3)] == [2, 3, 4]
    assert await gets_next(stream, pool(5))
    assert await nothing_more(stream)
    await stream.disconnect()


@in_event_loop
async def test_a_late_resume_that_missed_events_gets_resync_never_an_older_event(no_start_window, bob):
    seqs = await write([pool(n) for n in range(3)])
    stream = await connect(bob)
    assert await gets_next(stream, pool(3))  # sent from now

    await stream.send_json_to({"resume_from": seqs[0]})  # it missed 1 and 2, which cannot come now

    assert await resyncs_then_goes_on(stream)
    await stream.disconnect()


@in_event_loop
async def test_a_late_resume_judged_just_before_a_prune_still_gets_resync(no_start_window, monkeypatch, bob):
    seqs = await write([pool(n) for n in range(3)])
    stream = await connect(bob)
    assert await gets_next(stream, pool(3))
    judge = outbox.must_resync

    def judge_then_prune(resume_from: int) -> bool:
        verdict = judge(resume_from)
        prune_keeping(1)  # 1 and 2, which it missed, go right after the verdict
        return verdict

    monkeypatch.setattr(outbox, "must_resync", judge_then_prune)

    await stream.send_json_to({"resume_from": seqs[0]})

    assert await receive(stream, 1) == [{"type": "resync"}]
    await stream.disconnect()


@in_event_loop
async def test_a_late_resume_that_missed_nothing_it_may_see_just_goes_on(no_start_window, bob, carol):
    seqs = await write([pool(1), request_of(carol, 2)])  # carol's is not bob's to see
    stream = await connect(bob)
    assert await gets_next(stream, pool(3))

    await stream.send_json_to({"resume_from": seqs[0]})

    assert await nothing_more(stream)
    assert await gets_next(stream, pool(4))
    await stream.disconnect()


@in_event_loop
async def test_the_resume_point_may_come_in_the_url(no_start_window, bob):
    seqs = await write([pool(n) for n in range(3)])

    stream = await connect(bob, path=f"/ws/events/?resume_from={seqs[0]}")

    assert [m["data"]["n"] for m in await receive(stream, 2)] == [1, 2]
    await stream.send_json_to({"resume_from": seqs[0]})
    assert await refusal(stream) == ("bad_message", 4400)  # it has said where to start already
    await stream.disconnect()


@in_event_loop
async def test_a_token_connection_resumes_from_the_url_once_signed_in(no_start_window, bob):
    seqs = await write([pool(n) for n in range(3)])
    token = await database_sync_to_async(token_issue)(user=bob)
    stream = await connect(path=f"/ws/events/?resume_from={seqs[1]}")

    await stream.send_json_to({"token": token})

    assert payloads(await receive(stream, 1)) == [{"name": "h100", "n": 2}]
    await stream.disconnect()


@pytest.mark.parametrize("query", ["resume_from=", "resume_from=-1", "resume_from=x", "resume_from=1&resume_from=2",
                                   "resume_from=99999999999999999999"])
@in_event_loop
async def test_a_bad_resume_point_in_the_url_is_refused(bob, query):
    stream = await connect(bob, path=f"/ws/events/?{query}")

    assert await refusal(stream) == ("bad_message", 4400)
    await stream.disconnect()
