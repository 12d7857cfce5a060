"""The version a draft was made from, and the refusal to provision a draft that is stale.

The console saves its drafts with ``base_version``: the live version the admin started from (0:
from nothing). If another admin provisions in the meantime, provisioning the draft as it is
would silently undo their version, so it is refused (``DraftStale``) unless the caller confirms
it has seen what changed. A draft saved without a base (a script, ``config import``) has none
and is never stale: it behaves exactly as before the base existed. Decision 20.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from poolweb.models import ConfigVersion, Draft
from poolweb.services.state import live_version

MAX_VERSION = 2**31 - 1  # the column is a 32-bit integer


class DraftStale(Exception):
    """The draft was made from ``base_version`` but ``live_version`` is live now."""

    def __init__(self, base_version: int, live_version: int) -> None:
        super().__init__(f"the draft was made from version {base_version}, but version {live_version} is live now")
        self.base_version = base_version
        self.live_version = live_version


@dataclass(frozen=True)
class DraftInfo:
    exists: bool
    base_version: int | None
    based_on: int | None
    live_version: int  # 0 before the first provision
    stale: bool
    updated_by: str | None
    updated_at: datetime | None


def live_number() -> int:
    version = live_version()
    return version.number if version else 0


def base_version_errors(base_version: int | None) -> list[dict]:
    """Why ``base_version`` cannot be a draft's base: it must be 0 or a provisioned version."""
    if base_version is None or base_version == 0:
        return []
    if 0 < base_version <= MAX_VERSION and ConfigVersion.objects.filter(number=base_version).exists():
        return []
    return [{"path": "base_version", "code": "unknown_version",
             "message": f"there is no configuration version {base_version} to base a draft on (0: from nothing)"}]


def refuse_stale(draft: Draft, *, confirmed: bool) -> None:
    """``DraftStale`` when ``draft`` was made from a version that is no longer live, unless
    ``confirmed``. Called under the provision's lock, so the live version cannot move after it."""
    if confirmed or draft.base_version is None:
        return
    live = live_number()
    if draft.base_version != live:
        raise DraftStale(draft.base_version, live)


def draft_info() -> DraftInfo:
    draft = Draft.objects.select_related("updated_by").filter(pk=1).first()
    live = live_number()
    if draft is None:
        return DraftInfo(False, None, None, live, False, None, None)
    stale = draft.base_version is not None and draft.base_version != live
    return DraftInfo(True, draft.base_version, draft.based_on, live, stale,
                     draft.updated_by.username if draft.updated_by else None, draft.updated_at)
