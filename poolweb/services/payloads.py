"""The JSON objects of docs/api.md §3–4 — a request, a pool's and a policy's live state — as the REST API
answers them and the event stream sends them. Built here, below both, by hand: DRF's generic
serializer walk costs about a millisecond a row and a pass may announce ten thousand requests.
The API's serializers describe the same shapes for the OpenAPI schema, and a test holds them
equal (tests/poolweb/test_payloads.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.conf import settings

from poolweb.selectors.live import PolicyState, PoolState
from poolweb.selectors.requests import Audience
from reconcile import UNFINISHED_STATES, State, format_quantity
from reconcile.eta import confidence

REQUEST_FIELDS = ("id", "name", "policy", "profile", "owner", "resources", "preemptible", "max_retries", "attempt",
                  "state", "reason", "message", "pool", "position", "preempted_by", "labels", "submitted_at",
                  "allocated_at", "finished_at", "lease_expires_at", "lease_seconds", "queue_pool", "held_pool",
                  "grace_ends_at", "warnings", "submitted_by", "max_runtime_seconds", "time_limit_at", "eta", "eta_basis",
                  "eta_confidence")
# The columns ``request_data`` reads: a preempting request's grace ends ``EVICTION_GRACE_SECONDS``
# after ``preempted_at``, so that is stored and ``grace_ends_at`` is not; ``warnings`` are
# worked out of ``preemptible`` and ``max_retries``.
REQUEST_COLUMNS = (*(name for name in REQUEST_FIELDS if name not in ("grace_ends_at", "warnings", "eta_confidence")),
                   "preempted_at")
# What anyone signed in sees of a request that is neither theirs nor their team's (docs/api.md §4,
# privacy): where it stands and what it takes, not who asked, what for, or the numbers behind it.
PUBLIC_REQUEST_FIELDS = ("id", "state", "position", "held_pool", "policy", "profile", "resources", "pool",
                         "submitted_at", "allocated_at", "finished_at", "lease_expires_at", "grace_ends_at", "eta",
                         "eta_basis", "eta_confidence")


def json_number(value: int | Decimal) -> int | float:
    """A quantity as ``format_quantity`` gives it, as a JSON number. A valid quantity has at most 15
    significant digits (≤ 10^12, three decimals), which a float holds exactly."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def json_ready(value: Any) -> Any:
    """``value`` with every Decimal inside it (``reconcile.document.to_document``'s) a JSON number."""
    if isinstance(value, Decimal):
        return json_number(value)
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_ready(v) for v in value]
    return value


def quantity(milli: int | None) -> int | float | None:
    return None if milli is None else json_number(format_quantity(milli))


def quantities(milli: Mapping[str, int]) -> dict[str, int | float]:
    """key → milli-units as key → number (2, 0.5, 0.143), keys in name order, zeros left out."""
    return dict(_quantities(tuple(milli.items())))


@lru_cache(maxsize=4096)  # a pass announces thousands of requests of a few dozen profiles
def _quantities(milli: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int | float], ...]:
    return tuple((key, json_number(format_quantity(amount))) for key, amount in sorted(milli) if amount)


def api_time(value: datetime | None) -> str | None:
    """As DRF writes a datetime with TIME_ZONE UTC: ISO 8601, ``Z`` for +00:00."""
    if value is None:
        return None
    text = (value if value.tzinfo is timezone.utc else value.astimezone(timezone.utc)).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def request_data(row: Any) -> dict:
    """The request object of a request row (or any object with its fields and ``owner.username``)."""
    return {
        "id": row.pk, "name": row.name, "policy": row.policy, "profile": row.profile,
        "owner": row.owner.username, "resources": quantities(row.resources),
        "preemptible": row.preemptible, "max_retries": row.max_retries, "attempt": row.attempt,
        "state": row.state, "reason": row.reason, "message": row.message, "pool": row.pool,
        "position": row.position if row.state == State.PENDING.value else None,
        "preempted_by": row.preempted_by, "labels": {key: str(value) for key, value in row.labels.items()},
        "submitted_at": api_time(row.submitted_at), "allocated_at": api_time(row.allocated_at),
        "finished_at": api_time(row.finished_at), "lease_expires_at": api_time(row.lease_expires_at),
        "lease_seconds": row.lease_seconds, "queue_pool": row.queue_pool,
        "held_pool": row.held_pool,
        "grace_ends_at": api_time(grace_end(row)),
        "warnings": request_warnings(row.state, row.preemptible, row.max_retries),
        "submitted_by": row.submitted_by,
        "max_runtime_seconds": row.max_runtime_seconds, "time_limit_at": api_time(row.time_limit_at),
        **eta_data(row.state, row.eta, row.eta_basis),
    }


