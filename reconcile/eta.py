"""When each waiting request will start (R-54): the frees the running requests' ends promise,
simulated in time order, with the waiting requests served in the order the next pass serves them
(their positions, R-32), as the grant phase does: every one that fits, in turn, on the first pool
where it fits from its queue pool on (R-31).

A running request ends at its run limit (R-52), else after its profile's observed run time, else
at no known time. ``observed``: per profile, run times of its recent runs in seconds, sorted (the
service gives every 5th percentile, decision 188): a run is expected to last their median, and
one that already ran ``e`` seconds the median of those longer than ``e`` (twice ``e`` when none
was), so a long run is not expected to end at once. A request the estimate starts runs as long, so the requests behind it start in turn. The basis
of an estimate names the ends it relied on: all declared limits (``run_limits``, or none at all:
room now), all observed (``observed_runtimes``), both (``mixed``); ``unknown`` when none frees
enough, and for those past the first ``PER_POOL`` in line on their pool. Only room is modelled: a
request waiting for its own policy's quota or reservation, or for management to be switched on,
has an ``unknown`` start; nor does it foresee requests submitted later. Integer seconds;
deterministic.

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
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from operator import itemgetter, le
from typing import NamedTuple

from .model import LIVE_STATES, PREEMPTING, Config, Request, Snapshot
from .plan import Plan
from .quantity import unmetered_keys
from .reasons import Reason
from .transition import applied

# The first waiting requests of each pool (by position) that get an estimate; the rest are
# ``unknown``. Bounds the cost at 10^4 pending: 36 ms CPU beside plan()'s 68 (decision 189);
# ~41 beside ~70 since a start re-judges the shapes that fitted first on its pool.
PER_POOL = 50

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
    pool: str
    need: tuple[int, ...]  # what it frees, of the pool's metered keys in order
    kind: int  # the kinds of end this one's moment relies on (a run started in the estimate: its start's too)


class _Shape(NamedTuple):
    """Waiting requests alike: the pools they may start on, in precedence, what each takes there,
    and their standing in the order served there (R-32.1, .3, .4)."""

    pools: tuple[str, ...]
    needs: tuple[tuple[int, ...], ...]  # parallel to pools
    negated_priority: int
    execution: tuple[int, ...]  # parallel to pools: the profile's place in each one's execution order
    policy_rank: int


Observed = Mapping[str, Sequence[int]]  # profile → its recent runs' seconds, sorted


def estimate_starts(snapshot: Snapshot, decided: Plan, observed: Observed | None = None,
                    per_pool: int = PER_POOL) -> dict[int, Eta]:
    """An ``Eta`` for every request ``decided`` leaves waiting (``decided.waiting``)."""
    config, now = snapshot.config, decided.now
    requests = {r.id: r for r in snapshot.requests}
    # What runs once the pass is applied: its grants, its victims in their grace, without what it
    # ended. Holds, rejections and warnings change no one's room here.
    for decision in (*decided.expiries, *decided.evictions, *decided.grants, *decided.preemptions):
        requests[decision.request_id] = applied(requests[decision.request_id], decision, now)
    etas = dict.fromkeys(decided.waiting, NO_ETA)  # those not estimated below: 10^4 of them, made in C
    queues: dict[str, list[tuple[int, int]]] = {}
    for request_id, (reason, _, position, pool) in decided.waiting.items():
        if reason not in NOT_ROOM:
            queues.setdefault(pool, []).append((position, request_id))
    served: list[tuple[int, Request, str]] = []
    for pool, queue in queues.items():
        if pool in config.pool:
            # Positions are one order over every pool: no two alike.
            served += [(position, requests[i], pool) for position, i in heapq.nsmallest(per_pool, queue)]
    served.sort(key=_POSITION)
    running = [r for r in requests.values() if r.state in LIVE_STATES and r.pool in config.pool]
    etas.update(_Simulation(snapshot, observed or {}, running).starts(served))
    return etas


_POSITION = itemgetter(0)


class _Simulation:
    """The pools' room over time: runs end, waiting requests start, as the grant phase serves them."""

    def __init__(self, snapshot: Snapshot, observed: Observed, running: list[Request]) -> None:
        self.config, self.observed, self.now = snapshot.config, observed, snapshot.now
        self.keys: dict[str, list[str]] = {}
        self.free: dict[str, list[int]] = {}
        self.relied: dict[str, int] = {}  # per pool, the kinds of the ends freed there so far
        self.ends: list[_End] = []
        self.shapes: dict[tuple, _Shape] = {}
        self.on_pool: dict[str, list[_Shape]] = {}  # pool → the shapes that may start on it
        for request in running:
            need = self._need(request, request.pool)
            self.free[request.pool] = [f - n for f, n in zip(self.free[request.pool], need)]
            end = _running_end(request, snapshot, observed, snapshot.now)
            if end is not None:
                heapq.heappush(self.ends, _End(end[0], request.id, request.pool, need, end[1]))

    def _pool(self, pool: str) -> list[str]:
        keys = self.keys.get(pool)
        if keys is None:
            capacity = self.config.pool[pool].capacity
            keys = self.keys[pool] = [k for k in capacity if k not in unmetered_keys(capacity)]
            self.free[pool], self.relied[pool] = [capacity[k] for k in keys], 0
        return keys

    def _need(self, request: Request, pool: str) -> tuple[int, ...]:
        resources = request.resources
        return tuple(resources.get(k, 0) for k in self._pool(pool))

    def _shape(self, request: Request, queue_pool: str) -> _Shape:
        """Where it may start: its queue pool, and the pools its profile prefers less (R-31) whose
        capacity could ever hold it; only its hold's pool for a preemptor (R-45)."""
        pools = self.config.profile[request.profile].pools if request.profile in self.config.profile else ()
        later = pools[pools.index(queue_pool):] if queue_pool in pools and request.held_pool is None else (queue_pool,)
        key = (later, request.resources.signature, request.policy, request.profile)
        shape = self.shapes.get(key)
        if shape is None:
            config = self.config
            fitting = [(pool, self._need(request, pool)) for pool in later if pool in config.pool]
            fitting = [(pool, need) for pool, need in fitting
                       if _fits(need, [config.pool[pool].capacity[k] for k in self.keys[pool]])]
            policy = config.policy.get(request.policy)
            shape = self.shapes[key] = _Shape(
                tuple(p for p, _ in fitting), tuple(n for _, n in fitting), -(policy.priority if policy else 0),
                tuple(config.execution_index.get((p, request.profile), 0) for p, _ in fitting),
                config.policy_rank.get((request.profile, request.policy), 0))
        return shape

    def starts(self, served: list[tuple[int, Request, str]]) -> dict[int, Eta]:
        """Serve ``served`` (position, request, queue pool; in position order) as the runs end:
        at each moment, every request that fits starts, in order; then the next ends free room."""
        waiting: dict[_Shape, deque[tuple[int, Request]]] = {}  # each shape's requests, in order
        on_pool = self.on_pool
        for position, request, queue_pool in served:
            shape = self._shape(request, queue_pool)
            if shape not in waiting:
                waiting[shape] = deque()
                for pool in shape.pools:
                    on_pool.setdefault(pool, []).append(shape)
            waiting[shape].append((position, request))
        etas: dict[int, Eta] = {}
        trying = set(waiting)
        t = self.now
        while waiting:
            self._start_what_fits(waiting, trying, t, etas)
            if not waiting or not self.ends:
                break
            t, freed = self.ends[0].at, set()
            while self.ends and self.ends[0].at == t:  # every end of this moment frees before anyone starts
                end = heapq.heappop(self.ends)
                self.free[end.pool] = [f + n for f, n in zip(self.free[end.pool], end.need)]
                self.relied[end.pool] |= end.kind
                freed.add(end.pool)
            trying = {shape for pool in freed for shape in on_pool.get(pool, ()) if shape in waiting}
        etas.update((request.id, NO_ETA) for members in waiting.values() for _, request in members)
        return etas

    def _start_what_fits(self, waiting: dict[_Shape, deque[tuple[int, Request]]], trying: set[_Shape], t: datetime,
                         etas: dict[int, Eta]) -> None:
        """Start every waiting request of the shapes ``trying`` that fits at ``t``, in the order the
        grant phase serves them: the lowest R-32 key at the first of its pools where it fits (R-31),
        on that pool.

        The same walk as the grant phase's, by shape: room only shrinks during a walk, so a shape
        that did not fit is not tried again, and the next request to try is the head of the shape
        of lowest key (a heap); a shape none of whose pools had room freed since it last did not
        fit is not tried at all. A start on pool P moves only the shapes that fitted first on P:
        they are judged again at once, as the grant phase re-judges the groups watching P, since
        the first pool where one fits now may come later in its precedence and serve its profile
        earlier in that pool's execution order (R-32.3), so its key may fall as well as rise."""
        heads: list[tuple[tuple, _Shape]] = []
        judged: dict[_Shape, tuple[int, tuple]] = {}  # each shape in the walk: where it fits first, its key
        for shape in trying:
            self._judge(shape, waiting, judged, heads)
        heapq.heapify(heads)  # keys end in a request id: shapes are never compared
        while heads:
            key, shape = heapq.heappop(heads)
            current = judged.get(shape)
            if current is None or current[1] != key:
                continue  # judged again since it was pushed
            where = current[0]
            members = waiting[shape]
            _, request = members.popleft()
            if not members:
                del waiting[shape]
            pool, need = shape.pools[where], shape.needs[where]
            self.free[pool] = [f - n for f, n in zip(self.free[pool], need)]
            relied = self.relied[pool]
            etas[request.id] = Eta(t, _BASIS[relied])
            run = _run_seconds(request, self.config, self.observed)
            if run is not None:
                heapq.heappush(self.ends, _End(t + timedelta(seconds=run[0]), request.id, pool, need, run[1] | relied))
            for other in self.on_pool[pool]:
                current = judged.get(other)
                if current is not None and other.pools[current[0]] == pool:
                    self._judge(other, waiting, judged, heads, push=heapq.heappush)

    def _judge(self, shape: _Shape, waiting: dict[_Shape, deque[tuple[int, Request]]],
               judged: dict[_Shape, tuple[int, tuple]], heads: list, push=list.append) -> None:
        """Record and queue the shape's head under its key at the first pool where it fits now,
        unless already so; forget the shape when it has no one left or fits nowhere (nor will
        again in this walk). One entry per key, so equal keys never reach the shapes."""
        where = self._where(shape) if shape in waiting else None
        if where is None:
            judged.pop(shape, None)
            return
        judgement = where, _key(shape, where, waiting[shape][0][1])
        if judged.get(shape) != judgement:
            judged[shape] = judgement
            push(heads, (judgement[1], shape))

    def _where(self, shape: _Shape) -> int | None:
        """The index of the first of the shape's pools where it fits now; None: none."""
        for i, (pool, need) in enumerate(zip(shape.pools, shape.needs)):
            if _fits(need, self.free[pool]):
                return i
        return None


