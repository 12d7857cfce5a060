"""The provisioned configuration as the console's resource configuration page shows it: the live
version (who provisioned it, when, why), its configuration as the engine reads it from the
version's rows (selectors.versions, built once per version), and each profile's queued and
running requests. A fixed handful of queries whatever the size: the site row, the author, one
grouped count (and the version's rows the first time it is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count

from poolweb.models import Request as RequestRow, SiteState
from poolweb.selectors.live import LIVE_STATES, PENDING
from poolweb.selectors.versions import engine_version
from reconcile import Config


@dataclass(frozen=True)
class LiveConfiguration:
    version: int  # 0 before the first provision (and nothing else is set)
    author: str | None
    created_at: datetime | None
    comment: str
    config: Config = field(default_factory=Config)
    pending: dict[str, int] = field(default_factory=dict)  # profile → requests queued for it
    running: dict[str, int] = field(default_factory=dict)  # profile → requests allocated or preempting


def live_configuration() -> LiveConfiguration:
    state = SiteState.objects.select_related("live_version__author").filter(pk=1).first()
    version = state.live_version if state else None
    if version is None:
        return LiveConfiguration(0, None, None, "")
    pending, running = _request_counts()
    return LiveConfiguration(version.number, version.author.username if version.author else None,
                             version.created_at, version.comment, engine_version(version).config, pending, running)


def _request_counts() -> tuple[dict[str, int], dict[str, int]]:
    """(profile → pending requests, profile → live requests), from one grouped query."""
    pending: dict[str, int] = {}
    running: dict[str, int] = {}
    rows = (RequestRow.objects.filter(state__in=(PENDING, *LIVE_STATES)).order_by()
            .values("profile", "state").annotate(n=Count("id")).values_list("profile", "state", "n"))
    for profile, state, n in rows:
        counts = pending if state == PENDING else running
        counts[profile] = counts.get(profile, 0) + n
    return pending, running
