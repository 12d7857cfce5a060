"""What a holder's release or cancel, a heartbeat, and time decide for one request (R-44, R-46,
R-50, R-51).

Release, cancel and eviction are decisions like the planner's: each returns the ``Decision``
(state, reason, sentence) or None when nothing changes, and ``transition.applied`` carries it
out, so what a decision does to a request is written once. The service calls these for API
actions, the planner for time-driven changes. Terminal requests give None (idempotence).

>>> from datetime import datetime, timezone
>>> from reconcile.transition import applied
>>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> r = Request(1, "ml", "job", Vector.of(gpu=1), now, state=State.PREEMPTING, pool="dc", max_retries=1)
>>> evicted = applied(r, release(r, by="bob"), now)   # a retry left: back to the queue
>>> evicted.state, evicted.attempt
(<State.PENDING: 'pending'>, 2)
>>> release(evicted, by="bob") is None   # a late or repeated release keeps the new attempt (R-51)
True
>>> cancel(evicted, by="bob").message   # only cancel withdraws a queued request
'cancelled by bob before it was allocated'
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from .model import ALLOCATED, PREEMPTING, Request, State
from .plan import Decision
from .quantity import Vector  # noqa: F401  (doctest)
from .reasons import Reason

LEASE_SECONDS_MIN, LEASE_SECONDS_MAX, LEASE_SECONDS_DEFAULT = 10, 86400, 300


class NotLive(Exception):
    """A heartbeat for a request that holds no capacity."""


def eviction(request: Request, why: str) -> Decision | None:
    """R-46: a preempting request leaves its pool; with retries left it is queued again (keeping its
    first submission), else it ends ``preempted``. It keeps the reason it was preempted for."""
    if request.state != State.PREEMPTING:
        return None
    reason = request.reason if request.reason in (Reason.PREEMPTED_BY_PRIORITY, Reason.RECLAIMED) else Reason.RECLAIMED
    if request.retries_left:
        return Decision.of(request, State.PENDING, reason, f"{why}; queued again (attempt {request.attempt + 1})")
    return Decision.of(request, State.PREEMPTED, reason, f"{why}; no retries left")


def release(request: Request, by: str = "") -> Decision | None:
    """R-51: done. Live capacity is returned; a preempting request takes the eviction path. A
    pending request holds nothing to give back: a release that arrives after it was queued again
    (a client's retry, or a holder's acknowledgement after the grace) leaves the new attempt be."""
    if request.state == State.ALLOCATED:
        return Decision.of(request, State.RELEASED, Reason.RELEASED, _freed(request, "released", by))
    if request.state == State.PREEMPTING:
        return eviction(request, f"released by {by} while being preempted")
    return None


def cancel(request: Request, by: str = "") -> Decision | None:
    """R-51: withdrawn by its owner or an admin."""
    if request.state == State.PENDING:
        return Decision.of(request, State.CANCELLED, Reason.CANCELLED_BY_USER,
                           f"cancelled by {by} before it was allocated")
    if request.state == State.ALLOCATED:
        return Decision.of(request, State.RELEASED, Reason.CANCELLED_BY_USER, _freed(request, "cancelled", by))
    if request.state == State.PREEMPTING:
        return eviction(request, f"cancelled by {by} while being preempted")
    return None


def _freed(request: Request, verb: str, by: str) -> str:
    return f"{verb} by {by}; its capacity on pool {request.pool} is free again"


def expiry(request: Request) -> Decision:
    """R-50: the lease ran out; the capacity is returned."""
    return Decision.of(request, State.EXPIRED, Reason.LEASE_EXPIRED,
                       f"lease ran out at {request.lease_expires_at:%Y-%m-%d %H:%M:%S %Z}".rstrip())


def heartbeat(request: Request, now: datetime) -> Request:
    """R-50: renew the lease of a live request for another ``lease_seconds``."""
    if not request.state.live:
        raise NotLive(f"request {request.id} is {request.state}, not live")
    return replace(request, lease_expires_at=now + timedelta(seconds=request.lease_seconds))


def lease_expired(request: Request, now: datetime) -> bool:
    return request.state.live and request.lease_expires_at is not None and request.lease_expires_at <= now


def grace_over(request: Request, now: datetime, grace: timedelta) -> bool:
    return request.state == PREEMPTING and request.preempted_at is not None and request.preempted_at + grace <= now


def time_limit_reached(request: Request, now: datetime) -> bool:
    """R-52: a live request whose run limit has come."""
    return request.state.live and request.time_limit_at is not None and request.time_limit_at <= now


def time_limit(request: Request, requeue: bool) -> Decision:
    """R-52, R-53: the run ends at its limit; its capacity is returned. Where its policy says so
    it is queued again as a new attempt, submitted anew (behind those already waiting)."""
    if requeue:
        return Decision.of(request, State.PENDING, Reason.TIME_LIMIT,
                           f"its run limit came at {_moment(request)}; queued again (attempt {request.attempt + 1})")
    return Decision.of(request, State.EXPIRED, Reason.TIME_LIMIT, f"its run limit came at {_moment(request)}")


def time_limit_near(request: Request, now: datetime, grace: timedelta) -> bool:
    """R-52: an allocated request not warned yet whose run limit comes within ``grace``. A run no
    longer than the grace is not warned apart: its grant tells its end already."""
    if request.state is not ALLOCATED or request.time_limit_at is None or request.reason is Reason.TIME_LIMIT_NEAR:
        return False
    warn_at = request.time_limit_at - grace
    return warn_at <= now and (request.allocated_at is None or request.allocated_at < warn_at)


def time_limit_warning(request: Request) -> Decision:
    """R-52: the holder is told, a grace before, that its run ends; it stays allocated."""
    return Decision.of(request, State.ALLOCATED, Reason.TIME_LIMIT_NEAR,
                       f"its run limit comes at {_moment(request)}: checkpoint and release before, or it is ended",
                       pool=request.pool)


def _moment(request: Request) -> str:
    return f"{request.time_limit_at:%Y-%m-%d %H:%M:%S %Z}".rstrip()
