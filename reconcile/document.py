"""The configuration document (docs/api.md §1): JSON in, a validated ``Config`` out, and back.

``parse_document`` never raises: whatever JSON value it gets, it returns every error it finds,
each with its path, and a ``Config`` only when there are none. ``to_document``
(``reconcile.document_writer``) writes a configuration back with every default spelled out, so
the two round-trip.

>>> doc = {
...     "pools": [{"name": "h100", "capacity": {"gpu": 8}}],
...     "profiles": [{"name": "4xgpu", "resources": {"gpu": 4}, "connections": [{"pool": "h100"}],
...                   "policies": ["dev"]}],
...     "policies": [{"name": "dev", "group": "dev", "quotas": [{"key": "gpu", "reserved": 4, "limit": 16}]}],
... }
>>> parsed = parse_document(doc)
>>> parsed.errors, parsed.config.pools[0].execution_order
((), ('4xgpu',))
>>> from reconcile.document_writer import to_document
>>> to_document(parsed.config)["profiles"][0]["connections"]
[{'pool': 'h100', 'name': 'h100'}]
>>> def report(parsed):
...     for issue in parsed.errors:
...         print(f"{issue.path}: {issue.code}")
...         print(f"    {issue.message}")
>>> doc["pools"][0]["capacity"] = {"gpu": 2}
>>> report(parse_document(doc))
profiles[0].resources: fits_no_pool
    profile 4xgpu (gpu=4, step_run=1) fits no connected pool: 4 gpu exceeds the capacity of pool h100 (2)

Every error is collected; ``fits_no_pool`` is not reported while the pool's capacity is unreadable:

>>> doc["pools"][0] = {"name": "H100", "capacity": {"gpu": "-1"}}
>>> report(parse_document(doc))
pools[0].name: invalid_name
    'H100' is not a valid pool name: a name has 1 to 63 lower-case letters, digits, '.', '_' or '-', the first a letter or digit
pools[0].capacity.gpu: invalid_quantity
    gpu must not be negative
profiles[0].connections[0].pool: unknown_pool
    there is no pool named 'h100'

Errors come in three stages, each in document order: what each entry says on its own
(types, names, quantities, lengths, unknown fields, ``reserved ≤ limit``) and the totals of the
lists, then references between entries, then semantics (reservations against capacity, R-11 and R-12 on each profile's
allotment). A stage skips whatever an earlier error left unreadable (see ``document_checks``),
so every error is reported once and none is a consequence of another. Warnings are computed
only for a document without errors.

Choices where api.md is silent: names, a profile's ``connections``, a connection's ``pool``
and a quota row's ``key`` are required; an absent capacity, allotment, policy list or quota
list is empty, and an absent ``group`` is "" (only admins may then submit; the service warns);
``version`` is accepted with any value and ignored; a given ``group`` is a non-empty
string of at most 150 characters (a Django group name); ``priority`` is an integer in
±1,000,000; ``min_runtime_seconds`` (R-48), ``max_wait_seconds`` (R-49) and ``max_runtime_seconds`` (R-52) are absent, null or a
whole number of seconds from 1 to 366 days; ``require_max_runtime`` is a boolean (false);
``on_time_limit`` is "end" (the default) or "requeue"; a resource vector has at most 100 keys; past 1000 errors the rest are only counted
(``too_many_errors``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .budgets import read_budget
from .document_checks import Issue, Reading, brief, check_references, check_semantics, check_totals
from .document_checks import check_warnings, json_type, show
from .document_fields import child, read_labels
from .document_time import read_time_rules
from .document_writer import full_orders
from .model import ALL_POOLS, Config, Policy, Pool, Profile, Quota, scope_text
from .quantity import KEY_PATTERN, QuantityError, Vector, parse_quantity, quantity_text

__all__ = ["Issue", "Parsed", "child", "parse_document", "read_document"]

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")  # matched whole (fullmatch)
MAX_POOLS, MAX_PROFILES, MAX_POLICIES = 200, 500, 500  # decision 93; the totals are document_checks'
MAX_CONNECTIONS, MAX_QUOTAS, MAX_KEYS = 50, 64, 100  # per profile, per policy, per vector (and request)
MAX_DESCRIPTION, MAX_CONNECTION_NAME, MAX_GROUP, MAX_PRIORITY = 1000, 100, 150, 1_000_000
MAX_DISPLAY_NAME = 100
# What a name may contain, in words (NAME_PATTERN's): the API's message and the editor's hint.
NAME_RULE = "1 to 63 lower-case letters, digits, '.', '_' or '-', the first a letter or digit"

_MISSING: Any = object()  # a field the document leaves out


@dataclass(frozen=True)
class Fields:
    required: tuple[str, ...]
    optional: tuple[str, ...]


DOCUMENT_FIELDS = Fields(("pools", "profiles", "policies"), ("version",))
POOL_FIELDS = Fields(("name",), ("display_name", "capacity", "description", "execution_order", "labels"))
PROFILE_FIELDS = Fields(("name", "connections"), ("display_name", "resources", "policies", "description", "dynamic"))
CONNECTION_FIELDS = Fields(("pool",), ("name",))
POLICY_FIELDS = Fields(("name",), ("display_name", "group", "quotas", "description", "priority", "budget",
                                       "min_runtime_seconds", "max_runtime_seconds", "require_max_runtime",
                                       "on_time_limit", "max_wait_seconds"))
QUOTA_FIELDS = Fields(("key",), ("scope", "reserved", "limit"))


@dataclass(frozen=True)
class Parsed:
    config: Config | None  # None when there are errors
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]  # only computed when there are no errors


def parse_document(doc: object) -> Parsed:
    """Read and validate a configuration document; never raises."""
    reading = Reading()
    skeleton = _read_document(reading, doc)
    check_totals(skeleton, reading)
    names = check_references(skeleton, reading)
    check_semantics(skeleton, reading, names)
    if reading.dropped:
        reading.errors.append(Issue("", "too_many_errors", f"{reading.dropped} more errors are not listed"))
    if reading.errors:
        return Parsed(None, tuple(reading.errors), ())
    config = _resolve_execution_orders(skeleton)
    return Parsed(config, (), tuple(check_warnings(config)))


def read_document(doc: object) -> Config | None:
    """A document validated before (a provisioned version's) as its ``Config``, without repeating the
    checks across entries (half ``parse_document``'s time); None when its entries do not read."""
    reading = Reading()
    skeleton = _read_document(reading, doc)
    return None if reading.errors else _resolve_execution_orders(skeleton)


def _resolve_execution_orders(config: Config) -> Config:
    orders = full_orders(config)
    pools = tuple(replace(p, execution_order=tuple(orders.get(p.name, ()))) for p in config.pools)
    return replace(config, pools=pools)


# Reading: each entry on its own, into a skeleton Config with placeholders where it is unreadable.


def _read_document(reading: Reading, doc: object) -> Config:
    obj = _object(reading, doc, "", DOCUMENT_FIELDS, "the document")
    if obj is None:
        return Config()
    return Config(
        pools=tuple(_read_pool(reading, item, f"pools[{i}]")
                    for i, item in enumerate(_list(reading, obj, "pools", "pools", MAX_POOLS))),
        profiles=tuple(_read_profile(reading, item, f"profiles[{i}]")
                       for i, item in enumerate(_list(reading, obj, "profiles", "profiles", MAX_PROFILES))),
        policies=tuple(_read_policy(reading, item, f"policies[{i}]")
                       for i, item in enumerate(_list(reading, obj, "policies", "policies", MAX_POLICIES))),
    )


def _read_pool(reading: Reading, raw: object, path: str) -> Pool:
    obj = _object(reading, raw, path, POOL_FIELDS, "a pool")
    if obj is None:
        return Pool("", Vector())
    name = _name(reading, obj, path, "pool")
    return Pool(
        name=name,
        display_name=_display_name(reading, obj, path, name),
        capacity=_vector(reading, obj, path, "capacity"),
        execution_order=_references(reading, obj, path, "execution_order", "profile", MAX_PROFILES),
        description=_text(reading, obj, path, "description", MAX_DESCRIPTION),
        labels=read_labels(reading, obj, path),
    )


def _read_profile(reading: Reading, raw: object, path: str) -> Profile:
    obj = _object(reading, raw, path, PROFILE_FIELDS, "a profile")
    if obj is None:
        return Profile("", Vector())
    name = _name(reading, obj, path, "profile")
    connections = [_read_connection(reading, item, f"{path}.connections[{j}]")
                   for j, item in enumerate(_list(reading, obj, "connections", f"{path}.connections", MAX_CONNECTIONS))]
    if not connections and reading.ok(f"{path}.connections"):
        reading.error(f"{path}.connections", "no_connection",
                      f"profile {brief(name)} has no connection: connect it to at least one pool")
    dynamic = obj.get("dynamic", False)
    if not isinstance(dynamic, bool):
        reading.error(f"{path}.dynamic", "invalid_type", f"dynamic is true or false, not {json_type(dynamic)}")
        dynamic = False
    return Profile(
        name=name,
        display_name=_display_name(reading, obj, path, name),
        resources=_vector(reading, obj, path, "resources"),
        dynamic=dynamic,
        pools=tuple(pool for pool, _ in connections),
        policies=_references(reading, obj, path, "policies", "policy", MAX_POLICIES),
        connection_names=tuple(display for _, display in connections),
        description=_text(reading, obj, path, "description", MAX_DESCRIPTION),
    )


def _read_connection(reading: Reading, raw: object, path: str) -> tuple[str, str]:
    """(pool, display name); the display name defaults to the pool's name."""
    obj = _object(reading, raw, path, CONNECTION_FIELDS, "a connection")
    if obj is None:
        return "", ""
    pool = _reference(reading, obj.get("pool", _MISSING), f"{path}.pool", "pool")
    display = _text(reading, obj, path, "name", MAX_CONNECTION_NAME, default=pool, required=True)
    return pool, display


def _read_policy(reading: Reading, raw: object, path: str) -> Policy:
    obj = _object(reading, raw, path, POLICY_FIELDS, "a policy")
    if obj is None:
        return Policy("")
    name = _name(reading, obj, path, "policy")
    quotas = tuple(_read_quota(reading, item, f"{path}.quotas[{j}]")
                   for j, item in enumerate(_list(reading, obj, "quotas", f"{path}.quotas", MAX_QUOTAS)))
    return Policy(
        name=name,
        display_name=_display_name(reading, obj, path, name),
        priority=_priority(reading, obj.get("priority", 0), f"{path}.priority"),
        quotas=quotas,
        group=_text(reading, obj, path, "group", MAX_GROUP, required=True),
        description=_text(reading, obj, path, "description", MAX_DESCRIPTION),
        budget=None if obj.get("budget") is None else read_budget(reading, obj["budget"], f"{path}.budget"),
        **read_time_rules(reading, obj, path),
    )


def _read_quota(reading: Reading, raw: object, path: str) -> Quota:
    obj = _object(reading, raw, path, QUOTA_FIELDS, "a quota row")
    if obj is None:
        return Quota("", "")
    scope = _reference(reading, obj.get("scope", ALL_POOLS), f"{path}.scope", "scope")
    key = obj.get("key", _MISSING)
    if key is not _MISSING and not _is_key(key):
        reading.error(f"{path}.key", "invalid_key",
                      f"{show(key)} is not a resource key: keys match {KEY_PATTERN.pattern}")
    key = key if _is_key(key) else ""
    reserved, limit = (_quantity(reading, obj[f], f"{path}.{f}") if f in obj else None for f in ("reserved", "limit"))
    if "reserved" not in obj and "limit" not in obj:
        reading.error(path, "required", "a quota row states reserved, limit or both")
    if reserved is not None and limit is not None and reserved > limit:
        reading.error(f"{path}.reserved", "reserved_above_limit",
                      f"reserved {quantity_text(reserved)} {key} is above the limit of {quantity_text(limit)} "
                      f"{scope_text(brief(scope))}")
    return Quota(scope, key, reserved, limit)


# Field readers: each reports its own errors and returns a placeholder when the value is unusable.


def _object(reading: Reading, raw: object, path: str, fields: Fields, what: str) -> Mapping[Any, Any] | None:
    if not isinstance(raw, Mapping):
        reading.error(path, "invalid_type", f"{what} must be an object, not {json_type(raw)}")
        return None
    for field in fields.required:
        if field not in raw:
            reading.error(child(path, field), "required", f"{field} is required")
    known = fields.required + fields.optional
    for field in raw:
        if field not in known:
            reading.error(child(path, field), "unknown_field",
                          f"unknown field {show(field)}; {what} has {', '.join(known)}", blocking=False)
    return raw


def _list(reading: Reading, obj: Mapping[Any, Any], field: str, path: str, limit: int) -> list[Any]:
    raw = obj.get(field, _MISSING)
    if raw is _MISSING:
        return []  # reported as required
    if not isinstance(raw, (list, tuple)):
        reading.error(path, "invalid_type", f"{field} must be an array, not {json_type(raw)}")
        return []
    if len(raw) > limit:
        reading.error(path, "too_many", f"{field} has {len(raw)} entries, at most {limit} are allowed")
        return []
    return list(raw)


def _name(reading: Reading, obj: Mapping[Any, Any], path: str, kind: str) -> str:
    """The name as written when it is a string (references resolve even to a bad name), else ""."""
    raw = obj.get("name", _MISSING)
    if raw is _MISSING:
        return ""
    if not isinstance(raw, str):
        reading.error(f"{path}.name", "invalid_type", f"a {kind} name is a string, not {json_type(raw)}")
        return ""
    if not NAME_PATTERN.fullmatch(raw):
        reading.error(f"{path}.name", "invalid_name",
                      f"{show(raw)} is not a valid {kind} name: a name has {NAME_RULE}")
    return raw


def _display_name(reading: Reading, obj: Mapping[Any, Any], path: str, name: str) -> str:
    """What people read, any text; "" when it is absent or the name itself."""
    shown = _text(reading, obj, path, "display_name", MAX_DISPLAY_NAME)
    return "" if shown == name else shown


def _reference(reading: Reading, raw: object, path: str, kind: str) -> str:
    """A name that refers to another entry (checked later), or "" when it is not a string."""
    if raw is _MISSING:
        return ""
    if not isinstance(raw, str):
        reading.error(path, "invalid_type", f"a {kind} is named by a string, not {json_type(raw)}")
        return ""
    if not raw:
        reading.error(path, "required", f"the {kind} must not be empty")
    return raw


def _references(reading: Reading, obj: Mapping[Any, Any], path: str, field: str, kind: str,
                limit: int) -> tuple[str, ...]:
    items = _list(reading, obj, field, f"{path}.{field}", limit)
    return tuple(_reference(reading, item, f"{path}.{field}[{j}]", kind) for j, item in enumerate(items))


def _text(reading: Reading, obj: Mapping[Any, Any], path: str, field: str, limit: int,
          default: str = "", required: bool = False) -> str:
    raw = obj.get(field, _MISSING)
    if raw is _MISSING:
        return default
    at = f"{path}.{field}"
    if not isinstance(raw, str):
        reading.error(at, "invalid_type", f"{field} is a string, not {json_type(raw)}")
    elif len(raw) > limit:
        reading.error(at, "too_long", f"{field} has {len(raw)} characters, at most {limit} are allowed")
    elif required and not raw.strip():
        reading.error(at, "required", f"{field} must not be empty")
    else:
        return raw
    return default


def _priority(reading: Reading, raw: object, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        reading.error(path, "invalid_type", f"priority is an integer, not {json_type(raw)}")
        return 0
    if not -MAX_PRIORITY <= raw <= MAX_PRIORITY:
        reading.error(path, "out_of_range", f"priority must be between -{MAX_PRIORITY:,} and {MAX_PRIORITY:,}")
        return 0
    return raw


def _vector(reading: Reading, obj: Mapping[Any, Any], path: str, field: str) -> Vector:
    raw, at = obj.get(field, _MISSING), f"{path}.{field}"
    if raw is _MISSING:
        return Vector()
    if not isinstance(raw, Mapping):
        reading.error(at, "invalid_type", f"{field} is an object of resource key → quantity, not {json_type(raw)}")
        return Vector()
    if len(raw) > MAX_KEYS:
        reading.error(at, "too_many", f"{field} has {len(raw)} keys, at most {MAX_KEYS} are allowed")
        return Vector()
    milli: dict[str, int] = {}
    for key, value in raw.items():
        if not _is_key(key):
            reading.error(child(at, key), "invalid_key",
                          f"{show(key)} is not a resource key: keys match {KEY_PATTERN.pattern}")
            continue
        amount = _quantity(reading, value, f"{at}.{key}")
        if amount is not None:
            milli[key] = amount
    return Vector(milli)


def _quantity(reading: Reading, raw: object, path: str) -> int | None:
    try:
        return parse_quantity(raw)
    except (QuantityError, ValueError, ArithmeticError) as error:  # QuantityError is the contract; the rest guards it
        label = path.rsplit(".", 1)[-1]
        reading.error(path, "invalid_quantity", f"{label} {error}")
        return None


def _is_key(key: object) -> bool:
    # fullmatch: KEY_PATTERN ends in "$", which a plain match lets pass before a trailing newline.
    return isinstance(key, str) and KEY_PATTERN.fullmatch(key) is not None
