"""One reconcile pass: snapshot in, plan out (R-15, R-30…R-46, R-50, R-56).

The phases, each deciding on the working copy the previous one left:

1. time: expired leases end (R-50), evictions whose grace is over finish (R-44, R-46);
2. queues: requests whose queue is gone are cancelled (R-56), impossible ones rejected (R-15);
3. grants: the best request that fits anywhere is granted on its first fitting pool, again and
   again, re-judging after every grant (R-31, R-32, R-33);
4. preemption: each request still waiting looks for victims, in service order (R-40…R-45);
5. reasons and positions for everything still pending (§9): the order the next pass serves them.

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
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from operator import attrgetter

from . import lifecycle
from .borrowing import Allocation
from .explain import explain_waiting
from .groups import QueueGroup, by_submission, service_order, serving_order, serving_places
from .ledger import Ledger
from .model import LIVE_STATES, PENDING, PREEMPTING, WAITING_FOR_CAPACITY, Request, Snapshot, State
from .ordering import ServiceKey, service_key
from .plan import Decision, Plan, Waiting
from .preemption import Preemption
from .quantity import sum_resources
from .quota import Ineligible, TermsCache, judge_queue, terms_for
from .reasons import Reason
from .reservations import Reservations
from .transition import applied


def plan(snapshot: Snapshot, terms: TermsCache | None = None) -> Plan:
    """Decide one pass. Pure: ``snapshot`` is read, never changed.

    ``terms``: the TermsCache of ``snapshot.config`` that the caller keeps across passes on that
    configuration; None builds the terms this pass needs afresh. The caller decides whether the
    process's garbage collector runs meanwhile (``poolweb.collector``: the service pauses it).

    R-47: a pass whose preemption reclaims what its own grants gave is decided again, without
    those grants (each barred from the pool it was reclaimed on), until none is taken back. Every
    round bars one grant more, so it ends; a pass that reclaims no grant of its own (nearly all)
    is decided once."""
    return _decided(snapshot, terms_for(snapshot.config, terms))[0]


def _decided(snapshot: Snapshot, terms: TermsCache) -> tuple[Plan, frozenset[tuple[int, str]]]:
    """The plan (R-47: decided again until it reclaims none of its own grants) and the grants it bars."""
    barred: frozenset[tuple[int, str]] = frozenset()
    while True:
        decided_by = _Pass(snapshot, terms, barred)
        decided = decided_by.run()
        taken_back = _reclaimed_grants(decided, decided_by.owed)
        if not taken_back:
            break
        barred |= taken_back
    # A bar may outlive its reason: the room went to another grant meanwhile, and the reclaim it
    # was for is no longer made. Lifted one at a time where the pass then takes back none of its
    # own grants, so the next pass, which starts with no bar, does not grant it either (I-8).
    for bar in sorted(barred):
        fewer = barred - {bar}
        trial_by = _Pass(snapshot, terms, fewer)
        trial = trial_by.run()
        if not _reclaimed_grants(trial, trial_by.owed):
            decided, barred = trial, fewer
    return decided, barred


def _reclaimed_grants(decided: Plan, owed: set[int]) -> frozenset[tuple[int, str]]:
    """(request, pool) of each grant of ``decided`` that its own preemption reclaims (R-47).

    Not a preemptor's grant of the capacity held for it, nor an overdue request's of what it
    reserved (``owed``, R-45, R-49): barred, it would keep its hold, and the next pass, with nobody
    to reclaim it, would grant it. Such a grant is reclaimed only
    where a policy reserves what one of a higher priority preempts it for: the two rules of R-41
    then take the capacity from each other in turn, as they did before R-47."""
    reclaimed = {d.request_id: d.pool for d in decided.preemptions if d.reason is Reason.RECLAIMED}
    if not reclaimed:
        return frozenset()
    return frozenset((d.request_id, d.pool) for d in decided.grants
                     if reclaimed.get(d.request_id) == d.pool and d.request_id not in owed)


class _Pass:
    def __init__(self, snapshot: Snapshot, terms: TermsCache,
                 barred: frozenset[tuple[int, str]] = frozenset()) -> None:
        self.snapshot, self.config, self.now = snapshot, snapshot.config, snapshot.now
        self.terms = terms
        self.barred = barred  # (request, pool) not granted in this pass, as a reclaim would take it back
        self.expiries: list[Decision] = []
        self.warnings: list[Decision] = []
        self.evictions: list[Decision] = []
        self.cancellations: list[Decision] = []
        self.rejections: list[Decision] = []
        self.grants: list[Decision] = []
        self.released_holds: list[Decision] = []  # R-45 holds that no longer serve their preemptor
        self.victims_of: dict[int, list[int]] = {}  # preemptor → its victims in flight
        self.owed: set[int] = set()  # preemptors granted in this pass where capacity was held for them

    def run(self) -> Plan:
        enabled = self.snapshot.management_enabled
        groups = self._grant(enabled)
        ordered = service_order(groups, self.ledger)
        preemption = Preemption(self.config, self.terms, self.ledger, self.live, self.victims_of, self.now,
                                self.barred)
        if enabled:
            preemption.run(ordered)
        waiting = explain_waiting(ordered, serving_places(ordered), self.ledger, self.victims_of, enabled,
                                  self.reservations.message)
        for request_id, wait in preemption.waits.items():  # it waits only for protected victims
            waiting[request_id] = waiting[request_id]._replace(
                reason=Reason.WAITING_FOR_PROTECTED_VICTIMS, message=wait.message)
        if not enabled:
            waiting = self._placed_as_served(waiting)
        return Plan(
            self.now, tuple(self.expiries), tuple(self.evictions), tuple(self.cancellations),
            tuple(self.rejections), tuple(self.grants), tuple(preemption.decisions),
            (*self.released_holds, *preemption.holds), warnings=tuple(self.warnings), waiting=waiting,
            wake_at=min(filter(None, (preemption.wake_at, self.reservations.due)), default=None),
        )

    def _grant(self, enabled: bool) -> list[QueueGroup]:
        """Phases 1 to 3: the groups of the requests still pending, after granting what fits (R-30:
        nothing while management is off)."""
        self.live, pending = self._end_leases_and_graces()
        self.ledger = Ledger.of_live(self.live, self.config)
        self.reservations = Reservations(self.config, self.ledger, self.now)
        groups = self._queue(pending)
        if enabled:
            while self._grant_round(groups):
                pass
            self._backfill(groups)
        return groups

    def _backfill(self, groups: list[QueueGroup]) -> None:
        """R-49: once what fits is granted, runs that end before the reservations they would delay
        can start are granted into the room held for them, each moved ahead in its group."""
        if not self.ledger.holds or not self.reservations.estimate(self.live):
            return
        for group, index, pool_index in self.reservations.backfills(service_order(groups, self.ledger), self.barred):
            group.members.insert(group.next, group.members.pop(index))
            group.cursor = pool_index
            self._grant_head(group)

    def _placed_as_served(self, waiting: dict[int, Waiting]) -> dict[int, Waiting]:
        """While management is off, positions still tell the order the next pass will serve (R-32):
        a pass run as if it were on, on its own working copy, grants some requests in an order, and
        the rest follow in R-32 order. Its cost, a second pass (and a third to know which grants R-47
        bars), is paid only while management is off."""
        enabled = replace(self.snapshot, management_enabled=True)
        _, barred = _decided(enabled, self.terms)  # what the pass would not grant
        served = _Pass(enabled, self.terms, barred)
        groups = served._grant(enabled=True)
        order = [grant.request_id for grant in served.grants]
        order += [request.id for _, members in serving_order(service_order(groups, served.ledger))
                  for request in members]
        return {request_id: waiting[request_id]._replace(position=place)
                for place, request_id in enumerate(order, 1)}

    # --- 1. time ---------------------------------------------------------------------

    def _end_leases_and_graces(self) -> tuple[list[Request], list[Request]]:
        """Live requests still live, and pending ones in the snapshot's order (evicted requests
        queued again where they stood)."""
        requests = self.snapshot.requests
        now, grace = self.now, self.snapshot.eviction_grace
        live, requeued = [], {}
        for request in [r for r in requests if r.state is not PENDING]:  # most are pending
            if request.state not in LIVE_STATES:
                continue  # terminal
            elif lifecycle.lease_expired(request, now):
                self.expiries.append(lifecycle.expiry(request))
            elif lifecycle.grace_over(request, now, grace):
                decision = lifecycle.eviction(request, "not released within the grace period")
                self.evictions.append(decision)
                if decision.state is PENDING:
                    requeued[request.id] = applied(request, decision, now)
            elif lifecycle.time_limit_reached(request, now):
                policy = self.config.policy.get(request.policy)
                decision = lifecycle.time_limit(request, requeue=policy is not None and policy.on_time_limit == "requeue")
                self.expiries.append(decision)
                if decision.state is PENDING:
                    requeued[request.id] = applied(request, decision, now)
            else:
                if lifecycle.time_limit_near(request, now, grace):  # warned a grace before
                    self.warnings.append(lifecycle.time_limit_warning(request))
                live.append(request)
        if requeued:
            return live, [requeued.get(r.id, r) for r in requests if r.state is PENDING or r.id in requeued]
        return live, [r for r in requests if r.state is PENDING]

    # --- 2. queues -------------------------------------------------------------------

    def _queue(self, pending: list[Request]) -> list[QueueGroup]:
        """Cancel requests whose queue is gone (R-56), reject the ineligible (R-15), group the rest
        and hold capacity for preemptors that chose victims (R-45)."""
        in_flight: defaultdict[int, list[Request]] = defaultdict(list)
        for victim in self.live:
            if victim.state is PREEMPTING and victim.preempted_by is not None:
                in_flight[victim.preempted_by].append(victim)
        verdicts: dict[tuple, QueueGroup | Decision | None] = {}
        groups: list[QueueGroup] = []
        for request in pending:
            holder = request.id if request.held_pool is not None or request.id in in_flight else None
            signature = (request.policy, request.profile, request.resources.signature, request.preemptible, holder)
            verdict = verdicts.get(signature)
            if verdict is None:
                verdict = verdicts[signature] = self._verdict(request, holder)
                if isinstance(verdict, QueueGroup):
                    groups.append(verdict)
            if isinstance(verdict, QueueGroup):
                verdict.members.append(request)
            elif verdict.reason is Reason.QUEUE_REMOVED:
                self.cancellations.append(_decision(request, State.CANCELLED, verdict.reason, verdict.message))
            else:
                self.rejections.append(_decision(request, State.REJECTED, verdict.reason, verdict.message))
        in_submission_order = _submission_order(pending)
        for group in groups:
            group.members.sort(key=in_submission_order)
            if group.holder is not None:
                victims = in_flight[group.holder]
                self._hold(group, group.members[0].held_pool or victims[0].pool, victims)
        return groups

    def _hold(self, group: QueueGroup, pool: str, victims: list[Request]) -> None:
        """R-45: until it is granted, capacity stays held for a preemptor — while it can use it. A
        void hold is released (its ``held_pool`` cleared), so it keeps nobody out."""
        in_flight, victims = victims, [v for v in victims if v.pool == pool]
        void = self._void_hold(group, pool, victims)
        if void is None:
            self.victims_of[group.holder] = [v.id for v in victims]
            self.ledger.hold(group.holder, group.policy, pool, group.resources, group.preemptible,
                             sum_resources(victims))
            return
        if in_flight:  # no new victims while these leave, even for a hold gone void
            self.victims_of[group.holder] = [v.id for v in in_flight]
        holder = group.members[0]
        if holder.held_pool is not None:
            self.released_holds.append(_decision(holder, State.PENDING, WAITING_FOR_CAPACITY,
                                                 f"the capacity held for it on pool {pool} is free again: {void}"))

    def _void_hold(self, group: QueueGroup, pool: str, victims: list[Request]) -> str | None:
        """Why the hold on ``pool`` is void, or None while it serves its preemptor."""
        if pool not in group.pools:
            return f"it is no longer eligible on pool {pool}"  # a provision changed it
        terms = group.terms[group.pools.index(pool)]
        if self.ledger.over_limit(terms, group.resources) or \
                self.ledger.over_reserved(terms, group.resources, group.preemptible):
            return "its own policy stops it there"  # holding capacity would only waste it
        if not victims and not self.ledger.fits(terms, group.resources, group.preemptible):
            # with no victims in flight it may look for victims again, and until it finds
            # some, a hold that cannot make it fit would only keep everyone else out.
            return "its victims have left and it still does not fit"
        return None

    def _verdict(self, request: Request, holder: int | None) -> QueueGroup | Ineligible:
        if not self.config.queue_exists(request.policy, request.profile):
            return Ineligible(Reason.QUEUE_REMOVED, f"queue {request.policy}/{request.profile} no longer exists")
        pools, failure = judge_queue(self.terms, request.policy, request.profile, request.resources,
                                     request.preemptible)
        if failure is not None:
            return failure
        group = QueueGroup(request.policy, request.profile, request.resources, request.preemptible, holder)
        group.bind(self.config, pools)
        return group

    # --- 3. grants -------------------------------------------------------------------

    def _grant_round(self, groups: list[QueueGroup]) -> bool:
        """Grant until nothing fits. True when a preemptor was granted away from its hold: capacity
        then grew where others had stopped looking, so the caller runs another round."""
        if self.reservations.waits:
            self.reservations.take(groups)  # decided again from what is free now
        heap: list = []
        self.watchers: defaultdict[tuple[str, str], set[QueueGroup]] = defaultdict(set)
        for group in groups:
            group.cursor = 0
            self._judge(group, heap)
        while heap:
            key, version, granted, group = heapq.heappop(heap)
            if version != group.version:
                continue
            # Judged on the ledger as it is now when nothing was granted since it was pushed.
            fresh = key if granted == len(self.grants) else self._evaluate(group)
            if fresh != key:  # it got worse since it was pushed; it competes again with its new key
                self._push(group, fresh, heap)
                continue
            pool, reopened = self._grant_head(group)
            for other in self.watchers[("pool", pool)] | self.watchers[("policy", group.policy)] | {group}:
                self._judge(other, heap)
            if reopened:
                return True
        return False

    def _evaluate(self, group: QueueGroup) -> ServiceKey | None:
        """The service key of the group's oldest member at the first pool where it fits now (R-31).

        Fit only shrinks during the grant phase, so pools before ``cursor`` are not tried again."""
        if group.next >= len(group.members):
            return None
        fits, in_share = self.ledger.fits, self.ledger.in_share
        head, barred = group.members[group.next], self.barred
        holder = group.holder
        if holder is None and head.id in self.ledger.holds:
            holder = head.id  # it reserves; its own hold is not in its way
        for i in range(group.cursor, len(group.pools)):
            terms = group.terms[i]
            if barred and (head.id, group.pools[i]) in barred:
                continue  # R-47; the identical members after it would be reclaimed alike
            if fits(terms, group.resources, group.preemptible, holder):
                group.cursor = i
                return service_key(group.priority, in_share(terms, group.resources), group.execution[i],
                                   group.rank, head.submitted_at, head.id)
        group.cursor = len(group.pools)
        return None

    def _judge(self, group: QueueGroup, heap: list) -> None:
        self._push(group, self._evaluate(group), heap)

    def _push(self, group: QueueGroup, key: ServiceKey | None, heap: list) -> None:
        """Queue the group under ``key``, a lower bound of its key until it is judged again.

        Keys only grow while a group stays on its pool. They can shrink when it moves to a later
        pool that serves its profile earlier or where it is still in share; such a group watches
        what could move it, and is judged again after every grant there."""
        group.version += 1
        for topic in group.watching:
            self.watchers[topic].discard(group)
        group.watching = ()
        if key is None:
            return
        heapq.heappush(heap, (key, group.version, len(self.grants), group))
        group.watching = self._watch_topics(group, key)
        for topic in group.watching:
            self.watchers[topic].add(group)

    def _watch_topics(self, group: QueueGroup, key: ServiceKey) -> tuple[tuple[str, str], ...]:
        """When the group's key could shrink, and what to watch for it (see ``_push``).

        Grants on its pool may push it to a later pool. Grants of its own policy elsewhere change
        only its ``*`` usage, which can stop it here yet let it fit on a later pool only if that
        pool does not meter the key; so the policy is watched just in that case."""
        here = group.cursor
        better = [later for later in range(here + 1, len(group.pools))
                  if group.execution[later] < group.execution[here]
                  or (key.borrows and self.ledger.in_share(group.terms[later], group.resources))]
        if not better:
            return ()
        topics = [("pool", group.pools[here])]
        global_keys = group.terms[here].global_keys(group.preemptible)
        if any(not group.terms[later].metered(resource) for later in better
               for resource in global_keys & group.resources.keys()):
            topics.append(("policy", group.policy))
        return tuple(topics)

    def _grant_head(self, group: QueueGroup) -> tuple[str, bool]:
        request = group.members[group.next]
        group.next += 1
        pool, order = group.pools[group.cursor], len(self.grants)  # R-47: the grants' order
        held_on = self.ledger.release_hold(request.id)  # the hold ends when it is granted
        self.ledger.charge(request.policy, pool, request.resources, request.preemptible)
        if self.ledger.reserving.get(pool):
            self.ledger.yield_reserved(group.terms[group.cursor])  # a backfill takes the held room
        limit = self.config.policy[request.policy].run_limit(request.max_runtime_seconds)
        ends = None if limit is None else self.now + timedelta(seconds=limit)
        self.grants.append(_decision(request, State.ALLOCATED, Reason.GRANTED, f"granted on pool {pool}", pool=pool,
                                     grant_order=order, time_limit_at=ends))
        self.live.append(Allocation(request.id, request.policy, pool, request.resources, request.preemptible, self.now,
                                    order, time_limit_at=ends))
        if held_on == pool:  # granted what was held for it; never barred
            self.owed.add(request.id)
        return pool, held_on is not None and held_on != pool


_decision = Decision.of
_SUBMITTED_AT, _ID = attrgetter("submitted_at"), attrgetter("id")


def _submission_order(pending: list[Request]) -> Callable[[Request], object]:
    """A sort key for R-32.5 (submission, then id) on members listed in ``pending``'s order.

    A stable sort keeps that order among equal submission times, so when ``pending`` lists ids in
    ascending order the time alone gives the same order, and compares one value instead of a pair.
    A snapshot's requests come in id order (``Snapshot``); one built otherwise (a test's) still
    gets R-32.5, so the order is checked here, once per pass."""
    ids = list(map(_ID, pending))
    return _SUBMITTED_AT if ids == sorted(ids) else by_submission
