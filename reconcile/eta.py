"""When each waiting request will start (R-54): the frees the running requests' ends promise,
simulated in time order, with the waiting requests of each pool served in the order the next
pass serves them (their positions, R-32), as the grant phase does: every one that fits, in turn.

A running request ends at its run limit (R-52), else after its profile's observed run time
(``observed``: seconds per profile, the service's median of recent runs), else at no known time.
A request the estimate starts runs as long, so the requests behind it start in turn. The basis
of an estimate names the ends it relied on: all declared limits (``run_limits``, or none at all:
room now), all observed (``observed_runtimes``), both (``mixed``); ``unknown`` when none frees
enough. Only room is modelled: a request waiting for its own policy's quota or reservation, or
for management to be switched on, has an ``unknown`` start. Integer seconds; deterministic.

Pool p {gpu: 4}; request 1 runs 4 gpu until 1600 s (its run limit); 2 and 3 wait for 2 gpu
each, 2 declaring 300 s; 4 waits for 4 gpu. 2 and 3 start at 1600; 4 needs both: 3 has no
limit and its profile was never seen to end, so 4's start is unknown.

>>> config = Config((Pool("p", Vector.of(gpu=4)),),
...                 (Profile("job", Vector.of(gpu=1), True, ("p",), ("t",)),), (Policy("t"),))
>>> running = Request(1, "t", "job", Vector.of(gpu=4), t0, State.ALLOCATED, pool="p", allocated_at=t0,
...                   time_limit_at=t0 + timedelta(seconds=1600))
>>> waiting = [Request(2, "t", "job", Vector.of(gpu=2), t0, max_runtime_seconds=300),
...            Request(3, "t", "job", Vector.of(gpu=2), t0), Request(4, "t", "job", Vector.of(gpu=4), t0)]
>>> s = Snapshot(t0 + timedelta(seconds=1000), config, (running, *waiting))
>>> etas = estimate_starts(s, plan(s))
>>> [(i, int((e.at - t0).total_seconds()) if e.at else None, e.basis) for i, e in sorted(etas.items())]
[(2, 1600, 'run_limits'), (3, 1600, 'run_limits'), (4, None, 'unknown')]
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from operator import itemgetter
from typing import NamedTuple

from .model import LIVE_STATES, PREEMPTING, Config, Request, Snapshot
from .plan import Plan
from .quantity import unmetered_keys
from .reasons import Reason
from .transition import applied

# The first waiting requests of each pool (by position) that get an estimate; the rest are
# ``unknown``. Bounds the cost at 10^4 pending (bench/engine.py: see docs/decisions.md 187).
PER_POOL = 100

RUN_LIMITS, OBSERVED, MIXED, UNKNOWN = "run_limits", "observed_runtimes", "mixed", "unknown"
BASES = (RUN_LIMITS, OBSERVED, MIXED, UNKNOWN)
BASIS_TEXT = {RUN_LIMITS: "run limits", OBSERVED: "observed run times", MIXED: "run limits and observed run times",
              UNKNOWN: "unknown"}  # as people read a basis
_LIMIT, _SEEN = 1, 2  # the kinds of end an estimate relied on, as bits
_BASIS = {0: RUN_LIMITS, _LIMIT: RUN_LIMITS, _SEEN: OBSERVED, _LIMIT | _SEEN: MIXED}
# Reasons whose cure is not room freeing: their start is not estimated.
NOT_ROOM = frozenset({Reason.WAITING_FOR_QUOTA, Reason.WAITING_FOR_RESERVATION, Reason.MANAGEMENT_DISABLED})


def confidence(basis: str) -> str:
    """How sure an estimate on ``basis`` is: "high" when every end it relies on is a declared
    limit (a run ends by then at the latest), "low" when one is an observed run time, "none"
    without an estimate."""
    return "high" if basis == RUN_LIMITS else "none" if basis == UNKNOWN else "low"


class Eta(NamedTuple):
    at: datetime | None  # None: unknown
    basis: str  # one of BASES

    @property
    def confidence(self) -> str:
        return confidence(self.basis)


NO_ETA = Eta(None, UNKNOWN)


class _End(NamedTuple):
    at: datetime
    request_id: int  # the tie-breaker: ends at one moment free in id order
    need: tuple[int, ...]  # what it frees, of the pool's metered keys in order
    kind: int


def estimate_starts(snapshot: Snapshot, decided: Plan, observed: Mapping[str, int] | None = None,
                    per_pool: int = PER_POOL) -> dict[int, Eta]:
    """An ``Eta`` for every request ``decided`` leaves waiting (``decided.waiting``)."""
    observed = observed or {}
    config, now = snapshot.config, decided.now
    requests = {r.id: r for r in snapshot.requests}
    # What runs once the pass is applied: its grants, its victims in their grace, without what it
    # ended. Holds, rejections and warnings change no one's room here.
    for decision in (*decided.expiries, *decided.evictions, *decided.grants, *decided.preemptions):
        requests[decision.request_id] = applied(requests[decision.request_id], decision, now)
    queues: dict[str, list[tuple[int, Request]]] = {}
    etas: dict[int, Eta] = {}
    for request_id, waiting in decided.waiting.items():
        if waiting.reason in NOT_ROOM or waiting.pool not in config.pool:
            etas[request_id] = NO_ETA
        else:
            queues.setdefault(waiting.pool, []).append((waiting.position, requests[request_id]))
    running: dict[str, list[Request]] = {}
    for request in requests.values():
        if request.state in LIVE_STATES and request.pool in queues:
            running.setdefault(request.pool, []).append(request)
    for pool, queue in queues.items():
        queue.sort(key=_POSITION)  # positions are one order over every pool: no two alike
        served, rest = [r for _, r in queue[:per_pool]], queue[per_pool:]
        etas.update(_pool_starts(config, pool, served, running.get(pool, ()), snapshot, observed, now))
        etas.update((r.id, NO_ETA) for _, r in rest)
    return etas


_POSITION = itemgetter(0)


def _pool_starts(config: Config, pool: str, queue: list[Request], running, snapshot: Snapshot,
                 observed: Mapping[str, int], now: datetime) -> dict[int, Eta]:
    """Serve ``queue`` (in order) on ``pool`` as ``running`` end: at each moment, every request
    that fits starts, in order; then the next end frees its room."""
    capacity = config.pool[pool].capacity
    keys = [k for k in capacity if k not in unmetered_keys(capacity)]
    free = [capacity[k] for k in keys]
    ends: list[_End] = []
    for request in running:
        need = _need(request, keys)
        free = [f - n for f, n in zip(free, need)]
        end = _running_end(request, snapshot, observed, now)
        if end is not None:
            heapq.heappush(ends, _End(end[0], request.id, need, end[1]))
    by_need: dict[tuple[int, ...], deque[tuple[int, Request]]] = {}  # each need's requests, in order
    for place, request in enumerate(queue):
        by_need.setdefault(_need(request, keys), deque()).append((place, request))
    etas: dict[int, Eta] = {}
    relied, t = 0, now
    while by_need:
        _start_what_fits(by_need, free, t, _BASIS[relied], etas, ends, config, observed)
        if not by_need or not ends:
            break
        t = ends[0].at
        while ends and ends[0].at == t:  # every end of this moment frees before anyone starts
            end = heapq.heappop(ends)
            free = [f + n for f, n in zip(free, end.need)]
            relied |= end.kind
    etas.update((request.id, NO_ETA) for members in by_need.values() for _, request in members)
    return etas


def _start_what_fits(by_need: dict[tuple[int, ...], deque[tuple[int, Request]]], free: list[int], t: datetime,
                     basis: str, etas: dict[int, Eta], ends: list[_End], config: Config,
                     observed: Mapping[str, int]) -> None:
    """Start, in queue order, every waiting request that fits in ``free`` at ``t``; ``by_need``
    and ``free`` are changed in place.

    The same walk as one over the queue, but by need: room only shrinks during a walk, so a need
    that did not fit is not tried again, and the next request to try is the first, in order, of
    the needs still trying. A few needs per pool: a walk costs a few comparisons per start."""
    trying = [need for need in by_need if _fits(need, free)]
    while trying:
        need = min(trying, key=lambda n: by_need[n][0][0])
        if not _fits(need, free):
            trying.remove(need)
            continue
        members = by_need[need]
        _, request = members.popleft()
        if not members:
            del by_need[need]
            trying.remove(need)
        free[:] = [f - n for f, n in zip(free, need)]
        etas[request.id] = Eta(t, basis)
        run = _run_seconds(request, config, observed)
        if run is not None:
            heapq.heappush(ends, _End(t + timedelta(seconds=run[0]), request.id, need, run[1]))


def _fits(need: tuple[int, ...], free: list[int]) -> bool:
    return all(n <= f for n, f in zip(need, free))


def _need(request: Request, keys: list[str]) -> tuple[int, ...]:
    """What ``request`` takes of the pool's metered ``keys``, in their order."""
    resources = request.resources
    return tuple(resources.get(k, 0) for k in keys)


