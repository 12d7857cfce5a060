"""The two orders of the engine, each a named key compared field by field and ending in an id.

>>> service_key(priority=10, in_share=False, execution_index=0, policy_rank=0, submitted_at=1, request_id=7)
ServiceKey(negated_priority=-10, borrows=True, execution_index=0, policy_rank=0, submitted_at=1, request_id=7)
>>> sorted([victim_key(1, False, 5, 3), victim_key(1, True, 2, 4)])[0].negated_request_id   # borrowed goes first
-4
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


class ServiceKey(NamedTuple):
    """R-32: the order in which competing requests are served, judged at one pool, lowest first.

    A named tuple: it compares as a tuple, in C, at every push and pop of the planner's heaps.

    1. higher policy priority first;
    2. a request that stays in share before one that would borrow;
    3. the pool's execution order of the request's profile;
    4. the profile's policy rank;
    5. earlier (first) submission, then id.
    """

    negated_priority: int
    borrows: bool
    execution_index: int
    policy_rank: int
    submitted_at: Any  # a datetime; an int in tests and doctests
    request_id: int

    @property
    def standing(self) -> tuple[int, bool, int, int]:
        """Criteria 1 to 4: the key without submission time and id, equal within one queue."""
        return self.negated_priority, self.borrows, self.execution_index, self.policy_rank

    def of_member(self, submitted_at: Any, request_id: int) -> ServiceKey:
        """The key of another member of the same group: the same standing, its own submission."""
        return ServiceKey(*self.standing, submitted_at, request_id)


def service_key(
    priority: int, in_share: bool, execution_index: int, policy_rank: int, submitted_at: Any, request_id: int
) -> ServiceKey:
    """The key of a request of a policy of ``priority`` that would stay in share or borrow."""
    return ServiceKey(-priority, not in_share, execution_index, policy_rank, submitted_at, request_id)


class VictimKey(NamedTuple):
    """R-42: the order in which preemption candidates are taken, lowest first.

    1. lowest policy priority first;
    2. allocations holding borrowed units before those in share;
    3. newest allocation first: the latest ``allocated_at``, and among the grants of one pass the
       last granted (R-47);
    4. then id, highest (newest) first.
    """

    priority: int
    in_share: bool
    negated_allocated_at: int  # microseconds since 1970
    negated_grant_order: int
    negated_request_id: int


def victim_key(priority: int, borrowed: bool, allocated_at: datetime | int, request_id: int,
               grant_order: int = 0) -> VictimKey:
    """The key of an allocation of a policy of ``priority``, holding borrowed units of a key the
    preemptor lacks or not."""
    return VictimKey(priority, not borrowed, -micros(allocated_at), -grant_order, -request_id)


def micros(moment: datetime | int) -> int:
    """A time as an integer of microseconds since 1970, exact; an int is taken as already so."""
    if isinstance(moment, datetime):
        return (moment - _EPOCH) // _MICROSECOND
    return moment
