"""The harness of the engine's table tests: a Case is a snapshot and the whole expected outcome.

An outcome maps each request id to one line that says where the pass left it:

    "allocated on dc"                       granted, or already running there
    "pending WaitingForQuota #1"            still queued: reason and position
    "preempting PreemptedByPriority by 2"   chosen as a victim of request 2
    "rejected ExceedsReserved"              any other state: state and reason
"""

from __future__ import annotations

from dataclasses import dataclass

from reconcile import Plan, Snapshot, State, plan
from reconcile.transition import carry_out


@dataclass(frozen=True)
class Case:
    name: str
    rules: tuple[str, ...]  # the spec rules the case covers, e.g. ("R-41", "R-42")
    snapshot: Snapshot
    expected: dict[int, str]

    def __str__(self) -> str:
        return f"{'+'.join(self.rules)} {self.name}"


def case_id(case: Case) -> str:
    return str(case)


def describe(snapshot: Snapshot, result: Plan) -> dict[int, str]:
    """One line per request of ``snapshot`` after ``result`` is applied."""
    after = carry_out(snapshot, result)
    lines = {}
    for request in after.requests:
        if request.state == State.ALLOCATED:
            lines[request.id] = f"allocated on {request.pool}"
        elif request.state == State.PENDING:
            waiting = result.waiting[request.id]
            lines[request.id] = f"pending {waiting.reason} #{waiting.position}"
        elif request.state == State.PREEMPTING:
            lines[request.id] = f"preempting {request.reason} by {request.preempted_by}"
        else:
            lines[request.id] = f"{request.state} {request.reason}"
    return lines


def outcome(snapshot: Snapshot) -> dict[int, str]:
    return describe(snapshot, plan(snapshot))


def settle(snapshot: Snapshot, max_passes: int = 10) -> Snapshot:
    """Run passes until one changes nothing (I-8); fail if that takes more than ``max_passes``."""
    for _ in range(max_passes):
        result = plan(snapshot)
        if result.empty:
            return snapshot
        snapshot = carry_out(snapshot, result)
    raise AssertionError(f"no steady state after {max_passes} passes")
