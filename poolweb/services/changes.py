"""A request's change as the columns of its row (item 1 of the reshape: what a decision does is
``reconcile.transition.applied``; this only turns the difference into columns).

Beside the engine's fields, a row keeps the decision's sentence, when the request finished, and
its place in a queue while pending; the pass writes the place of every pending request, so a
request that leaves the queue (granted, finished) or re-enters it (evicted with a retry left)
loses the old one here.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import NamedTuple

from reconcile import Decision, Request, State
from reconcile.transition import applied, changes

LEFT_QUEUE = {"position": None, "queue_pool": None, "eta": None, "eta_basis": ""}


class HistoryEntry(NamedTuple):
    """A row of a request's history, in the column order ``sql.insert_changes`` takes."""

    request_id: int
    at: datetime
    state: str
    reason: str
    message: str
    attempt: int
    pool: str | None


def history_entry(after: Request, decision: Decision, now: datetime) -> HistoryEntry | None:
    """The row of the request's history a decision adds, or None for one that leaves its state as
    it was (a hold, R-45): the history lists changes of state."""
    if decision.state is decision.from_state:
        return None
    return HistoryEntry(after.id, now, after.state.value, after.reason.value, decision.message, after.attempt,
                        after.pool)


def decision_columns(before: Request, decision: Decision, now: datetime) -> tuple[Request, dict]:
    """The request after ``decision``, and what to write of it: column → value."""
    after = applied(before, decision, now)
    columns = {name: value.value if isinstance(value, enum.Enum) else value
               for name, value in changes(before, after).items()}
    columns.update(state=after.state.value, reason=after.reason.value, message=decision.message)
    if after.state.terminal:
        columns.update(LEFT_QUEUE, finished_at=now)
    elif after.state is not State.PENDING or before.state is not State.PENDING:
        columns.update(LEFT_QUEUE)
    return after, columns
