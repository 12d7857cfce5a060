"""Pending requests that behave identically, judged once for all their members.

Requests of one queue with the same resources and preemptibility fit, borrow and wait for the
same reasons; only their submission order differs. The planner judges the group and serves its
members oldest first, so a queue of 10,000 identical jobs costs one fit check per grant, not
10,000. A preemptor with victims in flight has its own group: its hold makes it differ (R-45).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count, groupby
from operator import attrgetter, itemgetter

from .ledger import Ledger
from .model import Config, Request
from .ordering import ServiceKey, service_key
from .quantity import Vector
from .quota import Connected, PoolTerms

by_submission = attrgetter("submitted_at", "id")  # the tail of the service key


class QueueGroup:
    __slots__ = (
        "policy", "profile", "resources", "preemptible", "holder", "priority", "rank",
        "members", "next", "pools", "terms", "execution", "cursor", "version", "watching", "preempted", "key",
    )

    def __init__(self, policy: str, profile: str, resources: Vector, preemptible: bool, holder: int | None) -> None:
        self.policy, self.profile, self.resources = policy, profile, resources
        self.preemptible, self.holder = preemptible, holder
        self.members: list[Request] = []
        self.next = 0  # members before this index have been granted in this pass
        self.priority = self.rank = 0
        self.pools: tuple[str, ...] = ()  # eligible pools, in precedence order
        self.terms: tuple[PoolTerms, ...] = ()
        self.execution: tuple[int, ...] = ()
        self.cursor = 0  # pools before it do not fit now, and cannot again in this pass
        self.version = 0  # bumped at each re-evaluation; older heap entries are stale
        self.watching: tuple[tuple[str, str], ...] = ()
        self.preempted = False  # some member found victims in this pass
        self.key: ServiceKey | None = None  # R-32 key of its oldest waiting member, set by service_order

    @property
    def waiting(self) -> list[Request]:
        return self.members[self.next :]

    def bind(self, config: Config, pools: Connected) -> None:
        """Serve the group on its eligible ``pools``, each with its policy's terms there."""
        self.priority = config.policy[self.policy].priority
        self.rank = config.policy_rank[(self.profile, self.policy)]
        self.pools = tuple(pool for pool, _ in pools)
        self.terms = tuple(terms for _, terms in pools)
        self.execution = tuple(config.execution_index[(pool, self.profile)] for pool in self.pools)


Run = tuple[QueueGroup, list[Request]]


def service_order(groups: list[QueueGroup], ledger: Ledger) -> list[QueueGroup]:
    """Groups with waiting members, sorted by the R-32 service key of their oldest waiting member,
    judged at their most preferred eligible pool; the key is kept on the group."""
    ordered = []
    for group in groups:
        waiting = group.waiting
        if waiting:
            head = waiting[0]
            in_share = ledger.in_share(group.terms[0], group.resources, group.holder)
            group.key = service_key(group.priority, in_share, group.execution[0], group.rank,
                                    head.submitted_at, head.id)
            ordered.append(group)
    ordered.sort(key=attrgetter("key"))
    return ordered


def serving_order(ordered: list[QueueGroup]) -> list[Run]:
    """Every waiting request in the order a pass serves them (R-32): one order over all pools, as
    one pass serves every pool from one heap.

    Keys tie up to the submission time only between groups of one standing (criteria 1 to 4: one
    queue, other shapes, or queues that tie on another pool): only those groups have their members
    merged, in runs of consecutive members of one group, as the heap would pop them."""
    runs: list[Run] = []
    for _, tied in groupby(ordered, key=_standing):
        block = list(tied)
        if len(block) == 1:
            runs.append((block[0], block[0].waiting))
            continue
        merged = sorted((m.submitted_at, m.id, i, m) for i, group in enumerate(block) for m in group.waiting)
        for i, members in groupby(merged, key=itemgetter(2)):
            runs.append((block[i], [entry[3] for entry in members]))
    return runs


def serving_places(ordered: list[QueueGroup]) -> dict[int, Sequence[int]]:
    """Each group's waiting members' places in ``serving_order`` (1-based), by ``id(group)``: what
    positions are numbered from, per group rather than per run, so that a caller handles a group's
    members together — runs of tied groups fragment to one member each at 10^5 waiting."""
    places: dict[int, Sequence[int]] = {}
    place = 1
    for _, tied in groupby(ordered, key=_standing):
        block = list(tied)
        if len(block) == 1:
            count_waiting = len(block[0].members) - block[0].next
            places[id(block[0])] = range(place, place + count_waiting)
            place += count_waiting
            continue
        merged = sorted((m.submitted_at, m.id, i) for i, group in enumerate(block) for m in group.waiting)
        # (group index, place) in C, sorted by group then place: each group's places, in its own order.
        for i, entries in groupby(sorted(zip(map(itemgetter(2), merged), count(place))), key=itemgetter(0)):
            places[id(block[i])] = list(map(itemgetter(1), entries))
        place += len(merged)
    return places


def _standing(group: QueueGroup) -> tuple[int, bool, int, int]:
    return group.key.standing
