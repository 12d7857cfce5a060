"""How long each profile's runs take, as observed (R-54, decision 188): the run times of the runs
that ended in the last ``WINDOW``, per profile, in whole seconds, sorted, as every 5th percentile
(21 of them; all when fewer). The estimated start of a waiting request relies on them where the
runs ahead declared no limit (``reconcile.eta.expected_run``).

Runs of profile "train" that ended this week after 900, 600 and 4000 s: {"train": (600, 900, 4000)}.
A profile with fewer than ``LEAST_RUNS`` such runs has none: too few to say.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from poolweb.models import Request as RequestRow
from reconcile import State
from reconcile.eta import percentiles

WINDOW = timedelta(days=7)
LEAST_RUNS = 3
REFRESH = timedelta(minutes=5)  # the medians move slowly; a pass reads them at most this often
RAN = (State.RELEASED.value, State.EXPIRED.value, State.PREEMPTED.value)  # finished after running


def observed_run_seconds(now: datetime) -> dict[str, tuple[int, ...]]:
    """Profile → the run times of its runs that ended in the ``WINDOW`` before ``now``, sorted, as
    ``reconcile.eta.percentiles``."""
    runs: dict[str, list[int]] = {}
    rows = (RequestRow.objects.filter(state__in=RAN, finished_at__gte=now - WINDOW, finished_at__lte=now,
                                      allocated_at__isnull=False)
            .values_list("profile", "allocated_at", "finished_at"))
    for profile, allocated_at, finished_at in rows.iterator(chunk_size=5000):
        runs.setdefault(profile, []).append(int((finished_at - allocated_at).total_seconds()))
    return {profile: percentiles(sorted(seconds)) for profile, seconds in runs.items() if len(seconds) >= LEAST_RUNS}


class ObservedRuntimes:
    """``observed_run_seconds``, read again once ``REFRESH`` has passed since the last read (the
    passes of one process share it). ``forget`` makes the next read a fresh one."""

    def __init__(self) -> None:
        self._read_at: datetime | None = None
        self._seconds: dict[str, tuple[int, ...]] = {}

    def at(self, now: datetime) -> dict[str, tuple[int, ...]]:
        if self._read_at is None or not (self._read_at <= now < self._read_at + REFRESH):
            self._seconds, self._read_at = observed_run_seconds(now), now
        return self._seconds

    def forget(self) -> None:
        self._read_at = None
