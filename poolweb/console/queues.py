"""What the live queue pages show (/queues/, /queues/<pool>/) and "Why it waits", shaped for their
templates. Rows are made from the request object exactly as the API gives it to this reader
(``request_data_for``), so the privacy rule is the API's. A row is only ever made here: the first
render and every live update (static/console/queue.js reads ``queue_rows``) use the same partial.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from poolweb.console.cards import Bar, bar, key_order, resources_text
from poolweb.selectors.live import PoolState
from poolweb.selectors.requests import Audience
from poolweb.selectors.waiting import WhyWaits
from poolweb.services.payloads import grace_end, request_data_for
from reconcile import State
from reconcile.quantity import quantity_text

PAGE_ROWS = 50  # rows of each table in the first render; "Show more" reads the next from the API
STATE_TEXT = {State.PENDING.value: "queued"}  # spec: the console says "queued" for pending
# The request object's fields that a queue row shows (queue_row.html) or that place it in its
# table, less those fixed at submission (name, owner, policy, profile, resources): a
# request.updated that changes none of them changes nothing the page shows, so queue.js reads
# nothing for it — a heartbeat renews only the lease.
ROW_FIELDS = ("state", "pool", "position", "held_pool", "reason", "message", "grace_ends_at", "eta", "eta_basis")


@dataclass(frozen=True)
class Row:
    """One request as a row of a queue table: text ready to show, from its API object."""

    data: dict  # the request object as this reader may see it
    hidden: bool  # not theirs nor their team's: no name, owner, labels, reason or message
    linked: bool  # the reader may open /requests/<id>/ (the owner, admins)
    resources: str  # as people read them (cards.resources_text)

    @property
    def id(self) -> int:
        return self.data["id"]

    @property
    def state_text(self) -> str:
        return STATE_TEXT.get(self.data["state"], self.data["state"])

    @property
    def reason(self) -> str:
        return "" if self.hidden else (self.data["message"] or self.data["reason"])

    @property
    def fields(self) -> str:
        """The ``ROW_FIELDS`` this reader may see, as JSON (the row's ``data-fields``)."""
        return json.dumps({key: self.data[key] for key in ROW_FIELDS if key in self.data}, separators=(",", ":"))


def row(request, audience: Audience, username: str) -> Row:
    data = request_data_for(request, audience)
    return Row(data, "owner" not in data, audience.is_admin or data.get("owner") == username,
               resources_text(request.resources))


def rows(requests: Iterable, audience: Audience, username: str) -> list[Row]:
    return [row(request, audience, username) for request in requests]


@dataclass(frozen=True)
class KeyUse:
    bar: Bar  # in use / capacity, as the configuration page's pool cards draw it
    free: str


@dataclass(frozen=True)
class PoolSummary:
    """A pool on the overview and at the head of its queue page: per key in use and free."""

    state: PoolState
    keys: tuple[KeyUse, ...]

    @property
    def name(self) -> str:
        return self.state.name


def pool_summary(state: PoolState) -> PoolSummary:
    keys = sorted({*state.capacity, *state.overcommitted}, key=key_order)
    return PoolSummary(state, tuple(
        KeyUse(bar(key, state.used.get(key, 0), state.capacity.get(key, 0), state.overcommitted.get(key)),
               quantity_text(state.free.get(key, 0))) for key in keys))


@dataclass(frozen=True)
class Holding:
    row: Row
    held: str  # what it holds on the pool, as text


@dataclass(frozen=True)
class WhyView:
    """The context of templates/console/partials/why_waits.html (see its top comment)."""

    row: Row
    pool: PoolSummary | None
    ahead: int | None
    nearest: tuple[Row, ...]
    demand: str  # what all those ahead need together
    holders: tuple[Holding, ...]
    victims: tuple[Row, ...]
    preemptor: Row | None
    grace_ends_at: datetime | None
    overtaken: str  # which later requests may still go ahead of it, as a sentence ("" none)

    @property
    def more_ahead(self) -> int:
        return (self.ahead or 0) - len(self.nearest)

    @property
    def first_ahead(self) -> int | None:
        return self.nearest[0].data["position"] if self.nearest else None


def why_view(why: WhyWaits, audience: Audience, username: str) -> WhyView:
    """``selectors.waiting.why_waits`` as ``audience`` may see it."""
    def shown(request) -> Row:
        return row(request, audience, username)
    subject = shown(why.request)
    preemptor = shown(why.preemptor) if why.preemptor is not None and not subject.hidden else None
    return WhyView(
        subject, pool_summary(why.pool) if why.pool else None, why.ahead, tuple(map(shown, why.nearest)),
        resources_text(why.demand), tuple(Holding(shown(h), resources_text(h.resources)) for h in why.holders),
        tuple(map(shown, why.victims)), preemptor, grace_end(why.request), why.overtaken)
