"""Rights checks shared by the streams of one credential (decisions 27 and 66).

Before a stream sends an event about a request it needs its rights checked *after* that event
was read from the outbox: a deactivation committed before the event is then seen. Fifty pages of
one browser are fifty streams of one session; each checking for itself made every relay batch
cost fifty checks (three queries each) on the one thread all streams' database work shares, and
the relay's own read waited behind them. Here a check of a credential that began at or after the
moment a stream asks about (``after``, ``time.monotonic()``) answers for every stream of that
credential, and a check already running is awaited rather than started again: one check per
credential per batch, whatever the number of its streams.
"""

from __future__ import annotations

import asyncio
import time

from channels.db import database_sync_to_async

from poolweb.realtime import auth
from poolweb.realtime.auth import Credential
from poolweb.realtime.protocol import ProtocolError

FORGET_SECONDS = 60.0  # a credential not asked about for this long is dropped from memory


class RightsChecks:
    def __init__(self) -> None:
        self._done: dict[Credential, tuple[float, ProtocolError | None]] = {}  # began at, result
        self._running: dict[Credential, tuple[float, asyncio.Task]] = {}

    async def refusal(self, credential: Credential, after: float) -> ProtocolError | None:
        """``auth.refusal`` of a check that began at or after ``after``: one done, running, or new.
        The check is a task of its own, so a stream that closes while waiting cancels only its wait."""
        done = self._done.get(credential)
        if done is not None and done[0] >= after:
            return done[1]
        running = self._running.get(credential)
        if running is None or running[0] < after:
            began = time.monotonic()
            running = (began, asyncio.ensure_future(self._check(credential, began)))
            self._running[credential] = running
        return await asyncio.shield(running[1])

    async def _check(self, credential: Credential, began: float) -> ProtocolError | None:
        try:
            result = await database_sync_to_async(auth.refusal)(credential)
        finally:
            if self._running.get(credential, (None, None))[1] is asyncio.current_task():
                del self._running[credential]
        done = self._done.get(credential)
        if done is None or done[0] < began:  # a later check may have finished first
            self._done[credential] = (began, result)
        self._forget(began - FORGET_SECONDS)
        return result

    def _forget(self, before: float) -> None:
        for credential in [c for c, (began, _) in self._done.items() if began < before]:
            del self._done[credential]
