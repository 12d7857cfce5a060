"""The site row: the live version and the management switch, locked by whoever changes either.

A pass and a provision lock it first, so one runs at a time: a provision cannot change the
configuration under a pass, and R-57 is checked against requests no pass is moving
(``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the IMMEDIATE transaction already holds the
database's one write lock from its start).
"""

from __future__ import annotations

from poolweb.models import SiteState


def site_locked() -> SiteState:
    """The site row, created on first use, locked until the transaction ends."""
    state, _ = SiteState.objects.select_for_update().get_or_create(pk=1)
    return state
