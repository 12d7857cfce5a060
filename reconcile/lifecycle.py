"""What release, cancel, heartbeat and eviction do to one request (R-46, R-50, R-51).

The service calls these for API actions and the planner for time-driven changes, so each
transition is written once. Terminal requests come back unchanged (idempotence).

>>> from datetime import datetime, timezone
>>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> r = Request(1, "ml", "job", Vector.of(gpu=1), now, state=State.PREEMPTING, pool="dc", max_retries=1)
>>> evict(r, now).state, evict(r, now).attempt     # a retry left: back to the queue
(<State.PENDING: 'pending'>, 2)
>>> release(evict(r, now), now).state   # pending again: release withdraws it
<State.CANCELLED: 'cancelled'>
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from .model import PREEMPTING, Request, State
from .quantity import Vector  # noqa: F401  (doctest)
from .reasons import Reason

LEASE_SECONDS_MIN, LEASE_SECONDS_MAX, LEASE_SECONDS_DEFAULT = 10, 86400, 300


class NotLive(Exception):
    """A heartbeat for a request that holds no capacity."""


def evict(request: Request, now: datetime) -> Request:
    """R-46: an evicted request with retries left is queued again, keeping its first submission."""
    if request.state != State.PREEMPTING:
        return request
    reason = request.reason if request.reason in (Reason.PREEMPTED_BY_PRIORITY, Reason.RECLAIMED) else Reason.RECLAIMED
    if request.retries_left:
        return replace(
            request, state=State.PENDING, attempt=request.attempt + 1, pool=None, allocated_at=None,
            lease_expires_at=None, preempted_at=None, held_pool=None, reason=reason,
        )
    return replace(request, state=State.PREEMPTED, reason=reason)


def release(request: Request, now: datetime) -> Request:
    """R-51: done. Live capacity is returned; a preempting request takes the eviction path."""
    if request.state == State.ALLOCATED:
        return replace(request, state=State.RELEASED, reason=Reason.RELEASED)
    if request.state == State.PREEMPTING:
        return evict(request, now)
    if request.state == State.PENDING:  # nothing to give back: releasing a queued request withdraws it
        return cancel(request, now)
    return request


def cancel(request: Request, now: datetime) -> Request:
    """R-51: withdrawn by its owner or an admin."""
    if request.state == State.PENDING:
        return replace(request, state=State.CANCELLED, reason=Reason.CANCELLED_BY_USER)
    if request.state == State.ALLOCATED:
        return replace(request, state=State.RELEASED, reason=Reason.CANCELLED_BY_USER)
    if request.state == State.PREEMPTING:
        return evict(request, now)
    return request


def heartbeat(request: Request, now: datetime) -> Request:
    """R-50: renew the lease of a live request for another ``lease_seconds``."""
    if not request.state.live:
        raise NotLive(f"request {request.id} is {request.state}, not live")
    return replace(request, lease_expires_at=now + timedelta(seconds=request.lease_seconds))


def lease_expired(request: Request, now: datetime) -> bool:
    return request.state.live and request.lease_expires_at is not None and request.lease_expires_at <= now


def grace_over(request: Request, now: datetime, grace: timedelta) -> bool:
    return request.state == PREEMPTING and request.preempted_at is not None and request.preempted_at + grace <= now