def _key(shape: _Shape, at: int, request: Request) -> tuple:
    """R-32 as the grant phase judges it at the shape's pool ``at``: priority, the pool's execution
    order, the policy rank, submission, id. Staying in share before borrowing (R-32.2) is left out:
    it changes as usage does, which the estimate does not follow."""
    return shape.negated_priority, shape.execution[at], shape.policy_rank, request.submitted_at, request.id


def _fits(need: tuple[int, ...], free: list[int]) -> bool:
    return all(map(le, need, free))  # in C: a third of a generator's cost, 10^4 calls a pass


def _running_end(request: Request, snapshot: Snapshot, observed: Observed,
                 now: datetime) -> tuple[datetime, int] | None:
    """When a live request ends and what says so: a preempting one by its grace (R-44), a run by
    its limit (R-52), else by its profile's observed run times (``expected_run``)."""
    if request.state is PREEMPTING and request.preempted_at is not None:
        grace_end = request.preempted_at + snapshot.eviction_grace
        if request.time_limit_at is None or grace_end < request.time_limit_at:
            return max(grace_end, now), _LIMIT
    if request.time_limit_at is not None:
        return request.time_limit_at, _LIMIT
    seen = observed.get(request.profile)
    if not seen or request.allocated_at is None:
        return None
    ran = int((now - request.allocated_at).total_seconds())
    return request.allocated_at + timedelta(seconds=expected_run(seen, ran)), _SEEN


