"""Comparing configurations (reconcile.diff on their documents): the diff between any two
versions, the one-line summary of each version against the one before it, and what the saved
draft would change.

Version 0 is the empty configuration before the first provision, so "what version 1 did" and
"what changed since a draft made from nothing" are diffs like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from poolweb.models import ConfigVersion
from poolweb.services.config import ConfigNotFound, draft_get
from poolweb.services.draft_base import MAX_VERSION
from poolweb.services.state import config_of, live_config
from reconcile import Config
from reconcile.diff import Change, diff, summarize
from reconcile.document import parse_document


def version_config(number: int) -> Config:
    """Version ``number`` as the engine reads it; ``Config()`` for 0; ``ConfigNotFound`` otherwise."""
    if number == 0:
        return Config()
    row = ConfigVersion.objects.filter(number=number).first() if 0 < number <= MAX_VERSION else None
    if row is None:
        raise ConfigNotFound(f"there is no configuration version {number}")
    return config_of(row)


def version_changes(*, before: int, after: int) -> tuple[Change, ...]:
    return diff(version_config(before), version_config(after))


def draft_changes() -> tuple[Change, ...] | None:
    """What provisioning the saved draft would change against the live version; None while the
    draft does not validate (there is then no configuration to compare)."""
    parsed = parse_document(draft_get())
    return None if parsed.config is None else diff(live_config(), parsed.config)


def version_summaries(versions: Sequence[ConfigVersion]) -> dict[int, str]:
    """Number → what it changed against the version before it, for each of ``versions``."""
    if not versions:
        return {}
    numbers = {v.number for v in versions} | {v.number - 1 for v in versions}
    rows = {v.number: v for v in ConfigVersion.objects.filter(number__in=numbers)}
    configs = {n: config_of(row) for n, row in rows.items()}
    # Numbers have no gaps (provision takes the next one): only version 1 has no predecessor.
    return {v.number: summarize(diff(configs.get(v.number - 1, Config()), configs[v.number])) for v in versions}
