"""One reconcile pass: snapshot in, plan out (R-15, R-30…R-46, R-50, R-56).

The phases, each deciding on the working copy the previous one left:

1. time: expired leases end (R-50), evictions whose grace is over finish (R-44, R-46);
2. queues: requests whose queue is gone are cancelled (R-56), impossible ones rejected (R-15);
3. grants: the best request that fits anywhere is granted on its first fitting pool, again and
   again, re-judging after every grant (R-31, R-32, R-33);
4. preemption: each request still waiting looks for victims, in service order (R-40…R-45);
5. reasons and positions for everything still pending (§9).

>>> from datetime import datetime, timezone
>>> from reconcile.model import Config, Pool, Policy, Profile, Quota
>>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> config = Config(
...     pools=(Pool("dc", Vector.of(gpu=8)),),
...     profiles=(Profile("job", Vector.of(gpu=1), dynamic=True, pools=("dc",), policies=("ml",)),),
...     policies=(Policy("ml", priority=10, quotas=(Quota("dc", "gpu", 4000, 8000),)),))
>>> r = Request(1, "ml", "job", Vector.of(gpu=6, step_run=1), t0)
>>> [(g.request_id, g.state, g.pool) for g in plan(Snapshot(t0, config, (r,))).grants]
[(1, <State.ALLOCATED: 'allocated'>, 'dc')]
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import replace

from . import lifecycle
from .borrowing import borrowed_units
from .explain import explain_waiting
from .groups import QueueGroup, group_requests
from .ledger import Ledger
from .model import Request, Snapshot, State
from .ordering import service_key, victim_key
from .plan import Decision, Plan
from .preemption import choose_victims
from .quantity import Vector  # noqa: F401  (doctest)
from .quota import TermsCache, eligibility
from .reasons import Reason


def plan(snapshot: Snapshot) -> Plan:
    """Decide one pass. Pure: ``snapshot`` is read, never changed."""
    return _Pass(snapshot).run()


class _Pass:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot, self.config, self.now = snapshot, snapshot.config, snapshot.now
        self.terms = TermsCache(self.config)
        self.expiries: list[Decision] = []
        self.evictions: list[Decision] = []
        self.cancellations: list[Decision] = []
        self.rejections: list[Decision] = []
        self.grants: list[Decision] = []
        self.preemptions: list[Decision] = []
        self.victims_of: defaultdict[int, list[int]] = defaultdict(list)  # preemptor → victims in flight

    def run(self) -> Plan:
        live, pending = self._advance_time()
        queued = self._drop_unservable(pending)
        self.ledger = Ledger.of_live(live)
        self.live = live
        self._hold_for_preemptors(queued)
        groups = group_requests(queued, set(self.ledger.holds), self.config, self.terms)
        if self.snapshot.management_enabled:
            while self._grant_round(groups):
                pass
        order = self._service_order(groups)
        if self.snapshot.management_enabled:
            self._preempt(order)
        waiting = explain_waiting(order, self.ledger, self.victims_of, self.snapshot.management_enabled)
        return Plan(
            self.now, tuple(self.expiries), tuple(self.evictions), tuple(self.cancellations),
            tuple(self.rejections), tuple(self.grants), tuple(self.preemptions), waiting,
        )

    # --- 1. time ---------------------------------------------------------------------

    def _advance_time(self) -> tuple[list[Request], list[Request]]:
        live, pending = [], []
        for request in self.snapshot.requests:
            if lifecycle.lease_expired(request, self.now):
                self.expiries.append(_decision(request, State.EXPIRED, Reason.LEASE_EXPIRED,
                                               f"lease ran out at {request.lease_expires_at:%Y-%m-%d %H:%M:%S}"))
            elif lifecycle.grace_over(request, self.now, self.snapshot.eviction_grace):
                evicted = lifecycle.evict(request, self.now)
                retry = f"queued again as attempt {evicted.attempt}" if evicted.state == State.PENDING else "no retries left"
                self.evictions.append(_decision(request, evicted.state, evicted.reason,
                                                f"not released within the grace period; evicted, {retry}"))
                if evicted.state == State.PENDING:
                    pending.append(evicted)
            elif request.state.live:
                live.append(request)
            elif request.state == State.PENDING:
                pending.append(request)
        return live, pending

    # --- 2. queues -------------------------------------------------------------------

    def _drop_unservable(self, pending: list[Request]) -> list[tuple[Request, tuple[str, ...]]]:
        queued, judged = [], {}
        for request in pending:
            if not self.config.queue_exists(request.policy, request.profile):
                self.cancellations.append(_decision(request, State.CANCELLED, Reason.QUEUE_REMOVED,
                                                    f"queue {request.policy}/{request.profile} no longer exists"))
                continue
            signature = (request.policy, request.profile, request.resources, request.preemptible)
            if signature not in judged:
                judged[signature] = eligibility(self.config, self.terms, *signature)
            pools, failure = judged[signature]
            if failure is not None:
                self.rejections.append(_decision(request, State.REJECTED, failure.reason, failure.message))
            else:
                queued.append((request, pools))
        return queued

    def _hold_for_preemptors(self, queued: list[tuple[Request, tuple[str, ...]]]) -> None:
        """R-45: a waiting request whose victims are still being evicted holds its demand on their pool."""
        waiting = {request.id: request for request, _ in queued}
        for victim in self.live:
            preemptor = waiting.get(victim.preempted_by) if victim.state == State.PREEMPTING else None
            if preemptor is not None:
                self.victims_of[preemptor.id].append(victim.id)
                if preemptor.id not in self.ledger.holds:
                    self.ledger.hold(preemptor.id, victim.pool, preemptor.resources)

    # --- 3. grants -------------------------------------------------------------------

    def _grant_round(self, groups: list[QueueGroup]) -> bool:
        """Grant until nothing fits. True when a preemptor was granted away from its hold: capacity
        then grew where others had stopped looking, so the caller runs another round."""
        heap: list = []
        self.watchers: defaultdict[tuple[str, str], set[QueueGroup]] = defaultdict(set)
        for group in groups:
            group.cursor = 0
            self._judge(group, heap)
        while heap:
            key, version, group = heapq.heappop(heap)
            if version != group.version:
                continue
            fresh = self._evaluate(group)
            if fresh != key:  # it got worse since it was pushed; it competes again with its new key
                self._push(group, fresh, heap)
                continue
            pool, reopened = self._grant_head(group)
            for other in self.watchers[("pool", pool)] | self.watchers[("policy", group.policy)] | {group}:
                self._judge(other, heap)
            if reopened:
                return True
        return False

    def _evaluate(self, group: QueueGroup) -> tuple | None:
        """The service key of the group's oldest member at the first pool where it fits now (R-31).

        Fit only shrinks during the grant phase, so pools before ``cursor`` are not tried again."""
        if group.next >= len(group.members):
            return None
        fits, in_share = self.ledger.fits, self.ledger.in_share
        for i in range(group.cursor, len(group.pools)):
            terms = group.terms[i]
            if fits(terms, group.resources, group.preemptible, group.holder):
                group.cursor = i
                head = group.members[group.next]
                return service_key(group.priority, in_share(terms, group.resources), group.execution[i],
                                   group.rank, head.submitted_at, head.id)
        group.cursor = len(group.pools)
        return None

    def _judge(self, group: QueueGroup, heap: list) -> None:
        self._push(group, self._evaluate(group), heap)

    def _push(self, group: QueueGroup, key: tuple | None, heap: list) -> None:
        """Queue the group under ``key``, a lower bound of its key until it is judged again.

        Keys only grow while a group stays on its pool. They can shrink when it moves to a later
        pool that serves its profile earlier or where it is still in share; such a group watches
        its pool and policy, and is judged again after every grant there."""
        group.version += 1
        if group.watching is not None:
            self.watchers[group.watching[0]].discard(group)
            self.watchers[group.watching[1]].discard(group)
            group.watching = None
        if key is None:
            return
        heapq.heappush(heap, (key, group.version, group))
        if self._may_improve(group, key):
            group.watching = (("pool", group.pools[group.cursor]), ("policy", group.policy))
            self.watchers[group.watching[0]].add(group)
            self.watchers[group.watching[1]].add(group)

    def _may_improve(self, group: QueueGroup, key: tuple) -> bool:
        here, borrowing = group.cursor, key[1]
        for later in range(here + 1, len(group.pools)):
            if group.execution[later] < group.execution[here]:
                return True
            if borrowing and self.ledger.in_share(group.terms[later], group.resources):
                return True
        return False

    def _grant_head(self, group: QueueGroup) -> tuple[str, bool]:
        request = group.members[group.next]
        group.next += 1
        pool = group.pools[group.cursor]
        self.ledger.charge(request.policy, pool, request.resources, request.preemptible)
        self.grants.append(_decision(request, State.ALLOCATED, Reason.GRANTED, f"granted on pool {pool}", pool=pool))
        self.live.append(replace(request, state=State.ALLOCATED, pool=pool, allocated_at=self.now))
        held_on = self.ledger.release_hold(request.id)  # the hold ends when H is granted
        return pool, held_on is not None and held_on != pool

    # --- 4. preemption ---------------------------------------------------------------

    def _service_order(self, groups: list[QueueGroup]) -> list[tuple[tuple, QueueGroup, Request]]:
        """Every request still pending, in R-32 order judged at its most preferred eligible pool."""
        order = []
        for group in groups:
            waiting = group.waiting
            if not waiting:
                continue
            terms = group.terms[0]
            share = self.ledger.in_share(terms, group.resources)
            for request in waiting:
                key = service_key(group.priority, share, group.execution[0], group.rank, request.submitted_at, request.id)
                order.append((key, group, request))
        order.sort(key=_first)
        return order

    def _preempt(self, order: list[tuple[tuple, QueueGroup, Request]]) -> None:
        """R-40: each request that fits nowhere and has no victims in flight looks for victims.

        When a member of a group finds none, later members cannot either: they are identical and
        the pass only takes room away. So each group fails at most once."""
        self.on_pool: defaultdict[str, list[Request]] = defaultdict(list)
        for request in self.live:
            if request.state == State.ALLOCATED and request.preemptible:
                self.on_pool[request.pool].append(request)
        self.claimed: set[int] = set()
        self.borrowed_cache: dict[str, dict[int, dict[str, int]]] = {}
        failed: set[int] = set()
        for _, group, request in order:
            if group.holder is not None or id(group) in failed:
                continue
            if not self._find_victims(group, request):
                failed.add(id(group))

    def _find_victims(self, group: QueueGroup, preemptor: Request) -> bool:
        ledger, resources = self.ledger, group.resources
        for pool, terms in zip(group.pools, group.terms):
            # Only pool room may be cured by evicting others; own limit and reservation never are.
            if ledger.over_limit(terms, resources) or ledger.over_reserved(terms, resources, group.preemptible):
                continue
            short = ledger.room_short(terms, resources, preemptor.id)
            if not short:
                continue
            candidates = self._candidates(pool, group, short, ledger.in_share(terms, resources))
            victims = choose_victims(short, [(c, c.resources) for c in candidates])
            if victims:
                self._evict_for(preemptor, group, pool, victims)
                return True
        return False

    def _candidates(self, pool: str, group: QueueGroup, short: dict[str, int], in_share: bool) -> list[Request]:
        """R-41 victims on ``pool`` for a preemptor of ``group``, in R-42 order."""
        priority = self.config.policy
        found = []
        for victim in self.on_pool[pool]:
            if victim.id in self.claimed or victim.policy == group.policy:
                continue
            if not any(victim.resources.get(key, 0) for key in short):
                continue
            borrowed = self._borrowed(victim.policy)[victim.id]
            borrows = any(borrowed.get(key, 0) for key in short)
            victim_priority = priority[victim.policy].priority
            if victim_priority < group.priority or (in_share and borrows):
                found.append((victim_key(victim_priority, borrows, victim.allocated_at, victim.id), victim))
        found.sort(key=_first)
        return [victim for _, victim in found]

    def _borrowed(self, policy: str) -> dict[int, dict[str, int]]:
        if policy not in self.borrowed_cache:
            self.borrowed_cache[policy] = borrowed_units(self.terms, policy, self.live)
        return self.borrowed_cache[policy]

    def _evict_for(self, preemptor: Request, group: QueueGroup, pool: str, victims: list[Request]) -> None:
        policy = self.config.policy
        for victim in victims:
            self.claimed.add(victim.id)
            self.victims_of[preemptor.id].append(victim.id)
            victim_priority = policy[victim.policy].priority
            if victim_priority < group.priority:
                reason = Reason.PREEMPTED_BY_PRIORITY
                why = f"policy {group.policy} has priority {group.priority}, above {victim_priority}"
            else:
                reason = Reason.RECLAIMED
                why = f"policy {group.policy} reclaims capacity within its reservation"
            self.preemptions.append(_decision(
                victim, State.PREEMPTING, reason, f"preempted by request {preemptor.id} on pool {pool}: {why}",
                pool=pool, preempted_by=preemptor.id,
            ))
        self.ledger.hold(preemptor.id, pool, preemptor.resources)


def _decision(request: Request, state: State, reason: Reason, message: str, **extra) -> Decision:
    return Decision(request.id, state, reason, message, from_state=request.state, **extra)


def _first(entry: tuple) -> tuple:
    return entry[0]
