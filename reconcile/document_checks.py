"""Checks of the configuration document that look across entries (docs/api.md §1).

``reconcile.document`` reads each entry on its own into a *skeleton* ``Config``: every list keeps
its document length, and a value that could not be read is a harmless placeholder (name ``""``,
an empty vector, a quota amount ``None``). ``Reading`` remembers where errors were, so a check
skips what it cannot judge instead of reporting a second, spurious error. This module then
checks, in order and each in document order:

0. totals: connections, queues and quota rows in all (decision 93);
1. references: duplicate names, unknown pools, profiles and policies, a reference listed twice,
   an execution order naming a profile not connected to the pool, a repeated quota row;
2. semantics (skipping entries with errors): pool-scoped reservations above the pool's capacity,
   a profile that fits no connected pool (R-11), a queue over its policy's limit everywhere (R-12);
3. warnings, only for a configuration without errors.

>>> reading = Reading()
>>> reading.error("pools[0].capacity.gpu", "invalid_quantity", "gpu must not be negative")
>>> reading.ok("pools[0].capacity"), reading.intact("pools[0]"), reading.ok("pools[0].name")
(False, True, True)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .model import ALL_POOLS, Config, Policy, Pool, Profile, Quota, scope_text
from .quantity import STEP_RUN, Vector, quantity_text, unmetered_keys
from .quota import Ineligible, PoolTerms, ineligibility, pool_terms

_NO_LIMITS = Policy("")  # a policy without quota rows: its terms check pool capacity only
# In all the profiles or policies: what bounds the work of every page that shows the whole
# configuration (a line per item); each entry's own limits are reconcile.document's.
MAX_ALL_CONNECTIONS, MAX_ALL_QUEUES, MAX_ALL_QUOTAS = 2_000, 5_000, 5_000


@dataclass(frozen=True)
class Issue:
    """One finding: where (``policies[1].quotas[0].reserved``, ``""`` = the whole document),
    a stable snake_case code, and a sentence with the numbers."""

    path: str
    code: str
    message: str


class Reading:
    """The errors found so far, and which parts of the document they leave unreadable.

    At most ``MAX_ERRORS`` are kept (``dropped`` counts the rest); once full, the semantic
    checks stop, which also bounds the work a hostile document can cause.
    """

    MAX_ERRORS = 1000

    def __init__(self) -> None:
        self.errors: list[Issue] = []
        self.dropped = 0
        self._at: set[str] = set()  # paths with an error
        self._under: set[str] = set()  # those paths and every ancestor of them

    @property
    def full(self) -> bool:
        return len(self.errors) >= self.MAX_ERRORS

    def error(self, path: str, code: str, message: str, blocking: bool = True) -> None:
        """Record an error; a blocking one makes ``path`` unreadable for the checks that follow."""
        if self.full:
            self.dropped += 1
        else:
            self.errors.append(Issue(path, code, message))
        if not blocking:  # e.g. an unknown field: what was read around it is still sound
            return
        self._at.add(path)
        self._under.add(path)
        self._under.update(_ancestors(path))

    def intact(self, path: str) -> bool:
        """No error at ``path`` or above it (errors inside it are allowed)."""
        if not self._at:
            return True
        return path not in self._at and not any(a in self._at for a in _ancestors(path))

    def ok(self, path: str) -> bool:
        """No error at ``path``, above it or inside it."""
        return path not in self._under and self.intact(path)


def _ancestors(path: str) -> Iterator[str]:
    """``"a[1].b"`` → ``""``, ``"a"``, ``"a[1]"``."""
    yield ""
    for place, char in enumerate(path):
        if char in ".[" and place:
            yield path[:place]


def first_index(names: Sequence[str]) -> dict[str, int]:
    """Name → index of its first entry; placeholder names (``""``) are left out."""
    index: dict[str, int] = {}
    for place, name in enumerate(names):
        if name:
            index.setdefault(name, place)
    return index


@dataclass(frozen=True)
class Names:
    """Where each name is first defined, or None for a kind whose list could not be read."""

    pool: dict[str, int] | None
    profile: dict[str, int] | None
    policy: dict[str, int] | None

    @classmethod
    def of(cls, config: Config, reading: Reading) -> Names:
        def kind(field: str, entries: Sequence[Pool | Profile | Policy]) -> dict[str, int] | None:
            return first_index([e.name for e in entries]) if reading.intact(field) else None

        return cls(kind("pools", config.pools), kind("profiles", config.profiles), kind("policies", config.policies))


def check_totals(config: Config, reading: Reading) -> None:
    """An error at the list (which leaves it unreadable to the checks after) past a total."""
    for field, count, limit, what in (
            ("profiles", sum(len(p.pools) for p in config.profiles), MAX_ALL_CONNECTIONS, "connections"),
            ("profiles", sum(len(p.policies) for p in config.profiles), MAX_ALL_QUEUES, "policies listed (queues)"),
            ("policies", sum(len(p.quotas) for p in config.policies), MAX_ALL_QUOTAS, "quota rows")):
        if count > limit:
            reading.error(field, "too_many", f"the {field} have {count:,} {what} in all, at most {limit:,} are allowed")


def check_references(config: Config, reading: Reading) -> Names:
    names = Names.of(config, reading)
    for field, kind, entries in (("pools", "pool", config.pools), ("profiles", "profile", config.profiles),
                                 ("policies", "policy", config.policies)):
        _check_unique_names(reading, field, kind, entries)
    _check_execution_orders(config, reading, names)
    for i, profile in enumerate(config.profiles):
        _check_refs(reading, f"profiles[{i}].connections[{{}}].pool", profile.pools, names.pool, "pool")
        _check_refs(reading, f"profiles[{i}].policies[{{}}]", profile.policies, names.policy, "policy")
    for i, policy in enumerate(config.policies):
        _check_quota_rows(reading, f"policies[{i}]", policy, names.pool)
    return names


def _check_unique_names(reading: Reading, field: str, kind: str, entries: Sequence[Pool | Profile | Policy]) -> None:
    seen = first_index([e.name for e in entries])
    for i, entry in enumerate(entries):
        if entry.name and seen[entry.name] != i:
            reading.error(f"{field}[{i}].name", "duplicate_name",
                          f"{kind} {show(entry.name)} is already defined at {field}[{seen[entry.name]}]")


def _check_refs(reading: Reading, path: str, refs: Sequence[str], known: dict[str, int] | None, kind: str) -> None:
    """Each of ``refs`` names a known ``kind`` at most once; ``path`` has ``{}`` for the index."""
    if known is None:
        return
    seen: dict[str, int] = {}
    for j, name in enumerate(refs):
        if not name:
            continue  # unreadable: already reported
        if name not in known:
            reading.error(path.format(j), f"unknown_{kind}", f"there is no {kind} named {show(name)}")
        elif name in seen:
            reading.error(path.format(j), "duplicate_reference",
                          f"{kind} {brief(name)} is already listed at {path.format(seen[name])}")
        seen.setdefault(name, j)


def _check_execution_orders(config: Config, reading: Reading, names: Names) -> None:
    # A profile whose connection list could not be read is not judged here: an unreadable list
    # must not make a correct execution order look wrong.
    connected: defaultdict[str, set[str]] = defaultdict(set)
    unknown: set[str] = set()
    for k, profile in enumerate(config.profiles):
        if not reading.intact(f"profiles[{k}].connections"):
            unknown.add(profile.name)
        for pool in profile.pools:
            connected[pool].add(profile.name)
    for i, pool in enumerate(config.pools):
        path = f"pools[{i}].execution_order[{{}}]"
        _check_refs(reading, path, pool.execution_order, names.profile, "profile")
        for j, profile in enumerate(pool.execution_order):
            if (profile and profile not in connected[pool.name] and profile not in unknown
                    and reading.ok(path.format(j)) and names.profile is not None):
                reading.error(path.format(j), "not_connected",
                              f"profile {show(profile)} is not connected to pool {show(pool.name)}, so it has no "
                              "place in its execution order")


def _check_quota_rows(reading: Reading, path: str, policy: Policy, pools: dict[str, int] | None) -> None:
    seen: dict[tuple[str, str], int] = {}
    for r, row in enumerate(policy.quotas):
        at = f"{path}.quotas[{r}]"
        if row.scope and row.scope != ALL_POOLS and pools is not None and row.scope not in pools:
            reading.error(f"{at}.scope", "unknown_pool", f'a quota scope is "*" or a pool; there is no pool named '
                                                         f"{show(row.scope)}")
        if not (row.scope and row.key):
            continue
        if (row.scope, row.key) in seen:
            first = f"{path}.quotas[{seen[row.scope, row.key]}]"
            reading.error(at, "duplicate_quota", f"policy {brief(policy.name)} already has a {row.key} row "
                                                 f"{scope_text(brief(row.scope))} at {first}")
        seen.setdefault((row.scope, row.key), r)


def check_semantics(config: Config, reading: Reading, names: Names) -> None:
    if names.pool is None:
        return
    _check_pool_reservations(config, reading, names.pool)
    terms = _Terms(config)
    for i in range(len(config.profiles)):
        if reading.full:
            return
        pools = _judgeable_pools(config, reading, names.pool, i)
        if pools and reading.ok(f"profiles[{i}].resources"):
            _check_profile_fits(config, reading, names, terms, i, pools)


def _check_pool_reservations(config: Config, reading: Reading, pools: dict[str, int]) -> None:
    """Pool-scoped reservations of all policies at most the pool's capacity, per key.

    The error is reported once per pool and key, at the ``reserved`` of the last row (in document
    order) that reserves that key on that pool. A key the pool leaves unmetered is not checked.
    """
    rows: defaultdict[tuple[str, str], list[tuple[str, str, int]]] = defaultdict(list)
    for i, policy in enumerate(config.policies):
        if not reading.intact(f"policies[{i}]"):
            continue
        for r, row in enumerate(policy.quotas):
            if row.reserved and row.key and row.scope in pools:
                at = f"policies[{i}].quotas[{r}].reserved"
                rows[row.scope, row.key].append((at, brief(policy.name), row.reserved))
    for (scope, key), found in rows.items():
        place = pools[scope]
        pool = config.pools[place]
        if not reading.ok(f"pools[{place}].capacity") or key in unmetered_keys(pool.capacity):
            continue
        total, capacity = sum(amount for _, _, amount in found), pool.capacity.get(key, 0)
        if total > capacity:
            parts = ", ".join(f"{name} {quantity_text(amount)}" for _, name, amount in found)
            reading.error(found[-1][0], "reservations_above_capacity",
                          f"reservations of {key} on pool {brief(scope)} sum to {quantity_text(total)} ({parts}), "
                          f"above its capacity of {quantity_text(capacity)}")


class _Terms:
    """PoolTerms per (policy index, pool index), built on first use; policy None = no quota rows.

    ``pool_terms`` scans all of a policy's rows per key; it is given only the rows that apply
    to the pool, so a large document stays linear in its rows.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._cache: dict[tuple[int | None, int], PoolTerms] = {}
        self._rows: dict[int, dict[str, list[Quota]]] = {}

    def __call__(self, policy: int | None, pool: int) -> PoolTerms:
        if (policy, pool) not in self._cache:
            self._cache[policy, pool] = pool_terms(self._applying(policy, self.config.pools[pool].name),
                                                   self.config.pools[pool])
        return self._cache[policy, pool]

    def _applying(self, policy: int | None, pool: str) -> Policy:
        if policy is None:
            return _NO_LIMITS
        if policy not in self._rows:
            by_scope: defaultdict[str, list[Quota]] = defaultdict(list)
            for row in self.config.policies[policy].quotas:
                by_scope[row.scope].append(row)
            self._rows[policy] = by_scope
        rows = self._rows[policy]
        return Policy(self.config.policies[policy].name, quotas=(*rows.get(ALL_POOLS, ()), *rows.get(pool, ())))


