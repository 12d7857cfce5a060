"""Asking for a reconcile pass after something changed (submit, release, cancel, provision,
management switch), the pass loop that answers, and the periodic pass.

Services call ``reconcile_soon()`` once their own transaction has committed. It wakes the pass
loop (``manage.py reconcile --follow``, which ``serve`` runs) through its socket
(``services.wakeup``): no query, no broker poll. The loop takes every wake-up waiting, then
passes, so a burst of changes during a pass gives one more pass, not one each, and a change
committed after the loop took its wake-ups sends one it takes next.

When no loop listens (the tests, a deployment that runs only the django-q2 worker), it queues a
django-q2 task instead, coalesced: the first trigger raises the one ``PassTaskFlag`` and only
that one queues the task, which lowers the flag *before* it takes its snapshot, so a change
committed during a pass queues exactly one more. If a task is lost (a worker killed before it
ran), the flag would stay up and block further triggers; the periodic pass lowers it, so
nothing waits longer than one period.

Time-driven decisions (a lease running out, R-50; an eviction grace ending, R-44) need a pass
at the right moment, not only the periodic one (django-q2's scheduler looks every 30 s, so the
minute can stretch to 90 s). The loop sleeps until the next deadline at most. Without it, after
each task's pass a one-off schedule is armed at the next deadline; and a read of the live state
that finds a deadline passed asks for a pass (``reconcile_if_overdue``), so a client polling
sees the expiry within a pass.

``POOLWEB_PASSES=inline`` runs the task's function in the caller's process instead (the tests,
and a deployment that wants no worker).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django import db
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Min, Q
from django.utils import timezone
from django_q.models import Failure, Schedule
from django_q.tasks import async_task

from poolweb import sql
from poolweb.models import PassRecord, PassTaskFlag, Request as RequestRow
from poolweb.services import events, wakeup
from poolweb.services.reconciler import PassResult, reconcile_pass
from reconcile import LIVE_STATES, Reason, State

TASK = "poolweb.services.triggers.run_wanted_pass"
PERIODIC_TASK = "poolweb.services.triggers.run_periodic_pass"
DEADLINE = "reconcile at the next deadline"
PREEMPTING, ALLOCATED = State.PREEMPTING.value, State.ALLOCATED.value
IDLE_SECONDS = 60.0  # the loop passes at least this often, as the periodic pass does
RETRY_SECONDS = 1.0
MAX_GAP_SECONDS = 1.0  # the longest a change waits for the pass after a long one (see follow)

log = logging.getLogger(__name__)


def reconcile_soon(trigger: str = "change") -> bool:
    """Ask for a pass; True if it ran here and is done (inline), False if one is on its way."""
    if settings.POOLWEB["PASSES"] == "inline":
        run_wanted_pass(trigger)
        return True
    if not wakeup.WAKER.wake() and _raise_flag():
        async_task(TASK, trigger, task_name=f"pass:{trigger}", group="reconcile")
    return False


def follow() -> None:
    """The pass loop (``manage.py reconcile --follow``): a pass at start, then one whenever woken
    or at the next deadline, until the process is stopped. A failed pass is logged and tried
    again at the next wake-up, or after ``RETRY_SECONDS``.

    Coalescing: a pass answers every wake-up that came before it read, and after a pass of D
    seconds the next starts no sooner than D later (at most ``MAX_GAP_SECONDS``). Under a burst
    the loop so takes at most half of one core (and its database's), and the web processes the
    rest, while each pass takes in everything that arrived meanwhile; a quiet site passes at once,
    and a pass over 20,000 waiting requests answers a change within two of its durations."""
    listener = wakeup.Listener()
    trigger = "start"
    try:
        while True:
            started = time.monotonic()
            try:
                result = reconcile_pass(trigger=trigger)
                timeout = _seconds_to(next_deadline(result.plan.wake_at))
            except Exception:
                log.exception("a pass failed; trying again at the next change or in %s s", RETRY_SECONDS)
                db.close_old_connections()  # a connection the database dropped is opened again
                timeout = RETRY_SECONDS
            ended = time.monotonic()
            woken = listener.wait(timeout)
            if woken:
                time.sleep(max(0.0, ended + min(ended - started, MAX_GAP_SECONDS) - time.monotonic()))
                listener.drain()  # what came while it slept: this pass answers it too
            trigger = "change" if woken else "deadline"
    finally:
        listener.close()


def _seconds_to(deadline: datetime | None) -> float:
    """How long the loop may sleep: until ``deadline``, at most ``IDLE_SECONDS``."""
    if deadline is None:
        return IDLE_SECONDS
    return min(IDLE_SECONDS, max(0.001, (deadline - timezone.now()).total_seconds()))


def run_wanted_pass(trigger: str = "change") -> PassResult:
    """The queued task: lower the flag, then pass; then arm the next deadline. Inline, with no
    periodic pass to do it, each pass also forgets what is no longer kept (two indexed reads when
    there is nothing to forget)."""
    PassTaskFlag.objects.filter(pk=1, raised=True).update(raised=False)
    result = None
    try:
        result = reconcile_pass(trigger=trigger)
        return result
    finally:
        if settings.POOLWEB["PASSES"] == "worker":
            _arm_deadline(result.plan.wake_at if result is not None else None)
        else:
            forget_old()


def reconcile_if_overdue() -> None:
    """Ask for a pass if a lease has run out or an eviction grace is over (one query)."""
    deadline = next_deadline()
    if deadline is not None and deadline <= timezone.now():
        reconcile_soon("overdue")


def next_deadline(wake_at: datetime | None = None) -> datetime | None:
    """When the earliest live lease runs out, eviction grace ends, run ends or is to be warned of
    (R-52); or ``wake_at``,
    the moment the last pass asked to be followed by another (``Plan.wake_at``: protected victims
    becoming victims, R-48), when that comes first."""
    grace = timedelta(seconds=settings.POOLWEB["EVICTION_GRACE_SECONDS"])
    found = RequestRow.objects.filter(state__in=LIVE_STATES).aggregate(
        lease=Min("lease_expires_at"), preempted=Min("preempted_at", filter=Q(state=PREEMPTING)),
        limit=Min("time_limit_at"),  # a run's end, and a grace before, its warning
        warn=Min("time_limit_at", filter=Q(state=ALLOCATED) & ~Q(reason=Reason.TIME_LIMIT_NEAR.value)))
    warn_at = found["warn"] and found["warn"] - grace
    moments = [found["lease"], found["preempted"] and found["preempted"] + grace, found["limit"], wake_at,
               warn_at if warn_at is None or warn_at > timezone.now() else None]  # a run shorter than the grace
    return min((m for m in moments if m is not None), default=None)


def _arm_deadline(wake_at: datetime | None = None) -> None:
    deadline = next_deadline(wake_at)
    if deadline is None:
        Schedule.objects.filter(name=DEADLINE).delete()
        return
    armed = Schedule.objects.filter(name=DEADLINE, repeats=1).values_list("next_run", flat=True)
    if list(armed) != [deadline]:
        _schedule(DEADLINE, func=TASK, args="'deadline'", schedule_type=Schedule.ONCE, next_run=deadline, repeats=1)


def _schedule(name: str, **fields) -> None:
    """Exactly one schedule named ``name``, with ``fields``. ``Schedule.name`` is not unique, so two
    workers arming at once would insert two rows (and every later ``update_or_create`` would fail on
    them): writers take one lock, and any duplicate an older version left is removed."""
    with transaction.atomic():
        sql.lock(sql.SCHEDULES_LOCK)
        kept = Schedule.objects.filter(name=name).order_by("id").values_list("id", flat=True).first()
        if kept is None:
            Schedule.objects.create(name=name, **fields)
            return
        Schedule.objects.filter(name=name).exclude(pk=kept).delete()
        Schedule.objects.filter(pk=kept).update(**fields)


def run_periodic_pass() -> PassResult:
    """Every minute: lease expiry, eviction grace, anything a lost task missed; and forgetting what
    is no longer kept — also when the pass fails, or nothing would ever be forgotten again."""
    try:
        return run_wanted_pass("periodic")
    finally:
        forget_old()


def forget_old() -> None:
    """Events beyond those kept for resuming clients, pass records and django-q2's failed tasks
    after a week, finished requests after ``POOLWEB_REQUESTS_KEPT_DAYS``."""
    now = timezone.now()
    with transaction.atomic():
        events.prune(older_than=now - timedelta(hours=1), keep=settings.POOLWEB["EVENTS_KEPT"])
        PassRecord.objects.filter(started_at__lt=now - timedelta(days=7)).delete()
        Failure.objects.filter(stopped__lt=now - timedelta(days=7)).delete()
        finished = now - timedelta(days=settings.POOLWEB["REQUESTS_KEPT_DAYS"])
        RequestRow.objects.filter(finished_at__lt=finished).delete()


def start_passes() -> None:
    """When the service starts (``serve``): schedule the periodic pass (idempotent), and queue a
    first pass, lowering a flag a killed worker may have left up."""
    _schedule("reconcile", func=PERIODIC_TASK, schedule_type=Schedule.MINUTES, minutes=1, repeats=-1)
    PassTaskFlag.objects.filter(pk=1).update(raised=False)
    reconcile_soon("start")


def _raise_flag() -> bool:
    """True if this call raised it (and must queue the task). Reads first: while the flag is up,
    as it is for every read that finds a deadline passed until the pass runs, nothing is written."""
    if PassTaskFlag.objects.filter(pk=1, raised=True).exists():
        return False
    if PassTaskFlag.objects.filter(pk=1, raised=False).update(raised=True):
        return True
    try:
        with transaction.atomic():
            PassTaskFlag.objects.create(pk=1, raised=True)
        return True
    except IntegrityError:  # the row exists and the flag is up: a queued task will see our change
        return False
