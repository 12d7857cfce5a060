"""What provisioning a new configuration would do to the live state (R-55…R-57).

The preview runs the same planner the reconciler runs, on the live requests under the new
configuration: requests cancelled because their queue is gone (R-56), rejected because they can
no longer be eligible (R-15), granted and preempted; and usage per policy, scope and key before
and after. A configuration that removes a pool, profile or policy still holding live
allocations cannot be provisioned (R-57): the preview names them.

>>> old = Config((Pool("a", Vector.of(gpu=1)),), (Profile("one", Vector.of(gpu=1), pools=("a",), policies=("t",)),), (Policy("t"),))
>>> running = Request(1, "t", "one", Vector.of(gpu=1), t0, state=State.ALLOCATED, pool="a", allocated_at=t0)
>>> [r.message for r in preview(Snapshot(t0, old, (running,)), Config(policies=(Policy("t"),))).refusals]
['pool a still holds live request(s) 1', 'profile one still holds live request(s) 1']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .model import Config, Request, Snapshot
from .plan import Plan
from .planner import plan
from .quota import TermsCache
from .report import UsageRow, usage_report
from .transition import carry_out


@dataclass(frozen=True, slots=True)
class Refusal:
    """A removal R-57 forbids: ``kind`` (pool, profile or policy) ``name`` still has live requests."""

    kind: str
    name: str
    request_ids: tuple[int, ...]

    @property
    def message(self) -> str:
        return f"{self.kind} {self.name} still holds live request(s) {', '.join(map(str, self.request_ids))}"


@dataclass(frozen=True)
class Preview:
    refusals: tuple[Refusal, ...]  # non-empty: provisioning must be refused
    plan: Plan  # what the first pass under the new configuration decides
    usage_before: tuple[UsageRow, ...]
    usage_after: tuple[UsageRow, ...]

    @property
    def provisionable(self) -> bool:
        return not self.refusals


def refused_removals(requests: Iterable[Request], config: Config) -> tuple[Refusal, ...]:
    """R-57: live requests on a pool, profile or policy that ``config`` no longer has."""
    missing: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for request in requests:
        if not request.state.live:
            continue
        for kind, name, known in (("pool", request.pool, config.pool), ("profile", request.profile, config.profile),
                                  ("policy", request.policy, config.policy)):
            if name not in known:
                missing[(kind, name)].append(request.id)
    order = {"pool": 0, "profile": 1, "policy": 2}
    return tuple(Refusal(kind, name, tuple(sorted(ids)))
                 for (kind, name), ids in sorted(missing.items(), key=lambda item: (order[item[0][0]], item[0][1])))


def preview(snapshot: Snapshot, config: Config, terms: TermsCache | None = None) -> Preview:
    """Provisioning ``config`` on top of ``snapshot``, without changing anything.

    ``terms``: a TermsCache of ``snapshot.config`` (the live one) the caller keeps; the proposed
    ``config`` gets a fresh one, shared by its plan and its usage."""
    proposed, proposed_terms = replace(snapshot, config=config), TermsCache(config)
    decided = plan(proposed, proposed_terms)
    after = carry_out(proposed, decided)
    return Preview(
        refusals=refused_removals(snapshot.requests, config),
        plan=decided,
        usage_before=tuple(usage_report(snapshot.config, snapshot.requests, terms)),
        usage_after=tuple(usage_report(config, after.requests, proposed_terms)),
    )
