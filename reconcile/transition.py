"""Carry a plan out on the snapshot's requests, purely: what the service does in its database,
done on values, so tests, property runs and previews can move from pass to pass.

>>> from datetime import datetime, timezone
>>> from reconcile.model import Config, Pool, Policy, Profile
>>> from reconcile.planner import plan
>>> t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
>>> config = Config((Pool("p", Vector.of(gpu=1)),), (Profile("one", Vector.of(gpu=1), pools=("p",), policies=("t",)),), (Policy("t"),))
>>> s = Snapshot(t0, config, (Request(1, "t", "one", Vector.of(gpu=1, step_run=1), t0),))
>>> [r.state for r in advance(s, plan(s)).requests]
[<State.ALLOCATED: 'allocated'>]
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from . import lifecycle
from .model import Request, Snapshot, State
from .plan import Plan
from .quantity import Vector  # noqa: F401  (doctest)


def advance(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """The snapshot after ``plan`` is applied at ``plan.now``; decisions whose request is no
    longer in the state the planner saw are skipped, as the service's conditional writes do."""
    requests = {r.id: r for r in snapshot.requests}
    for decision in plan.decisions():
        request = requests.get(decision.request_id)
        if request is None or request.state != decision.from_state:
            continue
        requests[request.id] = _apply(request, decision, plan.now)
    for request_id, waiting in plan.waiting.items():
        request = requests[request_id]
        if request.state == State.PENDING:
            requests[request_id] = replace(request, reason=waiting.reason)
    return replace(snapshot, now=plan.now, requests=tuple(requests.values()))


def _apply(request: Request, decision, now) -> Request:
    if decision.state == State.ALLOCATED:
        return replace(request, state=State.ALLOCATED, pool=decision.pool, allocated_at=now, held_pool=None,
                       lease_expires_at=now + timedelta(seconds=request.lease_seconds), reason=decision.reason)
    if decision.state == State.PREEMPTING:
        return replace(request, state=State.PREEMPTING, preempted_by=decision.preempted_by, preempted_at=now,
                       reason=decision.reason)
    if decision.state == State.PENDING and decision.from_state == State.PENDING:  # R-45 hold
        return replace(request, held_pool=decision.pool, reason=decision.reason)
    if decision.from_state == State.PREEMPTING and decision.state in (State.PENDING, State.PREEMPTED):
        return lifecycle.evict(request, now)
    return replace(request, state=decision.state, reason=decision.reason)
