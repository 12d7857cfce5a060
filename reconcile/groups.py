"""Pending requests that behave identically, judged once for all their members.

Requests of one queue with the same resources and preemptibility fit, borrow and wait for the
same reasons; only their submission order differs. The planner judges the group and serves its
members oldest first, so a queue of 10,000 identical jobs costs one fit check per grant, not
10,000. A preemptor with victims in flight has its own group: its hold makes it differ (R-45).
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Config, Request
from .quantity import Vector
from .quota import PoolTerms, TermsCache


class QueueGroup:
    __slots__ = (
        "policy", "profile", "resources", "preemptible", "holder", "priority", "rank",
        "members", "next", "pools", "terms", "execution", "cursor", "version", "watching",
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
        self.watching: tuple[str, str] | None = None

    @property
    def waiting(self) -> list[Request]:
        return self.members[self.next :]

    def bind(self, config: Config, terms: TermsCache, pools: tuple[str, ...]) -> None:
        self.priority = config.policy[self.policy].priority
        self.rank = config.policy_rank[(self.profile, self.policy)]
        self.pools = pools
        self.terms = tuple(terms(self.policy, pool) for pool in pools)
        self.execution = tuple(config.execution_index[(pool, self.profile)] for pool in pools)


def group_requests(
    pending: Iterable[tuple[Request, tuple[str, ...]]], holders: set[int], config: Config, terms: TermsCache
) -> list[QueueGroup]:
    """Group (request, eligible pools) pairs; members sorted by first submission, then id."""
    groups: dict[tuple, QueueGroup] = {}
    for request, pools in pending:
        holder = request.id if request.id in holders else None
        signature = (request.policy, request.profile, request.resources, request.preemptible, holder)
        group = groups.get(signature)
        if group is None:
            group = groups[signature] = QueueGroup(*signature)
            group.bind(config, terms, pools)
        group.members.append(request)
    for group in groups.values():
        group.members.sort(key=_submission)
    return list(groups.values())


def _submission(request: Request) -> tuple:
    return (request.submitted_at, request.id)