def _judgeable_pools(config: Config, reading: Reading, pools: dict[str, int], i: int) -> list[int]:
    """Indices of profile i's connected pools, or [] when an error makes the profile unjudgeable."""
    if not reading.ok(f"profiles[{i}].connections") or not reading.intact(f"profiles[{i}]"):
        return []
    places = [pools[name] for name in config.profiles[i].pools if name in pools]
    if len(places) == len(config.profiles[i].pools) and all(
            reading.intact(f"pools[{p}]") and reading.ok(f"pools[{p}].capacity") for p in places):
        return places
    return []


def _check_profile_fits(config: Config, reading: Reading, names: Names, terms: _Terms, i: int,
                        pools: list[int]) -> None:
    """R-11 then R-12 on the profile's allotment plus step_run: 1, as a preemptible request.

    A dynamic profile's allotment is only its default, but it is checked the same way: a default
    that can never run would reject every request that keeps it. A queue is judged only on the
    pools the profile fits (R-11), so its error names limits, not capacities.
    """
    profile = config.profiles[i]
    allotment = profile.resources + STEP_RUN
    too_small = {pool: ineligibility(terms(None, pool), allotment, preemptible=True) for pool in pools}
    fitting = [pool for pool, failure in too_small.items() if failure is None]
    if not fitting:
        reading.error(f"profiles[{i}].resources", "fits_no_pool", f"profile {brief(profile.name)} ({allotment}) "
                      f"fits no connected pool: {_join([f for f in too_small.values() if f])}")
        return
    for j, name in enumerate(profile.policies):
        place = None if names.policy is None else names.policy.get(name)
        if place is None or not reading.intact(f"policies[{place}]") or not reading.ok(f"profiles[{i}].policies[{j}]"):
            continue
        failures = _failures(terms, place, fitting, allotment)
        if failures:
            reading.error(f"profiles[{i}].policies[{j}]", "exceeds_limit",
                          f"queue {brief(name)}/{brief(profile.name)} can never run: {_join(failures)}")


