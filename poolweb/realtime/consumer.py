"""The ``/ws/events/`` consumer (docs/events.md): authenticate, subscribe, then send events in seq order.

A connection goes through three steps:

1. Authenticated: by the console's session before the handshake is accepted, or by a first
   message ``{"token": …}`` within ``AUTH_TIMEOUT_MS``. From that moment it is subscribed to the
   relay, so nothing that happens later is missed.
2. Started: where the client says — ``?resume_from=n`` in the URL (known with the handshake),
   ``resume_from`` in the token message or in a message of its own — or, when it has said
   nothing within ``START_MS`` of authentication, from that moment — for a token client, from
   the moment its connection opened, so a change between the client's read after opening and
   its token being checked is not lost.
3. Streaming: missed events read from the outbox first, then the relay's; the client sends
   nothing more.

A resume point that comes after the start window is still honoured, so a slow link can resume
(docs/decisions.md): exactly while nothing has been sent (the stream starts again from it); once
events have gone out, quietly when no event the client may see lies between its point and the
moment the stream started, and otherwise with ``resync`` — never an event out of seq order.

Rights are checked again (``auth.refusal``) every ``RECHECK_MS`` and before sending any event
about a request, so a deactivated user, a revoked token, an ended session or changed admin rights
close the stream with their code before it shows one more such event. The streams of one
credential share those checks (``rights.py``): one check begun after a batch was read answers
for all of them.

Every refusal is an error message and a close code (``protocol.py``); an unexpected failure in
one connection is logged and closes that connection only (1011).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import Awaitable, Callable

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from poolweb.realtime import auth, outbox, protocol
from poolweb.realtime.auth import Credential
from poolweb.realtime.outbox import OutboxEvent
from poolweb.realtime.protocol import BadMessage, ClientMessage, ProtocolError, Unauthenticated
from poolweb.realtime.relay import Relay, Subscription, current_relay

log = logging.getLogger(__name__)

PAGE = 500  # outbox rows per read when catching up
INTERNAL_ERROR = 1011


class EventStreamConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.relay: Relay = current_relay()
        self.credential: Credential | None = None
        self.subscription: Subscription | None = None
        self.deadline: asyncio.Task | None = None  # to sign in, then to say where to start
        self.watch: asyncio.Task | None = None  # the periodic check of rights
        self.pump: asyncio.Task | None = None
        self.closing = False
        self.chosen = False  # the client has said where the stream starts
        self.sent = False  # something went out: the start can no longer move back
        self.last_sent = 0  # the seq of the last event sent
        self.started_after = 0  # the seq a stream started "from now" continues after
        # A token client's "now": the newest seq when its connection opened. It re-reads what it
        # follows once the connection is open, before its token is checked, so a change between
        # the two must still reach it (None: a session's, subscribed before it is accepted).
        self.opened_after: int | None = None
        try:
            self.url_given, self.url_resume = protocol.url_resume_point(self.scope.get("query_string", b""))
        except ProtocolError as error:
            await self.accept()
            await self._refuse(error)
            return
        credential = auth.session_credential(self.scope)
        if credential is not None:
            await self._authenticated(credential)  # before accepting: "now" is when the client sees it open
        else:
            self.opened_after = await database_sync_to_async(outbox.newest_seq)()
            self._set_deadline(settings.EVENT_STREAM["AUTH_TIMEOUT_MS"], self._authentication_expired)
        await self.accept()
        if credential is not None and not self.closing:
            self._begin()

    async def disconnect(self, code: int) -> None:
        if not self.closing:  # the client's close: the stream's own refusals and failures set closing
            log.info("event stream: the client closed the connection (%s)", code)
        self.closing = True
        self._stop_tasks()
        if self.subscription is not None:
            self.relay.unsubscribe(self.subscription)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.closing:
            return
        try:
            await self._handle(protocol.parse(text_data, bytes_data))
        except ProtocolError as error:
            await self._refuse(error)
        except Exception as error:
            await self._fail("handling a client message", error)

    async def _handle(self, message: ClientMessage) -> None:
        if self.chosen:
            raise BadMessage("the stream has started; it takes no more messages")
        if message.token is not None:
            if self.credential is not None:
                raise BadMessage("this connection is already signed in")
            credential = await database_sync_to_async(auth.token_credential)(message.token, self.scope)
            if self.closing:  # the sign-in deadline passed meanwhile
                return
            if credential is None:
                raise Unauthenticated("the token is not valid")
            await self._authenticated(credential)
            if self.closing:
                return
            self._begin()
        elif self.credential is None:
            raise Unauthenticated('sign in first: send {"token": "…"} (a token from POST /api/v1/tokens)')
        if message.starts:
            if self.chosen:
                raise BadMessage("resume_from is already in the URL")
            await self._resume(message.resume_from)

    async def _authenticated(self, credential: Credential) -> None:
        self._cancel_deadline()
        self.credential = credential
        self.subscription = await self.relay.subscribe(credential.viewer)
        if not self.closing:  # refused (say, the deadline passed) while subscribing
            self.watch = asyncio.create_task(self._watch())

    def _begin(self) -> None:
        """Start where the URL says, or give the client the start window to say it."""
        if self.url_given:
            self.chosen = True
            self._start(self.url_resume)
        else:
            self._set_deadline(settings.EVENT_STREAM["START_MS"], self._start_from_now)

    async def _authentication_expired(self) -> None:
        if self.credential is None:
            await self._refuse(protocol.AuthenticationTimeout("no token came in time"))

    async def _start_from_now(self) -> None:
        """From now: a token client's from when its connection opened, a session's from when it
        subscribed; nothing when already streaming."""
        if self.pump is None:
            self.started_after = self.subscription.since if self.opened_after is None else self.opened_after
            self._start(self.opened_after)

    async def _resume(self, resume_from: int | None) -> None:
        """The client's start, however late it comes (see the module docstring)."""
        self.chosen = True
        if resume_from is None:
            await self._start_from_now()
        elif self.pump is None:
            self._start(resume_from)
        elif not self.sent:
            self.pump.cancel()  # it only waited: the events it would have sent are in the outbox
            self._start(resume_from)
        elif await database_sync_to_async(outbox.missed)(resume_from, self.started_after, self.credential.viewer):
            await self.send(text_data=protocol.RESYNC)

    def _start(self, resume_from: int | None) -> None:
        self._cancel_deadline()
        self.pump = asyncio.create_task(self._stream(resume_from))

    async def _stream(self, resume_from: int | None) -> None:
        try:
            await self._send_events(resume_from)
        except Exception as error:
            await self._fail("sending events", error)

    async def _send_events(self, resume_from: int | None) -> None:
        subscription = self.subscription
        last = subscription.since if resume_from is None else await self._catch_up(resume_from)
        while not self.closing:
            events = await subscription.take()
            if subscription.overflowed:
                # Too slow for the buffer: continue from the outbox, at this client's pace.
                self.relay.restart(subscription)
                last = await self._catch_up(last)
                continue
            fresh = [event for event in events if event.seq > last]
            if fresh and await self._deliver(fresh, subscription.read_at):
                last = fresh[-1].seq

    async def _catch_up(self, after: int) -> int:
        """Send the kept events after ``after`` this viewer may see; the last seq sent (or, after
        a resync, the seq from which the relay's events continue)."""
        while not self.closing:
            read_at = time.monotonic()
            # Judged with every page: a prune during the catch-up may take rows not yet read.
            page = await database_sync_to_async(outbox.missed_events)(after, PAGE, self.credential.viewer)
            if page is None:
                self.sent = True
                await self.send(text_data=protocol.RESYNC)
                # The relay's events follow, from the subscription's start, never one sent already.
                return max(self.subscription.since, self.last_sent)
            if page and await self._deliver(page, read_at):
                after = page[-1].seq
            if len(page) < PAGE:
                break
        return after

    async def _deliver(self, events: list[OutboxEvent], read_at: float) -> bool:
        """Send ``events`` in order, the rights checked first when one is about a request (by a
        check begun after they were read at ``read_at``); False when the stream closed instead."""
        if any(event.owner_id is not None for event in events) and not await self._still_allowed(read_at):
            return False
        for event in events:
            if self.closing:
                return False
            self.sent = True
            await self.send(text_data=event.text)
            self.last_sent = event.seq
        return True

    async def _still_allowed(self, after: float) -> bool:
        """No refusal from a check of this stream's credential begun at or after ``after``: its
        other streams' checks count (``rights.RightsChecks``)."""
        refusal = await self.relay.rights.refusal(self.credential, after)
        if refusal is not None:
            await self._refuse(refusal)
        return refusal is None

    async def _watch(self) -> None:
        period = settings.EVENT_STREAM["RECHECK_MS"] / 1000
        try:
            while not self.closing:
                # Every half period, a check of the last half period counts: a change closes the
                # streams within a period, and a credential is read about twice a period however
                # many streams it has (decision 66).
                await asyncio.sleep(period / 2)
                if not await self._still_allowed(time.monotonic() - period / 2):
                    return
        except Exception as error:
            await self._fail("checking a stream's rights", error)

    def _set_deadline(self, milliseconds: int, action: Callable[[], Awaitable[None]]) -> None:
        async def later() -> None:
            await asyncio.sleep(milliseconds / 1000)
            await action()

        self._cancel_deadline()
        self.deadline = asyncio.create_task(later())

    def _cancel_deadline(self) -> None:
        if self.deadline is not None and self.deadline is not asyncio.current_task():
            self.deadline.cancel()
        self.deadline = None

    def _stop_tasks(self) -> None:
        """Cancel the deadline, the check and the pump, all but the one that is stopping them."""
        current = asyncio.current_task()
        for task in (self.deadline, self.watch, self.pump):
            if task is not None and task is not current:
                task.cancel()

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        """Send; dropped once the client has closed the connection: the server refuses it with an
        OSError (ASGI websocket spec 2.4) and has queued the disconnect that ends this stream.
        A client may close at any moment, as an event is on its way too: not a failure."""
        with contextlib.suppress(OSError):
            await super().send(text_data, bytes_data, close)

    async def close(self, code: int | None = None, reason: str | None = None) -> None:
        """Close, unless the client has closed first (as ``send``)."""
        with contextlib.suppress(OSError):
            await super().close(code, reason)

    async def _refuse(self, error: ProtocolError) -> None:
        if self.closing:
            return
        self.closing = True
        self._stop_tasks()
        await self.send(text_data=error.as_json())
        await self.close(code=error.close_code)

    async def _fail(self, doing: str, error: Exception) -> None:
        """Close this connection only (1011), logged in one line (``_log_failure``)."""
        _log_failure(doing, error)
        if not self.closing:
            self.closing = True
            self._stop_tasks()
            with contextlib.suppress(Exception):
                await self.close(code=INTERNAL_ERROR)


# The failures whose traceback this process has logged, each by its type and the lines it was
# raised through (as many as the code has paths): a client can repeat a failure at will (a
# reconnect loop while the database is down, a message that meets a bug), and a traceback says
# nothing new the second time.
_tracebacks_logged: set[tuple[type, tuple[tuple[str, int], ...]]] = set()


def _log_failure(doing: str, error: Exception) -> None:
    """One line per connection closed on an unexpected failure; the traceback the first time."""
    path = tuple((frame.filename, frame.lineno) for frame in traceback.extract_tb(error.__traceback__))
    if (type(error), path) in _tracebacks_logged:
        first_line = str(error).partition("\n")[0]
        log.error("event stream: %s failed, closed with 1011: %s: %.200s (traceback logged before)",
                  doing, type(error).__name__, first_line)
    else:
        _tracebacks_logged.add((type(error), path))
        log.error("event stream: %s failed, closed with 1011", doing, exc_info=error)
