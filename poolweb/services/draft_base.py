"""The version a draft was made from, and the refusal to provision a draft that is stale.

The console saves its drafts with ``base_version``: the live version the admin started from (0:
from nothing). If another admin provisions in the meantime, provisioning the draft as it is
would silently undo their version, so it is refused (``DraftStale``) unless the caller confirms
it has seen what changed. A draft saved without a base (a script, ``config import``) has none
and is never stale: it behaves exactly as before the base existed. Decision 43.
"""

from __future__ import annotations

from poolweb.models import ConfigVersion, Draft
from poolweb.selectors.drafts import is_stale, live_number
from reconcile.document import Issue

MAX_VERSION = 2**31 - 1  # the column is a 32-bit integer


class DraftStale(Exception):
    """The draft was made from ``base_version`` but ``live_version`` is live now."""

    def __init__(self, base_version: int, live_version: int) -> None:
        super().__init__(f"the draft was made from version {base_version}, but version {live_version} is live now")
        self.base_version = base_version
        self.live_version = live_version


def base_version_errors(base_version: int | None) -> list[Issue]:
    """Why ``base_version`` cannot be a draft's base: it must be 0 or a provisioned version."""
    if not base_version:
        return []
    if 0 < base_version <= MAX_VERSION and ConfigVersion.objects.filter(number=base_version).exists():
        return []
    return [Issue("base_version", "unknown_version",
                  f"there is no configuration version {base_version} to base a draft on (0: from nothing)")]


def refuse_stale(draft: Draft, *, confirmed: bool) -> None:
    """``DraftStale`` when ``draft`` was made from a version that is no longer live, unless
    ``confirmed``. Called under the provision's lock, so the live version cannot move after it."""
    live = live_number()
    if not confirmed and is_stale(draft.base_version, live):
        raise DraftStale(draft.base_version, live)
