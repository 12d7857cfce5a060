"""Following one request: its object each time it changes, from the event stream while that is
up, by polling with backoff while it is not; and waiting, which follows it until it leaves
``pending``.

With the stream up, a ``request.updated`` event carries the new object; a ``pool.updated`` of any
pool means positions may have moved — a position counts every pool's waiting requests in one
order (the server's decision 120) — so a pending request is read again (at most once a second). The request is also read every ``RECHECK`` seconds whatever the stream says: the
stream starts "from now" a moment after the first read, and a change in between would otherwise
wait for the next event. With the stream down, it is read after each backoff delay (1 s doubling
to 20 s, jittered, back to 1 s after a change), and the stream is tried again at the same pace.

A read that fails because the server is unreachable is retried the same way (a server restart
must not end a wait); ``trouble`` says what is wrong meanwhile. Refusals (a revoked token) raise.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from poolctl.api import Api, RequestRef
from poolctl.backoff import Backoff
from poolctl.errors import Unreachable, WaitTimeout, ended
from poolctl.models import PENDING, Request
from poolctl.stream import RESYNC, EventStream, StreamDown

RECHECK = 20.0  # seconds between reads while the stream is up: the backoff's cap
POSITION_READS = 1.0  # at most one read per this many seconds for a pool's events


def changed(before: Request, after: Request) -> bool:
    """Whether a holder or a progress line would care: state, reason, sentence, place, attempt."""
    return (before.state, before.reason, before.message, before.position, before.attempt) != \
        (after.state, after.reason, after.message, after.position, after.attempt)


class RequestWatch:
    def __init__(self, api: Api, request: Request) -> None:
        self.api, self.request, self.clock = api, request, time.monotonic
        self.stream: EventStream = api.event_stream()
        self.backoff = Backoff()
        self.streaming = True  # try the stream (again) before the next read
        self.next_read = self.clock()  # the stream first, then a read: a change in between is seen
        self.last_read = float("-inf")
        self.trouble: Unreachable | None = None
        self.recheck = RECHECK

    def next(self, timeout: float | None) -> Request | None:
        """The request once it changes, or None when ``timeout`` seconds (None: no limit) pass first."""
        deadline = float("inf") if timeout is None else self.clock() + timeout
        while (remaining := deadline - self.clock()) > 0:
            until_read = max(0.0, self.next_read - self.clock())
            if self.streaming:
                found = self._listen(min(remaining, until_read))
            else:
                time.sleep(min(remaining, until_read))
                found = None
            if found is None and self.clock() >= self.next_read:
                found = self._read()
            if found is not None:
                return found
        return None

    def _listen(self, timeout: float) -> Request | None:
        was_open = self.stream.connection is not None
        try:
            event = self.stream.receive(timeout)
        except StreamDown:
            self.streaming = False  # poll; a dropped stream may have missed something: read at once
            self.next_read = self.clock() if was_open else self.clock() + min(self.backoff.next(), self.recheck)
            return None
        if event is None:
            return None
        if event.type == RESYNC:
            return self._read()
        if event.type == "request.updated" and event.data.get("id") == self.request.id:
            return self._update(Request.from_json(event.data))
        if event.type == "pool.updated" and self.request.state == PENDING \
                and self.clock() - self.last_read >= POSITION_READS:
            return self._read()
        return None

    def _read(self) -> Request | None:
        self.last_read = self.clock()
        try:
            fresh = self.api.get(self.request.id)
        except Unreachable as error:
            self.trouble = error
            self.next_read = self.clock() + self.backoff.next()
            return None
        self.trouble = None
        # Streaming: read again after RECHECK. Polling: try the stream right away, whose failure
        # sets the next read at the backoff's pace.
        self.next_read = self.clock() + self.recheck
        self.streaming = True
        return self._update(fresh)

    def _update(self, fresh: Request) -> Request | None:
        before, self.request = self.request, fresh
        if not changed(before, fresh):
            return None
        self.backoff.reset()
        return fresh

    def read_now(self) -> None:
        """Read the request at the next step (a heartbeat found it not live)."""
        self.next_read = self.clock()

    def read_every(self, seconds: float) -> None:
        """Read the request at least every ``seconds`` from now on, stream or not."""
        self.recheck = seconds
        self.next_read = min(self.next_read, self.clock() + seconds)

    def close(self) -> None:
        self.stream.close()


ProgressHook = Callable[[Request, RequestWatch], None]


def wait_while_pending(api: Api, request: RequestRef, timeout: float | None = None, *,
                       progress: ProgressHook | None = None) -> Request:
    """Until the request is no longer pending: returned when it holds capacity (or was
    released already); ``Rejected``, ``Cancelled``, ``Expired`` or ``Preempted`` when it
    ended without running; ``WaitTimeout`` after ``timeout`` seconds.

    ``progress(request, watch)`` is called about every second while it waits, for a line
    that shows the state, the place in the queue and the time waited.
    """
    current = api.get(request)
    deadline = None if timeout is None else time.monotonic() + timeout
    watch = RequestWatch(api, current)
    try:
        while current.state == PENDING:
            if progress is not None:
                progress(current, watch)
            left = float("inf") if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(f"request {current.id} is still pending after {timeout:g} s "
                                  f"({current.reason}: {current.message})",
                                  f"wait again with `poolctl wait {current.id}`, or cancel it")
            step = min(left, 1.0) if progress is not None else (None if deadline is None else left)
            current = watch.next(step) or watch.request
    finally:
        watch.close()
    failure = ended(current)
    if failure is not None:
        raise failure
    return current
