"""The site row (the live version and the management switch), read under the pass lock by
whoever reads or changes either for a decision.

A pass, a provision and the switch hold ``sql.pass_lock`` while they run, so one runs at a time:
a provision cannot change the configuration under a pass, and R-57 is checked against requests
no pass is moving. The pass lock is not SQLite's write lock (a file lock there; a PostgreSQL
advisory lock): a pass holds it while it reads and plans, and writers of requests go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from poolweb import sql
from poolweb.models import SiteState


@contextmanager
def site_locked() -> Iterator[SiteState]:
    """The site row, created on first use, with every other pass, provision and switch kept out
    until the block ends. Enter it before a transaction, not inside one: on SQLite the
    transaction would hold the write lock, which the holder of this lock may be waiting for."""
    with sql.pass_lock():
        state = SiteState.objects.select_related("live_version").defer("live_version__document").filter(pk=1).first()
        yield state or SiteState.objects.get_or_create(pk=1)[0]
