"""The draft as the console and ``GET /config/draft/info`` describe it: whether one is saved, who
saved it when, the live version it was made from (services.draft_base) and whether that is still
the live one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from poolweb.models import Draft
from poolweb.selectors.versions import live_version


@dataclass(frozen=True)
class DraftInfo:
    exists: bool
    base_version: int | None  # None: saved without one (never stale)
    based_on: int | None
    live_version: int  # 0 before the first provision
    stale: bool
    updated_by: str | None
    updated_at: datetime | None


def live_number() -> int:
    """The live version's number, 0 before the first provision."""
    version = live_version()
    return version.number if version else 0


def is_stale(base_version: int | None, live: int) -> bool:
    return base_version is not None and base_version != live


def draft_info() -> DraftInfo:
    draft = Draft.objects.select_related("updated_by").filter(pk=1).first()
    live = live_number()
    if draft is None:
        return DraftInfo(False, None, None, live, False, None, None)
    return DraftInfo(True, draft.base_version, draft.based_on, live, is_stale(draft.base_version, live),
                     draft.updated_by.username if draft.updated_by else None, draft.updated_at)
