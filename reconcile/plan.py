"""What one pass decides: data, not actions. The service applies it in one transaction.

Every decision names the request, the state it moves to, a reason code and a sentence with the
numbers; every request still pending has a ``Waiting`` with its reason and queue position.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from .model import Request, State
from .reasons import Reason


@dataclass(frozen=True, slots=True)
class Decision:
    request_id: int
    state: State  # the state the request moves to
    reason: Reason
    message: str
    from_state: State = State.PENDING  # the state the planner saw; apply only from there
    pool: str | None = None  # grants: where; preemptions: the victim's pool
    preempted_by: int | None = None
    grant_order: int = 0  # grants: its place among the pass's grants
    time_limit_at: datetime | None = None  # grants: when the run ends

    @classmethod
    def of(cls, request: Request, state: State, reason: Reason, message: str, pool: str | None = None,
           preempted_by: int | None = None, grant_order: int = 0, time_limit_at: datetime | None = None) -> Decision:
        """Move ``request`` from the state it is in now."""
        return cls(request.id, state, reason, message, request.state, pool, preempted_by, grant_order, time_limit_at)


class Waiting(NamedTuple):
    """Why a pending request is not running (§9) and its 1-based place in the order the next pass
    serves the waiting requests of every pool (R-32, decision 120).

    A named tuple, not a dataclass: a pass makes one per pending request, 10^5 of them."""

    reason: Reason
    message: str
    position: int
    pool: str  # where it waits: the pool where capacity is held for it, else its most preferred eligible pool


@dataclass(frozen=True)
class Plan:
    now: datetime
    expiries: tuple[Decision, ...] = ()  # R-50, and runs at their limit (R-52: ended or queued again)
    evictions: tuple[Decision, ...] = ()  # R-44 grace over, R-46
    cancellations: tuple[Decision, ...] = ()  # R-56 QueueRemoved
    rejections: tuple[Decision, ...] = ()
    grants: tuple[Decision, ...] = ()  # R-31, in the order they were made
    preemptions: tuple[Decision, ...] = ()  # R-40…R-44
    holds: tuple[Decision, ...] = ()  # preemptors stay pending, capacity held on ``pool``
    warnings: tuple[Decision, ...] = ()  # allocated requests whose run limit is near; they stay allocated
    waiting: dict[int, Waiting] = field(default_factory=dict)
    # When a pass should run even if nothing else happens: the earliest moment protected victims
    # that a waiting request waits for become victims, or a waiting request becomes
    # overdue and reserves. None: no such moment.
    wake_at: datetime | None = None

    def decisions(self) -> Iterator[Decision]:
        """Every change of state, in the order the pass made them."""
        for group in (self.warnings, self.expiries, self.evictions, self.cancellations, self.rejections, self.grants,
                      self.preemptions, self.holds):
            yield from group

    @property
    def empty(self) -> bool:
        return next(self.decisions(), None) is None