def _failures(terms: _Terms, policy: int, pools: list[int], allotment: Vector) -> list[Ineligible]:
    """Why the queue is ineligible on each pool, or [] as soon as one pool takes it."""
    found = []
    for pool in pools:
        failure = ineligibility(terms(policy, pool), allotment, preemptible=True)
        if failure is None:
            return []
        found.append(failure)
    return found


def _join(failures: list[Ineligible], shown: int = 3) -> str:
    """The distinct reasons, at most ``shown`` of them: one per pool can be a hundred."""
    messages = list(dict.fromkeys(f.message for f in failures))
    more = f"; and {len(messages) - shown} more" if len(messages) > shown else ""
    return "; ".join(messages[:shown]) + more


def check_warnings(config: Config) -> list[Issue]:
    """Findings that do not block provisioning, for a configuration without errors."""
    used = {name for profile in config.profiles for name in profile.policies}
    warnings = [Issue(f"policies[{i}]", "unused_policy", f"no profile lists policy {policy.name}, so it has no queue")
                for i, policy in enumerate(config.policies) if policy.name not in used]
    return _reach_warnings(config) + warnings


def _reach_warnings(config: Config) -> list[Issue]:
    """``*``-scope reservations of a key summing above the capacity their policies can reach.

    A policy reaches the pools connected to the profiles that list it; the reach of a key is the
    sum of those pools' capacities, each pool counted once. A pool that leaves the key unmetered
    makes the reach unbounded. The warning points at the last such row in document order.
    """
    reach: defaultdict[str, set[str]] = defaultdict(set)
    for profile in config.profiles:
        for name in profile.policies:
            reach[name].update(profile.pools)
    rows: defaultdict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for i, policy in enumerate(config.policies):
        for r, row in enumerate(policy.quotas):
            if row.scope == ALL_POOLS and row.reserved:
                rows[row.key].append((f"policies[{i}].quotas[{r}].reserved", policy.name, row.reserved))
    warnings = []
    for key, found in rows.items():
        pools = [config.pool[p] for p in set().union(*(reach[name] for _, name, _ in found))]
        if any(key in unmetered_keys(p.capacity) for p in pools):
            continue
        total, capacity = sum(amount for _, _, amount in found), sum(p.capacity.get(key, 0) for p in pools)
        if total > capacity:
            parts = ", ".join(f"{name} {quantity_text(amount)}" for _, name, amount in found)
            warnings.append(Issue(found[-1][0], "reservations_above_reach",
                                  f"reservations of {key} across all pools sum to {quantity_text(total)} ({parts}), "
                                  f"above the {quantity_text(capacity)} {key} their policies' queues can reach"))
    return warnings


def brief(name: str) -> str:
    """A name for a message, cut short: an invalid name can be any length."""
    return name[:40] + "…" if len(name) > 40 else name


def show(value: object) -> str:
    """A user's value for a message, short and safe: never the repr of a whole structure."""
    if isinstance(value, str):
        return repr(value[:40] + "…") if len(value) > 40 else repr(value)
    return json_type(value)


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a {type(value).__name__}"
