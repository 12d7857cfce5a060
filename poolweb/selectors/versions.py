"""The provisioned versions: which one is live, and each as the engine's ``Config``.

A version is stored twice, on purpose (docs/decisions.md): as its document, the exchange format
that ``GET /config``, export, drafts and restore use, and as rows (pools, profiles, connections in
both orders, policies, quotas, queues) that pages, the admin and the engine read. The engine's
``Config`` is built from the rows, once per version: versions never change, so it is kept, with
the ``TermsCache`` the planner fills as passes need its terms.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from django.db.models import QuerySet

from poolweb.models import (
    ConfigVersion, Connection, Draft, Policy as PolicyRow, Pool as PoolRow, Profile as ProfileRow, Queue,
    Quota as QuotaRow, SiteState,
)
from poolweb.sql import api_calls
from reconcile import Config, Policy, Pool, Profile, Quota, Vector
from reconcile.budgets import budget_of
from reconcile.quota import TermsCache


class EngineVersion(NamedTuple):
    """A provisioned version as the engine reads it: its ``Config``, and the ``TermsCache`` that
    passes on that configuration fill and share."""

    config: Config
    terms: TermsCache


class EngineVersions:
    """``EngineVersion`` per version, built on first use and kept: a pass, a read of the live state
    and a submission all ask for the live version's, many times a second."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._kept: dict[tuple, EngineVersion] = {}

    def of(self, version: ConfigVersion) -> EngineVersion:
        # The creation time tells a version apart from another with its id (a test database reset).
        key = (version.pk, version.number, version.created_at)
        found = self._kept.get(key)
        if found is None:
            if len(self._kept) >= self.size:
                self._kept.clear()
            config = config_from_rows(version)
            found = self._kept[key] = EngineVersion(config, TermsCache(config))
        return found


EMPTY_DOCUMENT = {"pools": [], "profiles": [], "policies": []}


class ConfigNotFound(LookupError):
    """No draft, or no version with that number."""


ENGINE_VERSIONS = EngineVersions()
NO_VERSION = EngineVersion(Config(), TermsCache(Config()))  # before the first provision


def site() -> SiteState:
    """The site row (the live version and the switch) as stored; defaults before the first write.
    Without the version's document: the engine reads the version's rows (built once, ``EngineVersions``), and the
    document, read and decoded on every request, cost more than the rest of the row."""
    return api_calls.site_row() or SiteState(pk=1)


def live_version() -> ConfigVersion | None:
    return site().live_version


def management_enabled() -> bool:
    return site().management_enabled


class Management(NamedTuple):
    """The switch as a page tells it: on or off, who last flipped it and when (None: nobody yet,
    or an account since deleted)."""

    enabled: bool
    changed_by: str | None
    changed_at: datetime | None


def management_state() -> Management:
    """The switch as a page tells it, read on its own (``management_of`` a site row read already)."""
    row = SiteState.objects.filter(pk=1).values_list(
        "management_enabled", "management_changed_by__username", "management_changed_at").first()
    return Management(*row) if row else Management(True, None, None)


def management_of(state: SiteState) -> Management:
    """``management_state`` of the site row as ``site()`` read it: who flipped the switch is read
    only when someone did."""
    by = state.management_changed_by.username if state.management_changed_by_id else None
    return Management(state.management_enabled, by, state.management_changed_at)


class LiveSite(NamedTuple):
    """The site row and its live configuration as one call reads them, once: each selector that
    reads the live configuration on its own reads the site row and the version again (two
    statements each; the queue page read them five times), so a page or fragment that needs
    several reads this and hands ``config`` on."""

    row: SiteState
    config: Config


def live_site() -> LiveSite:
    row = site()
    return LiveSite(row, engine_version(row.live_version).config)


def config_live_document() -> dict:
    """The provisioned document with its ``version``; version 0 and empty lists before any."""
    version = live_version()
    if version is None:
        return {"version": 0, **EMPTY_DOCUMENT}
    return {"version": version.number, **version.document}


def version_list() -> QuerySet[ConfigVersion]:
    """Newest first, without their documents (0.7 MB each at the size limits)."""
    return ConfigVersion.objects.select_related("author").defer("document").order_by("-number")


