"""The provisioned configuration as the console's resource configuration page shows it: read from
the rows each provision writes for its version (Pool, Profile, Connection, Policy, Quota, Queue),
with each profile's queued and running requests. Eight queries whatever the size.

Rows are written in document order (services.config), so ordering by id gives it back; the
connections give both orders — a pool's execution order by ``execution_position``, a profile's
pool precedence by ``precedence`` — and the queues give each profile's policy rank. Quantities
stay milli-units, as stored.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from poolweb.models import (
    Connection, Policy as PolicyRow, Pool as PoolRow, Profile as ProfileRow, Queue, Quota as QuotaRow,
    Request as RequestRow, SiteState,
)
from reconcile import State

Amounts = dict[str, int]  # key → milli-units
LIVE_STATES = (State.ALLOCATED.value, State.PREEMPTING.value)


@dataclass(frozen=True)
class PoolView:
    name: str
    description: str
    capacity: Amounts
    execution_order: tuple[str, ...]  # every connected profile, served first to last


@dataclass(frozen=True)
class ConnectionView:
    pool: str
    name: str  # the display name; the pool's name unless given


@dataclass(frozen=True)
class ProfileView:
    name: str
    description: str
    resources: Amounts  # the allotment (a dynamic profile's default)
    dynamic: bool
    connections: tuple[ConnectionView, ...]  # pool precedence: preferred first
    policies: tuple[str, ...]  # policy rank: served first to last
    pending: int  # requests queued for the profile
    running: int  # requests allocated or preempting


@dataclass(frozen=True)
class QuotaView:
    scope: str  # a pool or "*"
    key: str
    reserved: int | None
    limit: int | None


@dataclass(frozen=True)
class PolicyView:
    name: str
    description: str
    group: str
    priority: int
    quotas: tuple[QuotaView, ...]


@dataclass(frozen=True)
class ConfigurationView:
    version: int  # 0 before the first provision (and nothing else is set)
    author: str | None
    created_at: datetime | None
    comment: str
    pools: tuple[PoolView, ...] = ()
    profiles: tuple[ProfileView, ...] = ()
    policies: tuple[PolicyView, ...] = ()


def live_configuration() -> ConfigurationView:
    """The live version's pools, profiles and policies, in document order."""
    state = SiteState.objects.select_related("live_version__author").filter(pk=1).first()
    version = state.live_version if state else None
    if version is None:
        return ConfigurationView(0, None, None, "")
    by_pool: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    by_profile: defaultdict[int, list[tuple[int, ConnectionView]]] = defaultdict(list)
    for profile_id, pool_id, pool, profile, name, precedence, position in (
            Connection.objects.filter(profile__version=version)
            .values_list("profile_id", "pool_id", "pool__name", "profile__name", "name", "precedence",
                         "execution_position")):
        by_pool[pool_id].append((position, profile))
        by_profile[profile_id].append((precedence, ConnectionView(pool, name)))
    pools = tuple(PoolView(row.name, row.description, dict(row.capacity), _ordered(by_pool[row.pk]))
                  for row in PoolRow.objects.filter(version=version).order_by("id"))
    return ConfigurationView(version.number, version.author.username if version.author else None,
                             version.created_at, version.comment, pools, _profiles(version, by_profile),
                             _policies(version))


def _profiles(version, connections: dict[int, list[tuple[int, ConnectionView]]]) -> tuple[ProfileView, ...]:
    ranks: defaultdict[int, list[tuple[int, str]]] = defaultdict(list)
    for profile_id, rank, policy in (Queue.objects.filter(profile__version=version)
                                     .values_list("profile_id", "rank", "policy__name")):
        ranks[profile_id].append((rank, policy))
    pending, running = _request_counts()
    return tuple(ProfileView(row.name, row.description, dict(row.resources), row.dynamic,
                             _ordered(connections[row.pk]), _ordered(ranks[row.pk]),
                             pending.get(row.name, 0), running.get(row.name, 0))
                 for row in ProfileRow.objects.filter(version=version).order_by("id"))


def _policies(version) -> tuple[PolicyView, ...]:
    quotas: defaultdict[int, list[QuotaView]] = defaultdict(list)
    for policy_id, scope, key, reserved, limit in (QuotaRow.objects.filter(policy__version=version).order_by("id")
                                                   .values_list("policy_id", "scope", "key", "reserved", "limit")):
        quotas[policy_id].append(QuotaView(scope, key, reserved, limit))
    return tuple(PolicyView(row.name, row.description, row.group_name, row.priority, tuple(quotas[row.pk]))
                 for row in PolicyRow.objects.filter(version=version).order_by("id"))


def _request_counts() -> tuple[dict[str, int], dict[str, int]]:
    """(profile → pending requests, profile → live requests), from one grouped query."""
    pending: dict[str, int] = {}
    running: dict[str, int] = {}
    rows = (RequestRow.objects.filter(state__in=(State.PENDING.value, *LIVE_STATES)).order_by()
            .values("profile", "state").annotate(n=Count("id")).values_list("profile", "state", "n"))
    for profile, state, n in rows:
        counts = pending if state == State.PENDING.value else running
        counts[profile] = counts.get(profile, 0) + n
    return pending, running


def _ordered(items: list[tuple[int, object]]) -> tuple:
    return tuple(item for _, item in sorted(items, key=lambda pair: pair[0]))
