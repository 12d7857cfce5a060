"""A configuration written back as its document (docs/api.md §1): what the API answers, what a
version stores and what ``config export`` prints. ``reconcile.document`` reads one; every default
is written out, a display name and labels only when there are some, so the two round-trip.

>>> from reconcile.model import Config, Pool
>>> from reconcile.quantity import Vector
>>> to_document(Config(pools=(Pool("h100", Vector.of(gpu=8), display_name="H100 box"),)))["pools"]
[{'name': 'h100', 'display_name': 'H100 box', 'description': '', 'capacity': {'gpu': 8}, 'execution_order': []}]
"""

from __future__ import annotations

from typing import Any

from .budgets import budget_document
from .model import Config, Policy, Pool, Profile, Quota
from .quantity import format_quantity


def to_document(config: Config, version: int | None = None) -> dict[str, Any]:
    """The JSON-ready document, every default explicit but an empty ``group`` (written by leaving it
    out); quantities are ``int`` or ``Decimal``.

    ``execution_order`` is written in full: the listed profiles, then the other connected ones.
    """
    orders = full_orders(config)
    doc: dict[str, Any] = {} if version is None else {"version": version}
    doc["pools"] = [{"name": p.name, **_display(p), "description": p.description, "capacity": p.capacity.to_json(),
                     "execution_order": orders.get(p.name, []), **_labels(p)} for p in config.pools]
    doc["profiles"] = [_profile_document(p) for p in config.profiles]
    doc["policies"] = [_policy_document(p) for p in config.policies]
    return doc


def _display(entry: Pool | Profile | Policy) -> dict[str, str]:
    """A display name is written only when there is one: a document without stays as it was."""
    return {"display_name": entry.display_name} if entry.display_name else {}


def _labels(pool: Pool) -> dict[str, dict[str, str]]:
    """Labels are written only when there are some, as display names are."""
    return {"labels": dict(pool.labels)} if pool.labels else {}


def _policy_document(policy: Policy) -> dict[str, Any]:
    # An absent group is "" and a given one must not be empty, so "" is written by leaving it out.
    group = {"group": policy.group} if policy.group else {}
    return {"name": policy.name, **_display(policy), "description": policy.description, **group, "priority": policy.priority,
            **time_rules(policy), "quotas": [_quota_document(row) for row in policy.quotas], **_budget(policy)}


def _budget(policy: Policy) -> dict[str, Any]:
    """A budget is written only when there is one, as display names are."""
    return {} if policy.budget is None else {"budget": budget_document(policy.budget)}


def time_rules(policy: Policy) -> dict[str, Any]:
    """The time rules' fields a policy states, those left at their defaults out (R-48, R-52): a
    document without them stays as it was."""
    return {name: getattr(policy, name) for name, default in POLICY_TIME_FIELDS if getattr(policy, name) != default}


POLICY_TIME_FIELDS = (("min_runtime_seconds", None), ("max_runtime_seconds", None), ("require_max_runtime", False),
                      ("on_time_limit", "end"), ("max_wait_seconds", None))


def _profile_document(profile: Profile) -> dict[str, Any]:
    names = profile.connection_names
    connections = [{"pool": pool, "name": names[j] if j < len(names) and names[j] else pool}
                   for j, pool in enumerate(profile.pools)]
    return {"name": profile.name, **_display(profile), "description": profile.description,
            "resources": profile.resources.to_json(),
            "dynamic": profile.dynamic, "connections": connections, "policies": list(profile.policies)}


def _quota_document(row: Quota) -> dict[str, Any]:
    amounts = (("reserved", row.reserved), ("limit", row.limit))
    return {"scope": row.scope, "key": row.key, **{f: format_quantity(a) for f, a in amounts if a is not None}}


def full_orders(config: Config) -> dict[str, list[str]]:
    """Each pool's execution order in full: the listed profiles, then the other connected ones."""
    orders: dict[str, list[str]] = {}
    for (pool, profile), _ in sorted(config.execution_index.items(), key=lambda item: item[1]):
        orders.setdefault(pool, []).append(profile)
    return orders
