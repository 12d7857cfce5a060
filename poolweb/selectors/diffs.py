"""What changed (reconcile.diff): between any two provisioned versions, and the saved draft against
the live version (what each version changed against the one before it is stored with it).

Version 0 is the empty configuration before the first provision, so "what version 1 did" and
"what changed since a draft made from nothing" are diffs like any other. Diffs read the
versions' documents (decision 22): parsing one costs no query and leaves the engine's kept
configurations alone.
"""

from __future__ import annotations

from poolweb.models import ConfigVersion
from poolweb.selectors.versions import draft_get, live_version, version_get
from reconcile import Config
from reconcile.diff import Change, diff
from reconcile.document import parse_document, read_document


def version_config(number: int) -> Config:
    """Version ``number``'s configuration; ``Config()`` for 0; ``ConfigNotFound`` otherwise."""
    return Config() if number == 0 else config_of(version_get(number))


def config_of(version: ConfigVersion | None) -> Config:
    if version is None:
        return Config()
    config = read_document(version.document)  # provision validated it: no need to check it again
    if config is None:  # a damaged row
        raise ValueError(f"version {version.number} does not read as a configuration")
    return config


def version_changes(*, before: int, after: int) -> tuple[Change, ...]:
    return diff(version_config(before), version_config(after))


def draft_changes() -> tuple[Change, ...] | None:
    """What provisioning the saved draft would change against the live version; None while the
    draft does not validate (there is then no configuration to compare)."""
    parsed = parse_document(draft_get())
    return None if parsed.config is None else diff(config_of(live_version()), parsed.config)

