"""What a decision does to a request, written once (docs/scheduling.md §2, R-31, R-44…R-46, R-50, R-51).

``applied`` is the meaning of every ``Decision`` — the planner's, and the release, cancel and
eviction of ``lifecycle``. Everything that moves a request uses it: the planner's own simulation
of a pass, ``carry_out`` (tests, property runs, the preview, the invariant checker) and the
service, which writes the ``changes`` between before and after as columns.

>>> from datetime import datetime, timezone
>>> from reconcile.model import Config, Pool, Policy, Profile
>>> from reconcile.planner import plan
>>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> config = Config((Pool("p", Vector.of(gpu=1)),), (Profile("one", Vector.of(gpu=1), pools=("p",), policies=("t",)),), (Policy("t"),))
>>> s = Snapshot(t0, config, (Request(1, "t", "one", Vector.of(gpu=1, step_run=1), t0, lease_seconds=60),))
>>> granted = carry_out(s, plan(s)).requests[0]
>>> sorted(changes(s.requests[0], granted))
['allocated_at', 'lease_expires_at', 'pool', 'reason', 'state']
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime, timedelta
from typing import Any

from .model import ALLOCATED, PENDING, PREEMPTING, Request, Snapshot
from .plan import Decision, Plan
from .reasons import Reason
from .quantity import Vector  # noqa: F401  (doctest)

_REQUEST_FIELDS = tuple(f.name for f in fields(Request))


def applied(request: Request, decision: Decision, now: datetime) -> Request:
    """``request`` after ``decision`` takes effect at ``now``."""
    state, reason = decision.state, decision.reason
    if state is ALLOCATED and decision.from_state is ALLOCATED:  # warned of its run limit
        return replace(request, reason=reason)
    if state is ALLOCATED:  # R-31 a grant, with a fresh lease; a hold ends with it
        return replace(request, state=state, reason=reason, pool=decision.pool, allocated_at=now,
                       grant_order=decision.grant_order, time_limit_at=decision.time_limit_at, held_pool=None,
                       lease_expires_at=now + timedelta(seconds=request.lease_seconds))
    if state is PREEMPTING:  # it keeps its capacity until it leaves; the grace runs from now
        return replace(request, state=state, reason=reason, preempted_by=decision.preempted_by, preempted_at=now)
    if state is PENDING and decision.from_state is PENDING:  # capacity held for a preemptor
        return replace(request, reason=reason, held_pool=decision.pool)
    if state is PENDING:  # evicted with a retry left, queued again keeping its first submission;
        # at its run limit, queued anew, behind those already waiting
        submitted = now if reason is Reason.TIME_LIMIT else request.submitted_at
        return replace(request, state=state, reason=reason, attempt=request.attempt + 1, pool=None,
                       submitted_at=submitted,
                       allocated_at=None, grant_order=0, time_limit_at=None, lease_expires_at=None, preempted_by=None, preempted_at=None,
                       held_pool=None)
    # Terminal: it holds nothing; where it ran and who preempted it stay on record.
    return replace(request, state=state, reason=reason, held_pool=None)


def changes(before: Request, after: Request) -> dict[str, Any]:
    """The fields ``after`` has that ``before`` had otherwise, by name."""
    return {name: getattr(after, name) for name in _REQUEST_FIELDS if getattr(before, name) != getattr(after, name)}


def carry_out(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """The snapshot once ``plan`` is applied at ``plan.now``: decisions whose request is no longer
    in the state the planner saw are skipped, as the service's conditional writes skip them."""
    requests = {r.id: r for r in snapshot.requests}
    for decision in plan.decisions():
        request = requests.get(decision.request_id)
        if request is not None and request.state == decision.from_state:
            requests[request.id] = applied(request, decision, plan.now)
    for request_id, waiting in plan.waiting.items():
        request = requests[request_id]
        if request.state is PENDING:
            requests[request_id] = replace(request, reason=waiting.reason)
    return replace(snapshot, now=plan.now, requests=tuple(requests.values()))
