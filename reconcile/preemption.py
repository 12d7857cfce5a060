"""Preemption and reclaim, phase 4 of a pass (R-40…R-45).

Victim search is Kueue's and kube-scheduler's: take candidates in order until the preemptor
fits, then walk back and give a reprieve to every victim it still fits without. The preemptor
lacks 4 gpu; candidates in R-42 order hold 1, 2 and 3: 1+2 is not enough, 1+2+3 is. Walking
back, c is needed (1+2 < 4), b is not (1+3 ≥ 4), and then a is (3 < 4):

>>> choose_victims({"gpu": 4}, [("a", {"gpu": 1}), ("b", {"gpu": 2}), ("c", {"gpu": 3})])
['a', 'c']
>>> choose_victims({"gpu": 4}, [("a", {"gpu": 1})]) is None   # not enough: preempt nobody
True
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple, TypeVar

from .borrowing import borrowing_keys
from .groups import QueueGroup
from .ledger import Ledger
from .model import ALLOCATED, Config, Request, State
from .ordering import VictimKey, micros, victim_key
from .plan import Decision
from .quantity import sum_resources
from .quota import TermsCache
from .reasons import Reason

Victim = TypeVar("Victim")


def choose_victims(
    short: Mapping[str, int], candidates: Sequence[tuple[Victim, Mapping[str, int]]]
) -> list[Victim] | None:
    """R-43: the victims that free every short amount, or None when all of them are not enough.

    ``short`` is key → amount lacking; each candidate is (victim, resources it holds)."""
    lacking = dict(short)
    chosen: list[tuple[Victim, Mapping[str, int]]] = []
    for victim, holds in candidates:
        if all(amount <= 0 for amount in lacking.values()):
            break
        chosen.append((victim, holds))
        for key in lacking:
            lacking[key] -= holds.get(key, 0)
    if any(amount > 0 for amount in lacking.values()):
        return None
    kept = []
    for victim, holds in reversed(chosen):
        if all(lacking[key] + holds.get(key, 0) <= 0 for key in lacking):
            for key in lacking:  # a reprieve: the preemptor fits without this one
                lacking[key] += holds.get(key, 0)
        else:
            kept.append(victim)
    return kept[::-1]


class _Preemptible(NamedTuple):
    """A preemptible allocation on a pool, prepared for the preemptors that look for victims there."""

    priority: int  # of its policy
    victim: Request
    borrowed: set[str]  # the keys of which it holds borrowed units
    key_if_borrowing: VictimKey  # its R-42 key where it borrows a key the preemptor lacks
    key_if_in_share: VictimKey  # and where it does not


class ProtectedWait(NamedTuple):
    """R-48: the victims a preemptor would take on ``pool`` if they were not protected yet, and the
    moment the last of them becomes a victim."""

    pool: str
    until: datetime
    victims: tuple[int, ...]

    @property
    def message(self) -> str:
        return (f"request(s) {', '.join(map(str, self.victims))} on pool {self.pool} would make room but are "
                f"protected from preemption until {self.until:%Y-%m-%d %H:%M:%S %Z}".rstrip())


class Preemption:
    """Each request that fits nowhere and has no victims in flight looks for victims (R-40).

    When a member of a group finds none, later members cannot either: they are identical and the
    pass only takes room away. So each group fails at most once."""

    def __init__(self, config: Config, terms: TermsCache, ledger: Ledger, live: list[Request],
                 victims_of: dict[int, list[int]], now: datetime | None = None,
                 barred: frozenset[tuple[int, str]] = frozenset()) -> None:
        self.config, self.terms, self.ledger, self.live = config, terms, ledger, live
        self.victims_of = victims_of
        self.barred = {request_id for request_id, _ in barred}  # not granted where a reclaim would take it
        self.decisions: list[Decision] = []
        self.holds: list[Decision] = []
        self.waits: dict[int, ProtectedWait] = {}  # preemptor → the protected victims it waits for
        self.waiting_groups: dict[int, tuple[QueueGroup, Request]] = {}  # those preemptors, to judge again
        self.claimed: set[int] = set()
        self.borrowed: dict[str, dict[int, set[str]]] = {}
        self.by_policy: defaultdict[str, list[Request]] = defaultdict(list)
        # pool → (priority, victim) of its preemptible allocations; sorted and timed on first use
        self.on_pool: defaultdict[str, list] = defaultdict(list)
        self.sorted: dict[str, list[_Preemptible]] = {}  # see _on
        self.lowest: dict[str, int] = {}  # pool → lowest priority among its preemptible allocations
        priority_of = {policy.name: policy.priority for policy in config.policies}
        # allocation → the moment it becomes a victim, for those that have not run long enough
        self.protected_until: dict[int, datetime] = {}
        self.protected_on: set[str] = set()  # pools with such allocations
        protection = {policy.name: timedelta(seconds=policy.min_runtime_seconds) for policy in config.policies
                      if policy.min_runtime_seconds} if now is not None else {}
        for request in live:
            self.by_policy[request.policy].append(request)
            if request.state is ALLOCATED and request.preemptible:
                priority = priority_of.get(request.policy, 0)
                self.on_pool[request.pool].append((priority, request))
                if priority < self.lowest.get(request.pool, priority + 1):
                    self.lowest[request.pool] = priority
                runs = protection.get(request.policy)
                if runs is not None and request.allocated_at is not None and request.allocated_at + runs > now:
                    self.protected_until[request.id] = request.allocated_at + runs
                    self.protected_on.add(request.pool)

    @property
    def wake_at(self) -> datetime | None:
        """The earliest moment protected victims that a preemptor waits for become victims (R-48)."""
        return min((wait.until for wait in self.waits.values()), default=None)

    def run(self, ordered: list[QueueGroup]) -> None:
        """Preemptors in R-32 order (judged once, after the grants): a merge of the groups' members
        by a heap of groups, so a group that fails leaves the heap with all its members."""
        heap = [(group.key, group.next, group) for group in ordered]
        heapq.heapify(heap)
        barred_later: list[tuple[QueueGroup, Request]] = []
        while heap:
            key, index, group = heapq.heappop(heap)
            members = group.members  # waiting from group.next on
            request = members[index]
            waits_for_victims = request.id in self.ledger.holds or request.id in self.victims_of
            if not waits_for_victims and not self._find_victims(group, request):
                if request.id in self.barred:
                    barred_later.append((group, request))
                continue  # the rest of the group cannot find victims either
            if index + 1 < len(members):
                after = members[index + 1]
                heapq.heappush(heap, (key.of_member(after.submitted_at, after.id), index + 1, group))
        # a request barred from room it fits in finds no victims while that room looks free;
        # the reclaim it was barred for holds the room by the end, as the next pass finds it.
        for group, request in barred_later:
            self._find_victims(group, request)
        self._judge_protected_waits()

    def _judge_protected_waits(self) -> None:
        """R-48: a wait for protected victims is told as the pass leaves things, which the next pass
        finds: preemptors after it may have taken its unprotected victims or held room it needed.
        The pass only takes room away, so judged again a wait can only go, never become victims."""
        waits, self.waits = self.waits, {}
        for request_id, (group, preemptor) in self.waiting_groups.items():
            if request_id in waits:
                found = self._search(group, preemptor)
                if isinstance(found, ProtectedWait):
                    self.waits[request_id] = found

    def _find_victims(self, group: QueueGroup, preemptor: Request) -> bool:
        found = self._search(group, preemptor)
        if isinstance(found, ProtectedWait):
            self.waits[preemptor.id] = found
            self.waiting_groups[preemptor.id] = (group, preemptor)
        elif found is not None:
            self._evict_for(preemptor, group, *found)
            return True
        return False

    def _search(self, group: QueueGroup, preemptor: Request) -> tuple[str, list[Request]] | ProtectedWait | None:
        """The first pool where a victim set works and the set (R-40), else the protected victims it
        would wait for (R-48), else None. Changes nothing."""
        ledger, resources = self.ledger, group.resources
        protected: ProtectedWait | None = None  # the first pool where protected victims would do
        for pool, terms in zip(group.pools, group.terms):
            if pool not in self.lowest:
                continue  # nothing preemptible there
            in_share = ledger.in_share(terms, resources)
            if not in_share and group.priority <= self.lowest[pool]:
                continue  # neither rule of R-41 can hold for anyone there
            # Only pool room may be cured by evicting others; own limit and reservation never are.
            if ledger.over_limit(terms, resources) or ledger.over_reserved(terms, resources, group.preemptible):
                continue
            with ledger.reservations_aside(pool):  # room held for overdue requests makes nobody short
                short = ledger.room_short(terms, resources, preemptor.id)
            if not short:
                continue
            candidates = self._candidates(pool, group, short, in_share)
            victims = choose_victims(short, [(c, c.resources) for c in candidates])
            if victims:
                return pool, victims
            if protected is None and pool in self.protected_on:
                everyone = self._candidates(pool, group, short, in_share, protected_too=True)
                victims = choose_victims(short, [(c, c.resources) for c in everyone])
                if victims:  # some of them protected, as all the others together were not enough
                    until = max(self.protected_until[v.id] for v in victims if v.id in self.protected_until)
                    protected = ProtectedWait(pool, until, tuple(v.id for v in victims))
        return protected

    def _candidates(self, pool: str, group: QueueGroup, short: dict[str, int], in_share: bool,
                    protected_too: bool = False) -> list[Request]:
        """R-41 victims on ``pool`` for a preemptor of ``group``, in R-42 order; without those
        protected by their policy's ``min_runtime_seconds`` (R-48) unless ``protected_too``."""
        found = []
        short_keys, claimed = short.keys(), self.claimed
        protected = () if protected_too else self.protected_until
        for victim_priority, victim, borrowed, key_if_borrowing, key_if_in_share in self._on(pool):
            if victim_priority >= group.priority and not in_share:
                break  # neither rule of R-41, for this one and all after it (they are sorted by priority)
            if victim.id in claimed or victim.policy == group.policy or short_keys.isdisjoint(victim.resources):
                continue
            if protected and victim.id in protected:
                continue
            if not short_keys.isdisjoint(borrowed):  # by priority, or reclaimed: H is in share if not lower
                found.append((key_if_borrowing, victim))
            elif victim_priority < group.priority:
                found.append((key_if_in_share, victim))
        found.sort(key=_first)
        return [victim for _, victim in found]

    def _on(self, pool: str) -> list[_Preemptible]:
        """The pool's preemptible allocations, lowest priority first; prepared only for the pools
        where someone looks for victims."""
        found = self.sorted.get(pool)
        if found is None:
            found = self.sorted[pool] = []
            for priority, victim in sorted(self.on_pool[pool], key=_first):
                allocated = micros(victim.allocated_at)
                found.append(_Preemptible(priority, victim, self._borrowing(victim.policy)[victim.id],
                                          victim_key(priority, True, allocated, victim.id, victim.grant_order),
                                          victim_key(priority, False, allocated, victim.id, victim.grant_order)))
        return found

    def _borrowing(self, policy: str) -> dict[int, set[str]]:
        """Per live allocation of ``policy``, the keys of which it holds borrowed units."""
        if policy not in self.borrowed:
            self.borrowed[policy] = borrowing_keys(self.terms, policy, self.by_policy[policy])
        return self.borrowed[policy]

    def _evict_for(self, preemptor: Request, group: QueueGroup, pool: str, victims: list[Request]) -> None:
        group.preempted = True
        for victim in victims:
            self.claimed.add(victim.id)
            self.victims_of.setdefault(preemptor.id, []).append(victim.id)
            victim_priority = self.config.policy[victim.policy].priority
            if victim_priority < group.priority:
                reason = Reason.PREEMPTED_BY_PRIORITY
                why = f"policy {group.policy} has priority {group.priority}, above {victim_priority}"
            else:
                reason = Reason.RECLAIMED
                why = f"policy {group.policy} reclaims capacity within its reservation"
            self.decisions.append(Decision.of(
                victim, State.PREEMPTING, reason, f"preempted by request {preemptor.id} on pool {pool}: {why}",
                pool=pool, preempted_by=preemptor.id,
            ))
        self.ledger.hold(preemptor.id, group.policy, pool, preemptor.resources, group.preemptible,
                         sum_resources(victims))
        self.holds.append(Decision.of(
            preemptor, State.PENDING, Reason.WAITING_FOR_PREEMPTION,
            f"capacity on pool {pool} is held for it while {len(victims)} request(s) leave", pool=pool))


def _first(entry: tuple) -> tuple:
    return entry[0]
