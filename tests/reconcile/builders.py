"""Terse builders for engine tests: ``pool("h100", gpu=8)``, ``req(1, "dev", "job", gpu=2)``."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from reconcile import Config, Policy, Pool, Profile, Quota, Reason, Request, Snapshot, State, Vector
from reconcile.model import ALL_POOLS
from reconcile.quantity import parse_quantity

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pool(name: str, order: tuple[str, ...] = (), **capacity) -> Pool:
    return Pool(name, Vector.parse(capacity), execution_order=tuple(order))


def quota(spec: str) -> Quota:
    """``"dc:gpu 4/8"``, ``"*:gpu /16"`` (no reservation), ``"dc:gpu 4/"`` (no limit)."""
    scope_key, amounts = spec.split()
    scope, key = scope_key.split(":")
    reserved, limit = amounts.split("/")
    return Quota(scope or ALL_POOLS, key, parse_quantity(reserved) if reserved else None,
                 parse_quantity(limit) if limit else None)


def policy(name: str, *quotas: str, priority: int = 0, **time_rules) -> Policy:
    """``time_rules``: the policy's fields of the time rules, e.g. ``min_runtime_seconds=600``."""
    return Policy(name, priority=priority, quotas=tuple(quota(q) for q in quotas), **time_rules)


def profile(name: str, pools: tuple[str, ...] | str, policies: tuple[str, ...] | str, dynamic: bool = False,
            **resources) -> Profile:
    pools = (pools,) if isinstance(pools, str) else tuple(pools)
    policies = (policies,) if isinstance(policies, str) else tuple(policies)
    return Profile(name, Vector.parse(resources), dynamic=dynamic, pools=pools, policies=policies)


def config(*items) -> Config:
    return Config(
        pools=tuple(i for i in items if isinstance(i, Pool)),
        profiles=tuple(i for i in items if isinstance(i, Profile)),
        policies=tuple(i for i in items if isinstance(i, Policy)),
    )


def req(id: int, policy: str, profile: str, *, preemptible: bool = True, at_s: float | None = None,
        state: State = State.PENDING, pool: str | None = None, allocated_s: float | None = None,
        retries: int = 0, held: str | None = None, **resources) -> Request:
    """A request; resources default to none beyond step_run (pass gpu=…);
    ``held``: the pool where capacity is held for it as a preemptor (R-45)."""
    vector = Vector.parse({**resources, "step_run": 1})
    submitted = at(id if at_s is None else at_s)
    allocated = at(allocated_s if allocated_s is not None else id) if state.live else None
    return Request(id, policy, profile, vector, submitted, state=state, preemptible=preemptible, max_retries=retries,
                   pool=pool, allocated_at=allocated, held_pool=held,
                   lease_expires_at=allocated + timedelta(days=1) if allocated else None)


def preempting(request: Request, by: int, since_s: float = 990,
               reason: Reason = Reason.PREEMPTED_BY_PRIORITY) -> Request:
    """``request`` already chosen as a victim of ``by`` at ``since_s``; the grace is 30 s, so it
    is not over at 1000 (``snapshot``'s now)."""
    return replace(request, state=State.PREEMPTING, preempted_by=by, preempted_at=at(since_s), reason=reason)


def snapshot(cfg: Config, *requests: Request, now: float = 1000, enabled: bool = True) -> Snapshot:
    return Snapshot(at(now), cfg, tuple(requests), management_enabled=enabled)
