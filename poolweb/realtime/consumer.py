"""The ``/ws/events/`` consumer (api.md §3): authenticate, subscribe, then send events in seq order.

A connection goes through three steps:

1. Authenticated: by the console's session before the handshake is accepted, or by a first
   message ``{"token": …}`` within ``AUTH_TIMEOUT_MS``. From that moment it is subscribed to the
   relay, so nothing that happens later is missed.
2. Started: by a message with ``resume_from`` (in the token message or the next one), or, when
   none comes within ``START_MS``, from the moment of authentication. Waiting for the start
   keeps seq order: a resuming client must get its missed events before any new one.
3. Streaming: missed events read from the outbox first, then the relay's; the client sends
   nothing more.

Every refusal is an error message and a close code (``protocol.py``); an unexpected failure in
one connection is logged and closes that connection only (1011).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from poolweb.realtime import outbox, protocol
from poolweb.realtime.auth import session_user, token_user
from poolweb.realtime.outbox import Viewer
from poolweb.realtime.protocol import BadMessage, ClientMessage, ProtocolError, Unauthenticated
from poolweb.realtime.relay import Relay, Subscription, current_relay

log = logging.getLogger(__name__)

PAGE = 500  # outbox rows per read when catching up
INTERNAL_ERROR = 1011


class EventStreamConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.relay: Relay = current_relay()
        self.subscription: Subscription | None = None
        self.timers: list[asyncio.Task] = []
        self.pump: asyncio.Task | None = None
        self.closing = False
        user = session_user(self.scope)
        if user is not None:
            await self._authenticated(user)  # before accepting: "now" is when the client sees it open
        else:
            self._after(settings.EVENT_STREAM["AUTH_TIMEOUT_MS"], self._authentication_expired)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        self.closing = True
        for task in [*self.timers, self.pump]:
            if task is not None:
                task.cancel()
        if self.subscription is not None:
            self.relay.unsubscribe(self.subscription)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.closing:
            return
        try:
            await self._handle(protocol.parse(text_data, bytes_data))
        except ProtocolError as error:
            await self._refuse(error)
        except Exception:
            log.exception("event stream: handling a client message failed")
            await self._fail()

    async def _handle(self, message: ClientMessage) -> None:
        if self.pump is not None:
            raise BadMessage("the stream has started; it takes no more messages")
        if message.token is not None:
            if self.subscription is not None:
                raise BadMessage("this connection is already signed in")
            user = await database_sync_to_async(token_user)(message.token)
            if user is None:
                raise Unauthenticated("the token is not valid")
            await self._authenticated(user)
            if self.closing:
                return
        elif self.subscription is None:
            raise Unauthenticated('sign in first: send {"token": "…"} (a token from manage.py create_api_token)')
        if message.starts:
            self._start(message.resume_from)

    async def _authenticated(self, user) -> None:
        self._cancel_timers()
        self.subscription = await self.relay.subscribe(Viewer(user_id=user.pk, is_admin=user.is_staff))
        if self.closing:  # refused (say, the deadline passed) while subscribing
            return
        self._after(settings.EVENT_STREAM["START_MS"], self._start_from_now)

    async def _authentication_expired(self) -> None:
        if self.subscription is None:
            await self._refuse(protocol.AuthenticationTimeout("no token came in time"))

    async def _start_from_now(self) -> None:
        if self.pump is None:
            self._start(None)

    def _start(self, resume_from: int | None) -> None:
        self._cancel_timers()
        self.pump = asyncio.create_task(self._stream(resume_from))

    async def _stream(self, resume_from: int | None) -> None:
        try:
            await self._send_events(resume_from)
        except Exception:
            log.exception("event stream: sending events failed")
            await self._fail()

    async def _send_events(self, resume_from: int | None) -> None:
        subscription = self.subscription
        last = subscription.since if resume_from is None else await self._catch_up(resume_from)
        while True:
            events = await subscription.take()
            if subscription.overflowed:
                # Too slow for the buffer: continue from the outbox, at this client's pace.
                self.relay.restart(subscription)
                last = await self._catch_up(last)
                continue
            for event in events:
                if event.seq > last:
                    await self.send(text_data=event.text)
                    last = event.seq

    async def _catch_up(self, after: int) -> int:
        """Send the kept events after ``after`` this viewer may see; the last seq sent (or, after
        a resync, the subscription's start, from which the relay's events continue)."""
        if await database_sync_to_async(outbox.must_resync)(after):
            await self.send(text_data=protocol.RESYNC)
            return self.subscription.since
        while True:
            page = await database_sync_to_async(outbox.events_after)(after, PAGE, self.subscription.viewer)
            for event in page:
                await self.send(text_data=event.text)
                after = event.seq
            if len(page) < PAGE:
                return after

    def _after(self, milliseconds: int, action: Callable[[], Awaitable[None]]) -> None:
        async def later() -> None:
            await asyncio.sleep(milliseconds / 1000)
            await action()

        self.timers.append(asyncio.create_task(later()))

    def _cancel_timers(self) -> None:
        current = asyncio.current_task()
        for task in self.timers:
            if task is not current:
                task.cancel()
        self.timers = []

    async def _refuse(self, error: ProtocolError) -> None:
        if self.closing:
            return
        self.closing = True
        await self.send(text_data=error.as_json())
        await self.close(code=error.close_code)

    async def _fail(self) -> None:
        if not self.closing:
            self.closing = True
            with contextlib.suppress(Exception):
                await self.close(code=INTERNAL_ERROR)
