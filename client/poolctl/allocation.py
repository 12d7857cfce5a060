"""Holding capacity: a background thread that keeps the lease alive and notices preemption, the
``with client.allocation(...)`` context manager built on it, and giving capacity back.

The keeper heartbeats every third of the lease, so one lost heartbeat never costs the lease
(R-50), and follows the request (event stream, else polling) so a turn to ``preempting`` is seen
within moments, not at the next heartbeat (R-44's grace is 30 s by default).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from poolctl.api import Api
from poolctl.backoff import Backoff
from poolctl.errors import Conflict, PoolctlError, Preempted, Unreachable, lost
from poolctl.models import PENDING, PREEMPTING, Request
from poolctl.watch import RequestWatch, wait_while_pending

STEP = 0.5  # seconds: how soon the keeper notices it is asked to stop
DEFAULT_LEASE = 300


def heartbeat_interval(lease_seconds: int | None) -> float:
    """A third of the lease: two heartbeats may fail before it runs out."""
    return max(1.0, (lease_seconds or DEFAULT_LEASE) / 3)


def give_back(api: Api, request: Request) -> Request:
    """Release ``request`` for good: a release of a ``preempting`` request re-queues it while
    retries remain (R-46), and a holder that is done wants no next attempt, so that is cancelled."""
    released = api.release(request)
    return api.cancel(released) if released.state == PENDING else released


class LeaseKeeper(threading.Thread):
    """Heartbeats a live request and keeps its newest state in ``request`` (one reference,
    replaced whole: the holder's thread reads it without a lock); ends by itself once the request
    is no longer live."""

    def __init__(self, api: Api, request: Request) -> None:
        super().__init__(name=f"poolctl-lease-{request.id}", daemon=True)
        self.api, self.request = api, request
        self.preempting = threading.Event()  # set from this thread: a holder's loop may test it
        self.stopping = threading.Event()
        self.interval = heartbeat_interval(request.lease_seconds)
        self.failure: BaseException | None = None  # a refusal (revoked token): the holder decides
        self.watch = RequestWatch(api, request)

    def read_every(self, seconds: float) -> None:
        """Read the request every ``seconds``: during a grace, a read past its end makes the
        server evict at once (its reads catch up with deadlines), so the holder learns it then."""
        self.watch.read_every(seconds)

    def run(self) -> None:
        try:
            self._keep(self.watch)
        except BaseException as error:  # noqa: BLE001 — handed to the holder, not lost in a thread
            self.failure = error
        finally:
            self.watch.close()
            self.api.transport.close()  # this thread's kept-alive connection

    def _keep(self, watch: RequestWatch) -> None:
        next_beat, backoff = time.monotonic() + self.interval, Backoff()
        while not self.stopping.is_set() and self.request.live:
            fresh = watch.next(min(STEP, max(0.0, next_beat - time.monotonic())))
            if fresh is None and time.monotonic() >= next_beat:
                fresh, next_beat = self._beat(watch, backoff)
            if fresh is not None:
                if fresh.state == PREEMPTING:
                    self.preempting.set()
                self.request = fresh

    def _beat(self, watch: RequestWatch, backoff: Backoff) -> tuple[Request | None, float]:
        """One heartbeat; the request as it answered (None if not) and when to beat next."""
        try:
            renewed = self.api.heartbeat(self.request)
        except Conflict:  # not live any more (expired, evicted): the watch reads what became of it
            watch.read_now()
            return None, time.monotonic() + self.interval
        except Unreachable:  # try again soon; the lease has two more beats' worth of time
            return None, time.monotonic() + min(backoff.next(), self.interval)
        backoff.reset()
        watch.request = renewed
        return renewed, time.monotonic() + self.interval

    def stop(self) -> None:
        self.stopping.set()


class Allocation:
    """``with client.allocation(policy=…, profile=…, **submission) as allocation:``

    Entering submits and waits (``timeout`` seconds at most); it raises ``Rejected``,
    ``Cancelled``, ``Expired`` or ``WaitTimeout``, and cancels the request when the wait fails or
    is interrupted (Ctrl-C). Inside, the lease is kept alive in a background thread;
    ``allocation.preempting`` is set when the request turns ``preempting`` — stop and leave the
    block — and ``allocation.check()`` raises ``Preempted`` then. Leaving the block releases it,
    after an exception or Ctrl-C too; if the allocation was lost meanwhile (evicted, expired,
    cancelled) and the block raised nothing, leaving raises that loss with its reason.
    """

    def __init__(self, api: Api, submission: dict[str, Any], timeout: float | None = None) -> None:
        self.api, self.submission, self.timeout = api, submission, timeout
        self.request: Request | None = None
        self.keeper: LeaseKeeper | None = None

    @property
    def preempting(self) -> threading.Event:
        """Set once the request turns ``preempting``: checkpoint, stop, and leave the block."""
        return self.keeper.preempting if self.keeper is not None else threading.Event()

    @property
    def id(self) -> int:
        return self._held().id

    @property
    def pool(self) -> str | None:
        return self._held().pool

    @property
    def resources(self) -> dict[str, float]:
        return self._held().resources

    def _held(self) -> Request:
        if self.request is None:
            raise PoolctlError("the allocation is not entered yet: use it in a with block")
        if self.keeper is not None:
            self.request = self.keeper.request
        return self.request

    def __enter__(self) -> Allocation:
        self.request = self.api.submit(**self.submission)
        try:
            self.request = wait_while_pending(self.api, self.request, timeout=self.timeout)
        except BaseException:
            self._cancel_quietly()
            raise
        self.keeper = LeaseKeeper(self.api, self.request)
        self.keeper.start()
        return self

    def check(self) -> None:
        """Raise ``Preempted`` (or how it was lost) once the allocation is being taken away, and
        what stopped the keeper (a revoked token, say) if it stopped."""
        request = self._held()
        if self.keeper is not None and self.keeper.failure is not None:
            raise self.keeper.failure
        if request.state == PREEMPTING:
            raise Preempted(request, "stop and leave the block: the allocation is released then")
        if not request.live:
            raise lost(request)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: Any) -> None:
        if self.keeper is not None:
            self.keeper.stop()
            self.request = self.keeper.request
        held = self.request
        try:
            if held is not None:
                give_back(self.api, held)
        except PoolctlError:
            if kind is None:
                raise  # else the block's own exception says more; the lease ends the allocation
        finally:
            if self.keeper is not None:
                self.keeper.join(timeout=2 * STEP)
        if kind is None and held is not None and not held.live:
            raise lost(held)  # the block ran on, but without the capacity: say so

    def _cancel_quietly(self) -> None:
        try:
            if self.request is not None:
                self.api.cancel(self.request)
        except PoolctlError:
            pass  # unreachable: an unclaimed pending request waits; nothing more to do from here