def _running_end(request: Request, snapshot: Snapshot, observed: Mapping[str, int],
                 now: datetime) -> tuple[datetime, int] | None:
    """When a live request ends and what says so: a preempting one by its grace (R-44), a run by
    its limit (R-52), else by its profile's observed run time (now, if it ran longer)."""
    if request.state is PREEMPTING and request.preempted_at is not None:
        grace_end = request.preempted_at + snapshot.eviction_grace
        if request.time_limit_at is None or grace_end < request.time_limit_at:
            return max(grace_end, now), _LIMIT
    if request.time_limit_at is not None:
        return request.time_limit_at, _LIMIT
    seen = observed.get(request.profile)
    if seen is None or request.allocated_at is None:
        return None
    return max(request.allocated_at + timedelta(seconds=seen), now), _SEEN


def _run_seconds(request: Request, config: Config, observed: Mapping[str, int]) -> tuple[int, int] | None:
    """How long a request the estimate starts runs: its run limit (R-52), else its profile's
    observed run time, else unknown."""
    policy = config.policy.get(request.policy)
    limit = policy.run_limit(request.max_runtime_seconds) if policy is not None else request.max_runtime_seconds
    if limit is not None:
        return limit, _LIMIT
    seen = observed.get(request.profile)
    return (seen, _SEEN) if seen is not None else None


__all__ = ["BASES", "BASIS_TEXT", "Eta", "NO_ETA", "PER_POOL", "confidence", "estimate_starts"]
