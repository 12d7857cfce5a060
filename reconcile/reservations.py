"""No starvation (R-49): a request that has waited longer than its policy's ``max_wait_seconds``
reserves capacity on its first pool, and only runs that end before it can start may use it.

What is free on that pool is held for it, as for a preemptor (R-45), and grows as running work
ends, until it fits. Overdue requests are served senior first: higher priority, then the longest
waiting (``_seniority``); one that fits somewhere now holds it whole and is granted there, and
the first that does not closes its pool to those behind it. A request whose run limit (R-52)
ends before that reservation can start may still be granted into the held room (backfill); the
start is estimated from the run limits of what runs there — runs without a limit are never
counted as ending, so the estimate is never early, and no backfill delays the reservation.

Reservations are decided again at the start of every grant round from the state alone, so a pass
run again on what the first one left holds the same room for the same requests (I-8).

Pool p {gpu: 8}; request 1 runs 6 gpu until 2 h, request 2 (of an overdue policy) waits for
4 gpu: the 2 free gpu are held for it. Request 3 wants 2 gpu for 3 h: it would end after 2 h, so
it waits; request 4 wants them for 1 h: it ends before, and runs (backfill). Request 2 then
still needs all 4 gpu, which the run limits free at 2 h.

>>> config = Config((Pool("p", Vector.of(gpu=8)),),
...                 (Profile("job", Vector.of(gpu=1), True, ("p",), ("t", "u")),),
...                 (Policy("t", max_wait_seconds=600), Policy("u")))
>>> running = Request(1, "u", "job", Vector.of(gpu=6), t0, State.ALLOCATED, pool="p", allocated_at=t0,
...                   time_limit_at=t0 + timedelta(hours=2))
>>> waiting = [Request(2, "t", "job", Vector.of(gpu=4), t0),
...            Request(3, "u", "job", Vector.of(gpu=2), t0, max_runtime_seconds=3 * 3600),
...            Request(4, "u", "job", Vector.of(gpu=2), t0, max_runtime_seconds=3600)]
>>> decided = plan(Snapshot(t0 + timedelta(hours=1), config, (running, *waiting)))
>>> [g.request_id for g in decided.grants], decided.waiting[2].reason
([4], <Reason.RESERVING_CAPACITY: 'ReservingCapacity'>)
>>> decided.waiting[2].message
"it has waited longer than policy t's max_wait_seconds (600 s): what frees on pool p is held for it; it still needs 4 gpu; the run limits there free it by 2026-01-01 02:00:00 UTC"
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from operator import attrgetter

from .groups import QueueGroup
from .ledger import Ledger
from .model import ALLOCATED, Config, Request
from .quantity import quantity_text
from .quota import PoolTerms

Usage = dict[str, int]
_TICK = timedelta(microseconds=1)  # "longer than": the first moment after the max wait
_SUBMITTED = attrgetter("submitted_at")


def max_waits(config: Config) -> dict[str, timedelta]:
    """Per policy that states one, how long its requests may wait before they reserve (R-49)."""
    return {p.name: timedelta(seconds=p.max_wait_seconds) for p in config.policies if p.max_wait_seconds is not None}


class Reservations:
    """The overdue requests' holds on the working ledger, and when each pool's are expected to fit."""

    def __init__(self, config: Config, ledger: Ledger, now: datetime) -> None:
        self.config, self.ledger, self.now = config, ledger, now
        self.waits = max_waits(config)
        self.starts: dict[str, datetime | None] = {}  # pool → when its senior reservation can start
        self.due: datetime | None = None  # the first moment a request waiting now becomes overdue

    def take(self, groups: Sequence[QueueGroup]) -> None:
        """Hold room for the overdue requests still waiting, senior first (``_seniority``): each
        where it fits now, else on the first of its pools where its own policy does not stop it —
        until a reservation there does not fit yet: those behind it wait for it, holding nothing
        (their hold would stay empty). A group's members wait in submission order, so its overdue
        ones come first, and a group whose member cannot reserve stops: the ones after it cannot
        either. The groups are merged by a heap, so a pass pays for the requests that reserve."""
        ledger = self.ledger
        ledger.clear_reservations()
        heap = []
        for group in groups:
            wait = self.waits.get(group.policy)
            if wait is None or group.holder is not None:
                continue
            # Waited longer than ``wait``: submitted before now - wait.
            end = bisect_left(group.members, self.now - wait, lo=group.next, key=_SUBMITTED)
            if end < len(group.members):
                self._due(group.members[end].submitted_at + wait + _TICK)
            if group.next < end:
                heap.append((_seniority(group, group.members[group.next]), group.next, end, group))
        heapq.heapify(heap)
        closed: set[str] = set()  # pools where a reservation does not fit yet
        while heap:
            _, index, end, group = heapq.heappop(heap)
            request_id, where = group.members[index].id, self._where(group, closed)
            if where is None:
                continue
            ledger.reserve(request_id, group.policy, where, group.resources, group.preemptible)
            if self.still_needed(request_id):
                closed.add(where.pool)
            elif index + 1 < end:
                heapq.heappush(heap, (_seniority(group, group.members[index + 1]), index + 1, end, group))
        self.starts = {}

    def _due(self, moment: datetime) -> None:
        """The pass loop wakes at the first moment a waiting request becomes overdue."""
        if self.due is None or moment < self.due:
            self.due = moment

    def _where(self, group: QueueGroup, closed: set[str]) -> PoolTerms | None:
        """The first pool where the group's request fits now (R-31): it holds it whole, and is
        granted there in this round; else the first where its own policy does not stop it, unless a
        reservation there does not fit yet either."""
        ledger, resources, preemptible = self.ledger, group.resources, group.preemptible
        first = None
        for terms in group.terms:
            if ledger.over_limit(terms, resources) is not None or \
                    ledger.over_reserved(terms, resources, preemptible) is not None:
                continue
            if first is None:
                first = terms
            if terms.pool not in closed and ledger.fits(terms, resources, preemptible):
                return terms
        return None if first is None or first.pool in closed else first

    def estimate(self, live: Iterable[Request]) -> bool:
        """Once the grants that fit have been made: when each pool's first reservation that does not
        fit yet can start, from what runs there now. True when some reservation waits for a start."""
        ledger = self.ledger
        for pool, holders in ledger.reserving.items():
            short = next((needed for needed in map(self.still_needed, holders) if needed), None)
            if short is not None:
                self.starts[pool] = self._start(pool, short, live)
        return any(start is not None for start in self.starts.values())

    def still_needed(self, request_id: int) -> Usage:
        """What a reserving request lacks beyond the room held for it, per key its pool meters."""
        hold = self.ledger.holds[request_id]
        unmetered = self.ledger.unmetered.get(hold.pool, ())
        return {key: amount - hold.room.get(key, 0) for key, amount in hold.resources.items()
                if key not in unmetered and amount > hold.room.get(key, 0)}

    def backfills(self, ordered: Sequence[QueueGroup], barred: Collection[tuple[int, str]],
                  ) -> Iterator[tuple[QueueGroup, int, int]]:
        """(group, index of the member, index of the pool) of each waiting request that may be granted
        into room held on a pool, groups in service order, their members in turn: a member whose run
        ends too late does not stop those behind it. The caller grants each before the next is
        looked for (the room shrinks). R-47: never where the pass's reclaim would take it back."""
        ledger = self.ledger
        for group in ordered:
            if group.holder is not None:
                continue  # a preemptor's own hold is its room
            for pool_index, terms in enumerate(group.terms):
                if terms.pool not in self.starts:
                    continue
                index = group.next
                while index < len(group.members) and \
                        ledger.fits_as_backfill(terms, group.resources, group.preemptible):
                    member = group.members[index]
                    if self.may_backfill(member, terms.pool) and (member.id, terms.pool) not in barred:
                        yield group, index, pool_index
                    index += 1

    def may_backfill(self, request: Request, pool: str) -> bool:
        """Whether ``request`` ends before the senior reservation on ``pool`` can start."""
        start = self.starts.get(pool)
        if start is None:
            return False
        limit = self.config.policy[request.policy].run_limit(request.max_runtime_seconds)
        return limit is not None and self.now + timedelta(seconds=limit) <= start

    def _start(self, pool: str, needed: Usage, live: Iterable[Request]) -> datetime | None:
        """When the runs on ``pool`` that have a limit will have freed ``needed``; None if they never do."""
        ends = sorted((r.time_limit_at, r.id, r.resources) for r in live
                      if r.pool == pool and r.state is ALLOCATED and r.time_limit_at is not None)
        for at, _, resources in ends:
            needed = {key: amount - resources.get(key, 0) for key, amount in needed.items()
                      if amount > resources.get(key, 0)}
            if not needed:
                return at
        return None

    def message(self, request: Request) -> str:
        """ReservingCapacity's sentence: what it waits for, with the numbers."""
        pool = self.ledger.holds[request.id].pool
        wait = int(self.waits[request.policy].total_seconds())
        needed = self.still_needed(request.id)
        text = ", ".join(f"{quantity_text(amount)} {key}" for key, amount in sorted(needed.items()))
        start = self.starts.get(pool)
        first = next((h for h in self.ledger.reserving[pool] if self.still_needed(h)), None) == request.id
        by = f"; the run limits there free it by {start:%Y-%m-%d %H:%M:%S %Z}".rstrip() if first and start else ""
        return (f"it has waited longer than policy {request.policy}'s max_wait_seconds ({wait} s): what frees on "
                f"pool {pool} is held for it; it still needs {text or 'nothing more'}{by}")


def _seniority(group: QueueGroup, request: Request) -> tuple:
    """The order overdue requests reserve in (R-49): 1. higher policy priority first;
    2. submitted earlier; 3. lower id."""
    return -group.priority, request.submitted_at, request.id
