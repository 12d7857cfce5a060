"""The two orders of the engine, each one key function ending in an id tie-breaker.

>>> service_key(priority=10, in_share=False, execution_index=0, policy_rank=0, submitted_at=1, request_id=7)
(-10, 1, 0, 0, 1, 7)
>>> sorted([victim_key(1, False, 5, 3), victim_key(1, True, 2, 4)])[0]   # borrowed goes first
(1, 0, -2, -4)
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def service_key(
    priority: int, in_share: bool, execution_index: int, policy_rank: int, submitted_at: Any, request_id: int
) -> tuple:
    """R-32: the order in which competing requests are served, judged at one pool.

    1. higher policy priority first;
    2. a request that stays in share before one that would borrow;
    3. the pool's execution order of the request's profile;
    4. the profile's policy rank;
    5. earlier (first) submission, then id.
    """
    return (-priority, 0 if in_share else 1, execution_index, policy_rank, submitted_at, request_id)


def victim_key(priority: int, borrowed: bool, allocated_at: datetime | int, request_id: int) -> tuple:
    """R-42: the order in which preemption candidates are taken.

    1. lowest policy priority first;
    2. allocations holding borrowed units before those in share;
    3. newest allocation first;
    4. then id, highest (newest) first.
    """
    return (priority, 0 if borrowed else 1, -micros(allocated_at), -request_id)


def micros(moment: datetime | int) -> int:
    """A time as an integer of microseconds since 1970, exact; an int is taken as already so."""
    if isinstance(moment, datetime):
        return (moment - _EPOCH) // _MICROSECOND
    return moment

