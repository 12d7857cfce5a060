"""One reconcile pass: load a snapshot in bulk, plan it with the engine, apply the plan in one
transaction with conditional writes (``planned_rows``), announce it (``announcement``) and record
it (``PassRecord``, and the cumulative totals of ``/metrics``: ``totals``).

One pass at a time, and no provision (R-57) under a pass: the pass holds the pass lock
(``site_locked``) from its clock to its commit. That lock is not the database's write lock: the
snapshot is read and planned outside any write transaction (SQLite's WAL lets writers commit
meanwhile), and only the writes take it, in one short transaction. So a submission, release,
cancel or heartbeat can commit between the read and the write on both databases, and the conflict
rules of ``planned_rows`` are what keep the plan honest.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from poolweb.collector import collector_paused
from poolweb.models import PassRecord, SiteState
from poolweb.selectors.runtimes import ObservedRuntimes
from poolweb.selectors.snapshot import load_pass_input
from poolweb.services import announcement
from poolweb.services.budgets import IDLE_TERMS, PASS_BURNS, marks_due, marks_write
from poolweb.services.payloads import REQUEST_COLUMNS
from poolweb.services.planned_rows import PlanVoid, planned_rows, write_rows
from poolweb.services.site import site_locked
from poolweb.services.totals import PASS_DURATION, histogram_observe, totals_add_pass
from reconcile import Plan, Snapshot, State, plan
from reconcile.eta import estimate_starts

log = logging.getLogger(__name__)

OBSERVED = ObservedRuntimes()  # the profiles' observed run times, shared by this process's passes (R-54)
COUNTED = ("grants", "preemptions", "evictions", "expiries", "rejections", "cancellations")


@dataclass
class PassResult:
    plan: Plan
    duration_ms: float
    conflicts: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    live: int = 0


ATTEMPTS = 3  # a plan is void only when a heartbeat lands at its lease's very end


def reconcile_pass(*, now: datetime | None = None, dry_run: bool = False, trigger: str = "") -> PassResult:
    """Decide and apply one pass at ``now`` (default: the time once the pass lock is held). With
    ``dry_run`` nothing is written."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _pass(now, dry_run, trigger)
        except PlanVoid:
            if attempt == ATTEMPTS:
                raise
            log.info("a lease was renewed while pass %s/%s planned its expiry: planning again", attempt, ATTEMPTS)
    raise AssertionError("unreachable")


def _pass(now: datetime | None, dry_run: bool, trigger: str) -> PassResult:
    started = time.perf_counter()
    with site_locked() as state, collector_paused():
        # The pass's values (snapshot, rows, payloads: ~10^6 objects after a burst) die as
        # _decide_and_write returns, with the collector still paused; alive at its end, the
        # collection owed for the pass traversed them all, 5 % of a cold pass (decision 62).
        return _decide_and_write(state, now or timezone.now(), dry_run, trigger, started)


def _decide_and_write(state: SiteState, now: datetime, dry_run: bool, trigger: str, started: float) -> PassResult:
    """One pass at ``now`` (read under the pass lock: a pass that waited behind another is not in
    the past)."""
    news = None if dry_run else announcement.unannounced_changes()  # read before the snapshot
    read = load_pass_input(now, state, also=REQUEST_COLUMNS)  # what it announces too
    burns = PASS_BURNS.burns(read.snapshot.config, now, read.snapshot)  # nothing read without budgets
    # spent idle policies served last, from idle capacity
    snapshot, terms = IDLE_TERMS.planned(read.snapshot, burns, read.version.terms)
    decided = plan(snapshot, terms)
    if news is None:  # a dry run writes nothing
        return _result(snapshot, decided, 0, started)
    etas = estimate_starts(snapshot, decided, OBSERVED.at(now))
    rows = planned_rows(snapshot, read.waits, decided, etas)
    announcement.add_plan(news, snapshot, read.waits, decided)
    due = marks_due(burns)  # thresholds crossed since the last pass
    if not (rows.columns or news.pools or news.policies or due):
        return _result(snapshot, decided, 0, started)
    announcement.prepare(news, read, decided, rows)  # outside the write lock
    with transaction.atomic():  # on SQLite the write lock, from here to the commit only
        leases = write_rows(rows)
        totals_add_pass(decided=decided, requests=rows.requests, written=rows.columns)  # what committed only
        announcement.publish(news, read.version, decided, rows, leases)
        marks_write(due)
        result = _result(snapshot, decided, rows.conflicts, started)
        if rows.columns or rows.conflicts:
            _record(result, now, trigger)
    return result


def _result(snapshot: Snapshot, decided: Plan, conflicts: int, started: float) -> PassResult:
    pending = sum(r.state == State.PENDING for r in snapshot.requests)
    return PassResult(decided, (time.perf_counter() - started) * 1000, conflicts,
                      {name: len(getattr(decided, name)) for name in COUNTED},
                      pending=pending, live=len(snapshot.requests) - pending)


def _record(result: PassResult, now: datetime, trigger: str) -> None:
    PassRecord.objects.create(started_at=now, duration_ms=round(result.duration_ms, 3), trigger=trigger[:32],
                              pending=result.pending, live=result.live, conflicts=result.conflicts,
                              **result.counts)
    histogram_observe(PASS_DURATION, "", [result.duration_ms / 1000])