POINTS = 21  # the observed run times a profile is given by: every 5th percentile, 0 to 100


def percentiles(seconds: Sequence[int]) -> tuple[int, ...]:
    """``POINTS`` of the sorted ``seconds``, evenly spaced by rank, first and last included; all of
    them when fewer.

    >>> percentiles(range(101)) == tuple(range(0, 101, 5)), percentiles([5, 7])
    (True, (5, 7))
    """
    if len(seconds) <= POINTS:
        return tuple(seconds)
    last = len(seconds) - 1
    return tuple(seconds[round(i * last / (POINTS - 1))] for i in range(POINTS))


def expected_run(seen: Sequence[int], ran: int = 0) -> int:
    """How long a run that has run ``ran`` seconds lasts, by the sorted run times ``seen``: the
    median (the lower middle) of those longer than ``ran``; twice ``ran`` when none was.

    >>> expected_run((60, 600, 1500)), expected_run((60, 600, 1500), 700), expected_run((60,), 900)
    (600, 1500, 1800)
    """
    longer = seen[bisect_right(seen, ran):]
    return longer[(len(longer) - 1) // 2] if longer else 2 * ran


def _run_seconds(request: Request, config: Config, observed: Observed) -> tuple[int, int] | None:
    """How long a request the estimate starts runs: its run limit (R-52), else its profile's
    observed run time, else unknown."""
    policy = config.policy.get(request.policy)
    limit = policy.run_limit(request.max_runtime_seconds) if policy is not None else request.max_runtime_seconds
    if limit is not None:
        return limit, _LIMIT
    seen = observed.get(request.profile)
    return (expected_run(seen), _SEEN) if seen else None


__all__ = ["BASES", "BASIS_TEXT", "Eta", "NO_ETA", "PER_POOL", "confidence", "estimate_starts", "expected_run",
           "percentiles"]
