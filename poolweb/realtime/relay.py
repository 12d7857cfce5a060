"""One relay per web process: it reads new outbox rows and hands them to the connected streams.

Why polling: the worker that writes events is another process, and the default setup has no
Redis, so the database is the one thing every process shares. A read of ``seq > last`` on the
primary key every ``POLL_MS`` (50 ms by default) is cheap, works the same on SQLite and
PostgreSQL and with any number of web processes, and bounds the added latency by the interval.
The relay runs only while some stream is connected: the first subscription starts it at the
newest row, and it stops after the last one leaves.

Rows commit in seq order (``services.events`` takes one lock per writer on PostgreSQL; SQLite
has one writer), so once the relay has read up to ``cursor`` no row at or below it can appear
later: a stream that reads the outbox up to at least the ``cursor`` it subscribed at, then takes
the relay's rows and skips seqs it already sent, misses nothing and repeats nothing.

Slow clients. Each subscription buffers at most ``CLIENT_BUFFER`` events. When it would take
more, it drops them all and is marked overflowed; its stream then reads from the outbox where it
left off, at its client's pace, as a resuming client does. A client that stops reading is closed
by uvicorn once it misses its keepalive pings (a ping every 20 s, a pong due within 20 s: its
defaults, ``--ws-ping-interval`` and ``--ws-ping-timeout``); until then a send to it waits while
its socket's write buffer is over the high-water mark, so what uvicorn buffers for it is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import deque

from channels.db import database_sync_to_async
from django.conf import settings

from poolweb.instruments import observe_relay_lag
from poolweb.realtime import outbox
from poolweb.realtime.outbox import OutboxEvent, Viewer
from poolweb.realtime.rights import RightsChecks

log = logging.getLogger(__name__)

BATCH = 500  # rows per read; a full batch is followed by another read at once
RETRY_SECONDS = 1.0  # after a failed read (the database restarting, say)


class Subscription:
    """The events one stream has yet to send: those its viewer may see, at most ``capacity``."""

    def __init__(self, viewer: Viewer, capacity: int, since: int) -> None:
        self.viewer = viewer
        self.since = since  # the relay's cursor when this started collecting
        self.read_at = 0.0  # when the read of the newest events offered began (time.monotonic())
        self.overflowed = False
        self._capacity = capacity
        self._events: deque[OutboxEvent] = deque()
        self._ready = asyncio.Event()

    def offer(self, events: list[OutboxEvent], read_at: float) -> None:
        if self.overflowed:
            return
        self.read_at = read_at
        for event in events:
            if not self.viewer.may_see(event.owner_id):
                continue
            if len(self._events) >= self._capacity:
                self.overflowed = True
                self._events.clear()
                break
            self._events.append(event)
        self._ready.set()

    async def take(self) -> list[OutboxEvent]:
        """Everything buffered, once there is something; an empty list means it overflowed."""
        while not self._events and not self.overflowed:
            self._ready.clear()
            await self._ready.wait()
        taken = list(self._events)
        self._events.clear()
        return taken

    def restart(self, since: int) -> None:
        """Collect again after an overflow, from the relay's cursor ``since``."""
        self.overflowed = False
        self.since = since


class Relay:
    def __init__(self, poll_seconds: float, capacity: int) -> None:
        self.poll_seconds = poll_seconds
        self.capacity = capacity
        self.cursor = 0  # the newest seq read; every row at or below it has been handed out
        self.rights = RightsChecks()  # shared by this process's streams (decision 66)
        self._subscriptions: set[Subscription] = set()
        self._task: asyncio.Task | None = None
        self._starting = asyncio.Lock()

    async def subscribe(self, viewer: Viewer) -> Subscription:
        async with self._starting:
            if self._task is None or self._task.done():
                self.cursor = await database_sync_to_async(outbox.newest_seq)()
                self._task = asyncio.create_task(self._run(), name="poolweb event relay")
            subscription = Subscription(viewer, self.capacity, since=self.cursor)
            self._subscriptions.add(subscription)
            return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def restart(self, subscription: Subscription) -> None:
        subscription.restart(since=self.cursor)

    async def _run(self) -> None:
        while self._subscriptions:
            read_at = time.monotonic()
            try:
                events = await database_sync_to_async(outbox.events_after)(self.cursor, BATCH)
            except Exception:
                log.exception("reading the event outbox failed; retrying in %s s", RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            if events:
                observe_relay_lag(event.written_at for event in events)
                self.cursor = events[-1].seq
                for subscription in list(self._subscriptions):
                    subscription.offer(events, read_at)
            if len(events) < BATCH:
                await asyncio.sleep(self.poll_seconds)


_relays: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Relay] = weakref.WeakKeyDictionary()


def current_relay() -> Relay:
    """This process's relay (one per event loop: a uvicorn process has one; each test has its own)."""
    loop = asyncio.get_running_loop()
    if loop not in _relays:
        stream = settings.EVENT_STREAM
        _relays[loop] = Relay(poll_seconds=stream["POLL_MS"] / 1000, capacity=stream["CLIENT_BUFFER"])
    return _relays[loop]
