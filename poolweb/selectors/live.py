"""Reads for the live state (docs/api.md §4): pools, a pool's queue and running requests, policies.

Every read is a fixed handful of queries whatever the number of requests: the live
configuration (two), the live allocations as values (one), and grouped counts of pending
requests (one each). Quantities stay integer milli-units here; the API formats them.

A pool's numbers, with ``h100 {gpu: 8}`` and two live requests of 4 and 6 gpu on it after a
provision shrank it (R-57): used ``{gpu: 10}``, free ``{gpu: 0}``, overcommitted ``{gpu: 2}``.
Like reconcile.report, a key counts on a pool only where it is metered there (§1): the
``step_run: 1`` of each request shows only on a pool whose capacity lists ``step_run``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Count, F, QuerySet

from poolweb import sql
from poolweb.models import Request as RequestRow
from poolweb.selectors.snapshot import SNAPSHOT_FIELDS, to_engine
from poolweb.selectors.versions import EngineVersion, live_config, live_engine_version
from reconcile import ALL_POOLS, LIVE_STATES, Config, Request, State, Vector
from reconcile.document import NAME_PATTERN
from reconcile.quantity import unmetered_keys
from reconcile.report import usage_report

PENDING = State.PENDING.value

Amounts = dict[str, int]  # key → milli-units


@dataclass(frozen=True, slots=True)
class PoolState:
    name: str
    description: str
    capacity: Amounts
    used: Amounts  # the live allocations on the pool, per key it meters
    free: Amounts  # per capacity key: what a new request could take, capacity − used − held, never below 0
    overcommitted: Amounts  # per key where used > capacity: used − capacity
    held: Amounts  # the demand of preemptors whose victims are leaving, promised to them
    pending: int  # pending requests it may serve: of the profiles connected to it (its queue's rows)
    running: int  # live requests (allocated or preempting) on the pool


@dataclass(frozen=True, slots=True)
class ScopeUsage:
    scope: str  # a pool name or "*"
    key: str
    usage: int
    reserved: int | None  # as stated by the quota row of exactly this scope
    limit: int | None
    borrowed: int
    pending: int  # the policy's pending requests queued at this scope ("*": all of them)
    running: int  # the policy's live requests at this scope ("*": all of them)


@dataclass(frozen=True, slots=True)
class PolicyState:
    name: str
    description: str
    group: str
    priority: int
    pending: int
    running: int
    scopes: tuple[ScopeUsage, ...]


def is_pool_name(name: str) -> bool:
    return NAME_PATTERN.fullmatch(name) is not None


def pool_states(names: Collection[str] | None = None, config: Config | None = None) -> list[PoolState]:
    """Every pool of the live configuration (or ``config``, read already), or those of ``names``,
    in configuration order."""
    config = config or live_config()
    live_rows = RequestRow.objects.filter(state__in=LIVE_STATES)
    held_rows = RequestRow.objects.filter(state=PENDING, held_pool__isnull=False)
    pending_rows = RequestRow.objects.filter(state=PENDING)
    if names is not None:
        live_rows, held_rows = live_rows.filter(pool__in=names), held_rows.filter(held_pool__in=names)
        pending_rows = pending_rows.filter(profile__in={p for name in names for p in config.profiles_on.get(name, ())})
    by_profile = dict(pending_rows.order_by().values("profile").annotate(n=Count("id")).values_list("profile", "n"))
    return pool_states_of(config, live_rows.values_list("pool", "resources", "preempted_by"),
                          held_rows.values_list("id", "held_pool", "resources"), by_profile, names)


def pool_states_of(config: Config, live: Iterable[tuple[str | None, Mapping[str, int], int | None]],
                   holders: Iterable[tuple[int, str, Mapping[str, int]]], pending_by_profile: Mapping[str, int],
                   names: Collection[str] | None = None) -> list[PoolState]:
    """``pool_states`` of values at hand: (pool, resources, preempted_by) of the live requests,
    (id, held pool, resources) of the preemptors holding room, and the pending count per profile;
    a pass announces what it wrote this way. A pool's pending count is that of the profiles
    connected to it (decision 119)."""
    live, holders = list(live), list(holders)
    used = _sum_by_pool((pool, resources) for pool, resources, _ in live)
    running = Counter(pool for pool, _, _ in live)
    held = _sum_by_pool((pool, resources) for _, pool, resources in holders)
    beyond = _sum_by_pool(_held_room(holders, live))
    pending = {pool: sum(pending_by_profile.get(profile, 0) for profile in profiles)
               for pool, profiles in config.profiles_on.items()}
    return [_pool_state(pool.name, pool.description, dict(pool.capacity), used.get(pool.name, {}),
                        held.get(pool.name, {}), beyond.get(pool.name, {}), pending.get(pool.name, 0),
                        running[pool.name])
            for pool in config.pools if names is None or pool.name in names]


def _held_room(holders: Iterable[tuple[int, str, Amounts]], live: list[tuple]) -> Iterable[tuple[str, Amounts]]:
    """R-45, as the engine's ledger holds it: the room a preemptor takes from others, its demand
    beyond what its victims still occupy on the pool (their capacity is in use already)."""
    victims: defaultdict[tuple[int, str], Amounts] = defaultdict(dict)
    for pool, resources, preempted_by in live:
        if preempted_by is not None:
            holding = victims[(preempted_by, pool)]
            for key, amount in resources.items():
                holding[key] = holding.get(key, 0) + amount
    for request_id, pool, resources in holders:
        occupied = victims.get((request_id, pool), {})
        yield pool, {key: amount - occupied.get(key, 0) for key, amount in resources.items()
                     if amount > occupied.get(key, 0)}


def _pool_state(name: str, description: str, capacity: Amounts, used: Amounts, held: Amounts, beyond: Amounts,
                pending: int, running: int) -> PoolState:
    unmetered = unmetered_keys(capacity)
    used = {key: amount for key, amount in used.items() if key not in unmetered}
    held = {key: amount for key, amount in held.items() if key not in unmetered}
    free = {key: max(0, amount - used.get(key, 0) - beyond.get(key, 0)) for key, amount in capacity.items()}
    # A key a provision removed from the capacity still in use is over-committed too.
    over = {key: amount - capacity.get(key, 0) for key, amount in used.items() if amount > capacity.get(key, 0)}
    return PoolState(name, description, capacity, used, free, over, held, pending, running)


def _sum_by_pool(rows: Iterable[tuple[str | None, Mapping[str, int]]]) -> dict[str, Amounts]:
    totals: defaultdict[str, Amounts] = defaultdict(dict)
    for pool, resources in rows:
        if pool is None:
            continue
        total = totals[pool]
        for key, amount in resources.items():
            total[key] = total.get(key, 0) + amount
    return dict(totals)


def live_pool_exists(name: str, config: Config | None = None) -> bool:
    """Whether ``name`` is a well-formed name of a pool of the live configuration (or ``config``)."""
    return is_pool_name(name) and name in (config or live_config()).pool


def pool_queue(name: str, config: Config | None = None) -> QuerySet[RequestRow]:
    """Every pending request the pool may serve — of the profiles connected to it, wherever it
    waits (decision 119) — in the order the next pass serves them: ``position`` (R-32), then id.
    Whose they are decides how much of each a reader sees (``selectors.requests.Audience``)."""
    return pending_for(name, config).select_related("owner").order_by(F("position").asc(nulls_last=True), "id")


def pending_for(pool: str, config: Config | None = None) -> QuerySet[RequestRow]:
    """The pending requests ``pool`` may serve: those of the profiles connected to it in the live
    configuration (or ``config``, read already)."""
    return RequestRow.objects.filter(state=PENDING, profile__in=(config or live_config()).profiles_on.get(pool, ()))


def pool_running(name: str) -> QuerySet[RequestRow]:
    """The pool's live requests (allocated and preempting) in the order they were granted: the
    oldest grant first, then id. The same privacy as the queue."""
    return (RequestRow.objects.filter(state__in=LIVE_STATES, pool=name).select_related("owner")
            .order_by("allocated_at", "grant_order", "id"))


@dataclass(frozen=True, slots=True)
class PolicyUsage:
    """``policy_states`` and what they were computed from, for a reader that counts requests too
    (``/metrics``) without reading them again."""

    policies: list[PolicyState]
    live: list[Request]  # the live requests, as the engine reads them
    pending: Counter[tuple[str, str]]  # (policy, queue pool) and (policy, "*") → pending requests


def policy_states(names: Collection[str] | None = None, version: EngineVersion | None = None) -> list[PolicyState]:
    """Every policy of the live configuration (or those of ``names``), in configuration order,
    with its usage rows (reconcile.report: one per scope and key with a quota row or live usage);
    ``version``: the live version, when the caller read it already."""
    return policy_usage(names, version).policies


def policy_usage(names: Collection[str] | None = None, version: EngineVersion | None = None) -> PolicyUsage:
    # Read as a pass reads them (sql.select_requests: the driver's rows, one Vector per distinct
    # resources): 10^3 live rows in 5 ms of CPU instead of the ORM's 24 (bench/metrics.py).
    vectors: dict[str, Vector] = {}
    live = [to_engine(row, vectors) for row in sql.select_requests(SNAPSHOT_FIELDS, "state", LIVE_STATES)]
    if names is not None:
        live = [request for request in live if request.policy in names]
    pending = _pending_by_policy_and_pool(names)
    return PolicyUsage(policy_states_of(version or live_engine_version(), live, pending, names), live, pending)


def policy_states_of(version: EngineVersion, live: list[Request], pending: Mapping[tuple[str, str], int],
                     names: Collection[str] | None = None) -> list[PolicyState]:
    """``policy_states`` of values at hand: the live version, the live requests, and the pending
    count per (policy, queue pool) and per (policy, "*")."""
    config, terms = version.config, version.terms
    running: Counter[tuple[str, str]] = Counter()
    for request in live:
        running[(request.policy, request.pool)] += 1
        running[(request.policy, ALL_POOLS)] += 1
    rows_of: defaultdict[str, list[ScopeUsage]] = defaultdict(list)
    for row in usage_report(config, live, terms):
        at = (row.policy, row.scope)
        rows_of[row.policy].append(ScopeUsage(row.scope, row.key, row.usage, row.reserved, row.limit, row.borrowed,
                                              pending.get(at, 0), running[at]))
    return [PolicyState(policy.name, policy.description, policy.group, policy.priority,
                        pending.get((policy.name, ALL_POOLS), 0), running[(policy.name, ALL_POOLS)],
                        tuple(rows_of[policy.name]))
            for policy in config.policies if names is None or policy.name in names]


def _pending_by_policy_and_pool(names: Collection[str] | None) -> Counter[tuple[str, str]]:
    """(policy, queue pool) → pending count, and (policy, "*") → all the policy's pending."""
    counts: Counter[tuple[str, str]] = Counter()
    rows = RequestRow.objects.filter(state=PENDING)
    if names is not None:
        rows = rows.filter(policy__in=names)
    grouped = (rows.order_by().values("policy", "queue_pool")
               .annotate(n=Count("id")).values_list("policy", "queue_pool", "n"))
    for policy, pool, n in grouped:
        counts[(policy, ALL_POOLS)] += n
        if pool is not None:
            counts[(policy, pool)] += n
    return counts