NO_ETA_DATA = {"eta": None, "eta_basis": None, "eta_confidence": None}


def eta_data(state: str, eta: datetime | None, basis: str) -> dict[str, str | None]:
    """R-54: a pending request's estimated start, its basis and confidence; all null before its
    first pass and unless pending."""
    if state != State.PENDING.value or not basis:
        return dict(NO_ETA_DATA)
    return {"eta": api_time(eta), "eta_basis": basis, "eta_confidence": confidence(basis)}


PREEMPTIBLE_WITHOUT_RETRIES = {
    "code": "preemptible_without_retries",
    "message": "it is preemptible with max_retries 0: if it is preempted or reclaimed (R-41) it ends preempted "
               "and is not queued again; give max_retries to have it re-queued (R-46)",
}


def request_warnings(state: str, preemptible: bool, max_retries: int) -> list[dict[str, str]]:
    """What its owner should know while it may still run, each ``{code, message}`` (decision 117):
    a preemptible request with no retries is lost for good at its first preemption. A finished
    request is warned of nothing: its story is its reason."""
    if state in UNFINISHED_STATES and preemptible and max_retries == 0:
        return [dict(PREEMPTIBLE_WITHOUT_RETRIES)]
    return []


def grace_end(row: Any) -> datetime | None:
    """When the eviction grace of a preempting request ends (R-44): the reconciler evicts it at the
    first pass after that. None unless preempting."""
    if row.state != State.PREEMPTING.value or row.preempted_at is None:
        return None
    return row.preempted_at + timedelta(seconds=settings.POOLWEB["EVICTION_GRACE_SECONDS"])


def request_data_for(row: Any, audience: Audience) -> dict:
    """The request object as ``audience`` may see it: whole, or only its public fields."""
    data = request_data(row)
    if audience.sees_details(row.owner_id, row.policy):
        return data
    return {key: data[key] for key in PUBLIC_REQUEST_FIELDS}


def change_data(change: Any) -> dict:
    """One entry of a request's history."""
    return {"at": api_time(change.at), "state": change.state, "reason": change.reason, "message": change.message,
            "attempt": change.attempt, "pool": change.pool}


def pool_state_data(state: PoolState) -> dict:
    """``GET /pools`` entry and ``pool.updated`` data. Capacity lists every key it states (a 0 too)."""
    return {
        "name": state.name, "description": state.description,
        "capacity": {key: quantity(amount) for key, amount in state.capacity.items()},
        "used": _all(state.used), "free": _all(state.free), "overcommitted": _all(state.overcommitted),
        "held": _all(state.held), "pending": state.pending, "running": state.running,
    }


def _all(milli: Mapping[str, int]) -> dict[str, int | float]:
    return {key: quantity(amount) for key, amount in milli.items()}


def policy_state_data(state: PolicyState) -> dict:
    """``GET /policies`` entry and ``policy.updated`` data."""
    return {
        "name": state.name, "description": state.description, "group": state.group, "priority": state.priority,
        "pending": state.pending, "running": state.running,
        "scopes": [{"scope": s.scope, "key": s.key, "usage": quantity(s.usage), "reserved": quantity(s.reserved),
                    "limit": quantity(s.limit), "borrowed": quantity(s.borrowed), "pending": s.pending,
                    "running": s.running} for s in state.scopes],
    }
