"""What changed between two configurations, entry by entry and field by field.

Pools, profiles and policies are matched by name. An entry only in ``after`` is *added*, one
only in ``before`` *removed*, one in both with a differing field *changed*; each change lists
its fields with the value before and after (``None``: absent). The fields of an entry:

- pool: ``display_name``, ``description``, ``capacity.<key>``, ``execution_order`` (in full, as the engine
  serves it: listed profiles first, then the other connected ones by name), ``labels.<key>``;
- profile: ``display_name``, ``description``, ``resources.<key>``, ``dynamic``, ``connections`` (the pool
  precedence), ``connections[<pool>].name``, ``policies`` (the policy rank);
- policy: ``display_name``, ``description``, ``group``, ``priority``, the time rules it states
  (``min_runtime_seconds``, ``max_runtime_seconds``, ``require_max_runtime``,
  ``on_time_limit``, ``max_wait_seconds``), ``quotas[<scope>/<key>].reserved`` and ``.limit``, ``budget.key``, ``.hours``,
  ``.period`` and ``.when_spent`` (all absent without a budget).

Quantities are shown as the API writes them (``format_quantity``), orders as tuples of names.
The configurations are those ``parse_document`` returns, whose execution orders are complete.

>>> from reconcile.document import parse_document
>>> before = parse_document({
...     "pools": [{"name": "h100", "capacity": {"gpu": 8}}],
...     "profiles": [{"name": "4xgpu", "resources": {"gpu": 4}, "connections": [{"pool": "h100"}],
...                   "policies": ["dev"]}],
...     "policies": [{"name": "dev", "group": "dev", "quotas": [{"key": "gpu", "limit": 8}]}],
... }).config
>>> after = parse_document({
...     "pools": [{"name": "h100", "capacity": {"gpu": 16}}, {"name": "a100", "capacity": {"gpu": 4}}],
...     "profiles": [{"name": "4xgpu", "resources": {"gpu": 4},
...                   "connections": [{"pool": "a100"}, {"pool": "h100", "name": "4 × H100"}],
...                   "policies": ["dev"]}],
...     "policies": [{"name": "dev", "group": "dev", "quotas": [{"key": "gpu", "limit": 8}]}],
... }).config
>>> for change in diff(before, after):
...     print(change)
pool h100 changed: capacity.gpu 8 → 16
pool a100 added
profile 4xgpu changed: connections [h100] → [a100, h100]; connections[h100].name 'h100' → '4 × H100'; connections[a100].name — → 'a100'
>>> summarize(diff(before, after))
'added pool a100; changed pool h100 and profile 4xgpu'
>>> summarize(diff(after, after))
'no changes'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, Union

from .budgets import budget_document
from .document_writer import time_rules
from .model import Config, Policy, Pool, Profile
from .quantity import format_quantity

Value = Union[str, int, bool, Decimal, tuple[str, ...], None]
KINDS = ("pool", "profile", "policy")
ACTIONS = ("added", "changed", "removed")
_PLURAL = {"pool": "pools", "profile": "profiles", "policy": "policies"}
_LISTED = 3  # names a summary lists per group before it counts them instead


class FieldChange(NamedTuple):
    field: str
    before: Value
    after: Value


@dataclass(frozen=True)
class Change:
    kind: str  # one of KINDS
    name: str
    action: str  # one of ACTIONS
    fields: tuple[FieldChange, ...] = ()

    def __str__(self) -> str:
        if self.action != "changed":
            return f"{self.kind} {self.name} {self.action}"
        shown = "; ".join(f"{f.field} {show_value(f.before)} → {show_value(f.after)}" for f in self.fields)
        return f"{self.kind} {self.name} changed: {shown}"


def diff(before: Config, after: Config) -> tuple[Change, ...]:
    """Every change from ``before`` to ``after``: pools, then profiles, then policies; within a
    kind, in ``after``'s order, then the removed ones in ``before``'s order."""
    return (*_changes("pool", before.pools, after.pools, pool_fields),
            *_changes("profile", before.profiles, after.profiles, profile_fields),
            *_changes("policy", before.policies, after.policies, policy_fields))


def summarize(changes: Sequence[Change]) -> str:
    """One line: what was added, changed and removed, naming up to three entries per group."""
    parts = []
    for action in ACTIONS:
        groups = [_group(kind, [c.name for c in changes if c.kind == kind and c.action == action])
                  for kind in KINDS]
        groups = [text for text in groups if text]
        if groups:
            parts.append(f"{action} {_and(groups)}")
    return "; ".join(parts) or "no changes"


def show_value(value: Value) -> str:
    """A field's value for people: names bare in lists, text quoted, absent as a dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return f"[{', '.join(value)}]"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _display(entry: Pool | Profile | Policy) -> dict[str, Value]:
    """Only a display name that is there: an entry without one has no such field to differ in."""
    return {"display_name": entry.display_name} if entry.display_name else {}


def pool_fields(pool: Pool) -> dict[str, Value]:
    return {**_display(pool), "description": pool.description, **_amounts("capacity", pool.capacity),
            "execution_order": tuple(pool.execution_order), **{f"labels.{key}": value for key, value in pool.labels}}


def profile_fields(profile: Profile) -> dict[str, Value]:
    names = profile.connection_names
    connection_names = {f"connections[{pool}].name": (names[j] if j < len(names) and names[j] else pool)
                        for j, pool in enumerate(profile.pools)}
    return {**_display(profile), "description": profile.description, **_amounts("resources", profile.resources),
            "dynamic": profile.dynamic, "connections": tuple(profile.pools), **connection_names,
            "policies": tuple(profile.policies)}


def policy_fields(policy: Policy) -> dict[str, Value]:
    fields: dict[str, Value] = {**_display(policy), "description": policy.description, "group": policy.group,
                                "priority": policy.priority, **time_rules(policy)}
    for row in policy.quotas:
        for name, amount in (("reserved", row.reserved), ("limit", row.limit)):
            fields[f"quotas[{row.scope}/{row.key}].{name}"] = None if amount is None else format_quantity(amount)
    if policy.budget is not None:
        fields.update({f"budget.{name}": value for name, value in budget_document(policy.budget).items()})
    return fields


def _changes(kind: str, before: Iterable, after: Iterable, fields: Callable[..., dict[str, Value]]) -> list[Change]:
    old = {entry.name: entry for entry in before}
    new = {entry.name: entry for entry in after}
    changes = []
    for name, entry in new.items():
        if name not in old:
            changes.append(Change(kind, name, "added", _compare({}, fields(entry))))
        elif found := _compare(fields(old[name]), fields(entry)):
            changes.append(Change(kind, name, "changed", found))
    changes += [Change(kind, name, "removed", _compare(fields(entry), {}))
                for name, entry in old.items() if name not in new]
    return changes


def _compare(before: Mapping[str, Value], after: Mapping[str, Value]) -> tuple[FieldChange, ...]:
    """The fields whose values differ, ``before``'s first, then those only ``after`` has."""
    names = [*before, *(name for name in after if name not in before)]
    return tuple(FieldChange(name, before.get(name), after.get(name)) for name in names
                 if before.get(name) != after.get(name))


def _amounts(field: str, vector: Mapping[str, int]) -> dict[str, Value]:
    return {f"{field}.{key}": format_quantity(amount) for key, amount in sorted(vector.items())}


def _group(kind: str, names: list[str]) -> str:
    if not names:
        return ""
    if len(names) > _LISTED:
        return f"{len(names)} {_PLURAL[kind]}"
    return f"{kind if len(names) == 1 else _PLURAL[kind]} {', '.join(names)}"


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