def version_get(number: int) -> ConfigVersion:
    # Out-of-range numbers would overflow the database integer instead of simply not matching.
    version = ConfigVersion.objects.filter(number=number).first() if 0 < number < 2**31 else None
    if version is None:
        raise ConfigNotFound(f"there is no configuration version {number}")
    return version


def version_document(number: int) -> dict:
    version = version_get(number)
    return {"version": version.number, **version.document}


def draft_get() -> dict:
    """The saved draft, as it was written."""
    draft = Draft.objects.filter(pk=1).first()
    if draft is None:
        raise ConfigNotFound("there is no draft")
    return draft.document


def engine_version(version: ConfigVersion | None) -> EngineVersion:
    return ENGINE_VERSIONS.of(version) if version is not None else NO_VERSION


def live_engine_version() -> EngineVersion:
    return engine_version(live_version())


def live_config() -> Config:
    return live_engine_version().config


class DisplayNames(NamedTuple):
    """Name → what people read, per kind, in the live configuration (the name when it has none)."""

    pools: dict[str, str]
    profiles: dict[str, str]
    policies: dict[str, str]


def display_names(config: Config | None = None) -> DisplayNames:
    """Of the live configuration (or ``config``, read already)."""
    config = config or live_config()
    return DisplayNames(*({entry.name: entry.label for entry in entries}
                          for entries in (config.pools, config.profiles, config.policies)))


def config_from_rows(version: ConfigVersion) -> Config:
    """The version's rows as a ``Config`` (six queries); entries and quota rows in document order.
    The many rows (connections, queues, quotas) are read as values, not model instances: at the
    limits of docs/api.md §1 building 12,000 instances was most of the 230 ms this took."""
    connections = defaultdict(list)  # profile id → (precedence, pool name, connection name)
    execution = defaultdict(list)  # pool id → (position, profile name)
    for profile_id, pool_id, pool, profile, name, precedence, position in (
            Connection.objects.filter(profile__version=version).values_list(
                "profile_id", "pool_id", "pool__name", "profile__name", "name", "precedence", "execution_position")):
        connections[profile_id].append((precedence, pool, name))
        execution[pool_id].append((position, profile))
    ranked = defaultdict(list)  # profile id → policy names in rank order
    for profile_id, policy in (Queue.objects.filter(profile__version=version).order_by("rank")
                               .values_list("profile_id", "policy__name")):
        ranked[profile_id].append(policy)
    quotas = defaultdict(list)  # policy id → its rows
    for policy_id, scope, key, reserved, limit in (QuotaRow.objects.filter(policy__version=version).order_by("id")
                                                   .values_list("policy_id", "scope", "key", "reserved", "limit")):
        quotas[policy_id].append(Quota(scope, key, reserved, limit))
    pools = tuple(Pool(p.name, Vector(p.capacity), tuple(name for _, name in sorted(execution[p.id])), p.description,
                       p.display_name, tuple(sorted(p.labels.items())))
                  for p in PoolRow.objects.filter(version=version).order_by("id"))
    profiles = tuple(_profile(p, sorted(connections[p.id]), ranked[p.id])
                     for p in ProfileRow.objects.filter(version=version).order_by("id"))
    policies = tuple(Policy(p.name, p.priority, tuple(quotas[p.id]), p.group_name, p.description, p.display_name,
                            None if p.budget is None else budget_of(p.budget),
                            min_runtime_seconds=p.min_runtime_seconds, max_runtime_seconds=p.max_runtime_seconds,
                            require_max_runtime=p.require_max_runtime, on_time_limit=p.on_time_limit,
                            max_wait_seconds=p.max_wait_seconds)
                     for p in PolicyRow.objects.filter(version=version).order_by("id"))
    return Config(pools, profiles, policies)


def _profile(row: ProfileRow, connections: list[tuple[int, str, str]], policies: list[str]) -> Profile:
    """``connections``: (precedence, pool name, connection name), in precedence order."""
    return Profile(row.name, Vector(row.resources), row.dynamic, tuple(pool for _, pool, _ in connections),
                   tuple(policies), tuple(name for _, _, name in connections), row.description, row.display_name)
