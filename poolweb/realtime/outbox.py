"""Reading the outbox (``poolweb.models.Event``) for the stream: new rows, missed rows, and
whether a client that resumes can still be given every row it missed.

The functions are synchronous ORM reads; the async side calls them through
``database_sync_to_async``.

Resync rule. ``seq`` has gaps that mean nothing (a rolled-back insert on PostgreSQL burns its
value; a deleted user's events go with it) and a reader filters rows by owner, so a client's
last seq says nothing about which seqs come next. Only pruning loses events, and pruning removes
the oldest rows. So a client that saw everything up to ``n`` can be served iff every row after
``n`` is still kept, i.e. the oldest kept row is at most ``n + 1``. A gap at exactly that place
that is not pruning (say ``n + 1`` rolled back and ``n + 2`` is the oldest row) gives a needless
resync — harmless, the client reloads its state — never a silent loss. A client ahead of the
newest seq (another database, or one reset) is told to resync too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import orjson
from django.db.models import Q, Subquery

from poolweb.models import Event
from poolweb.selectors.events import newest_seq


@dataclass(frozen=True)
class Viewer:
    """Who receives a stream: a user sees aggregate events and their own; an admin, everything."""

    user_id: int
    is_admin: bool

    def may_see(self, owner_id: int | None) -> bool:
        return self.is_admin or owner_id is None or owner_id == self.user_id


@dataclass(frozen=True)
class OutboxEvent:
    """One row, with the message text serialised once for every client that receives it."""

    seq: int
    owner_id: int | None
    text: str
    written_at: datetime | None = None  # for the relay's lag (decision 142); not read for a catch-up


def events_after(seq: int, limit: int) -> list[OutboxEvent]:
    """Up to ``limit`` rows after ``seq`` in seq order."""
    rows = Event.objects.filter(seq__gt=seq).order_by("seq").values_list("seq", "type", "owner_id", "data",
                                                                          "created_at")[:limit]
    return [OutboxEvent(seq, owner_id, message(seq, type, data), created_at)
            for seq, type, owner_id, data, created_at in rows]


def missed_events(after: int, limit: int, viewer: Viewer) -> list[OutboxEvent] | None:
    """What a client that saw everything up to ``after`` missed, a page at a time: up to ``limit``
    rows after ``after`` that ``viewer`` may see, in seq order; None when it must resync instead.

    A prune may run at any moment of a catch-up, so the oldest kept seq is read in the same
    statement as the rows: no prune can fall between the verdict and the rows it vouches for.
    A page with no rows carries no verdict; ``must_resync`` is asked right after, where a prune
    can only cause a needless resync, never a silent loss."""
    oldest = Event.objects.order_by("seq").values("seq")[:1]
    rows = _visible(Event.objects.filter(seq__gt=after), viewer).annotate(oldest=Subquery(oldest))
    rows = list(rows.order_by("seq").values_list("oldest", "seq", "type", "owner_id", "data")[:limit])
    if not rows:
        return None if must_resync(after) else []
    oldest_kept = rows[0][0]
    if oldest_kept > after + 1:  # the resync rule, as must_resync applies it
        return None
    return [OutboxEvent(seq, owner_id, message(seq, type, data)) for _, seq, type, owner_id, data in rows]


def missed(after: int, upto: int, viewer: Viewer) -> bool:
    """Whether a client that saw everything up to ``after`` would miss something it may see if
    it got only the events after ``upto``: a kept one in between, or one no longer kept. The kept
    ones are read first: a prune between the two reads then shows in the second, where judged
    first it would hide what it took."""
    if _visible(Event.objects.filter(seq__gt=after, seq__lte=upto), viewer).exists():
        return True
    return must_resync(after)


def _visible(rows, viewer: Viewer):
    if viewer.is_admin:
        return rows
    return rows.filter(Q(owner__isnull=True) | Q(owner_id=viewer.user_id))


def must_resync(resume_from: int) -> bool:
    """Whether some row after ``resume_from`` is no longer kept (see the module docstring)."""
    oldest = Event.objects.order_by("seq").values_list("seq", flat=True).first()
    newest = newest_seq()
    if resume_from > newest:
        return True
    if oldest is None:  # nothing kept: only a client that saw the very newest missed nothing
        return resume_from < newest
    return oldest > resume_from + 1


def message(seq: int, type: str, data: str) -> str:
    """The message's JSON text: the row's data is JSON text already, put in as it was written
    (every web process relays every event, 10^4 after a burst)."""
    return f'{{"seq":{seq},"type":{orjson.dumps(type).decode()},"data":{data}}}'
