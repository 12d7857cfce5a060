"""The pass loop (``manage.py reconcile --follow``): woken through its socket the moment a change
commits, no broker in between; and what a change does when no loop listens."""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Success

from poolweb import sql
from poolweb.models import PassRecord, Request as RequestRow
from poolweb.services import config as config_services, requests as services, triggers, wakeup
from reconcile import Vector

from tests.poolweb import processes
from tests.poolweb.conftest import document

pytestmark = pytest.mark.django_db(transaction=True)
HALF = services.Submission("dev", "half", Vector.of(gpu=0.5, step_run=1))


@pytest.fixture
def passes_by_worker(settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


def test_a_wake_up_reaches_a_listener_and_says_when_nobody_listens(db):
    assert wakeup.Waker().wake() is False
    listener = wakeup.Listener()
    try:
        assert wakeup.Waker().wake() is True
        assert listener.wait(timeout=1) is True
        assert listener.wait(timeout=0.01) is False  # the wake-up was taken
        with pytest.raises(RuntimeError, match="another pass loop"):
            wakeup.Listener()
    finally:
        listener.close()
    assert wakeup.Waker().wake() is False


def test_a_listener_takes_over_the_socket_a_dead_loop_left(db):
    stale = wakeup.Listener()
    stale._socket.close()  # as a killed loop leaves it: the file, nobody bound
    assert os.path.exists(stale.path) and wakeup.Waker().wake() is False
    listener = wakeup.Listener()
    try:
        assert wakeup.Waker().wake() is True
    finally:
        listener.close()


def test_without_a_loop_a_change_queues_the_workers_task(alice, bob, passes_by_worker):
    config_services.config_provision_document(document=document(), author=alice)
    services.request_submit(user=bob, submission=HALF)
    assert OrmQ.objects.count() == 1


def test_the_loop_grants_what_a_submission_woke_it_for_with_no_task_queued(alice, bob, passes_by_worker):
    config_services.config_provision_document(document=document(), author=alice)
    loop = processes.start("manage.py", "reconcile", "--follow")
    try:
        processes.wait_until(lambda: wakeup.Waker().wake(), 60, "the pass loop to listen")
        queued = OrmQ.objects.count()  # the provision's, queued before the loop listened
        row, _ = services.request_submit(user=bob, submission=HALF)
        processes.wait_until(lambda: RequestRow.objects.get(pk=row.pk).state == "allocated", 30,
                             "the loop to grant it")
        assert OrmQ.objects.count() == queued
    finally:
        print(processes.stop(loop))


def listening() -> bool:
    """Whether a loop is bound to the socket; unlike a wake-up, asking does not make it pass."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(wakeup.socket_path())
        except OSError:
            return False
    return True


def pass_lock_free() -> bool:
    """Whether no process holds the pass lock (sql.pass_lock), asked without waiting for it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [sql.PASS_LOCK])
            if not cursor.fetchone()[0]:
                return False
            cursor.execute("SELECT pg_advisory_unlock(%s)", [sql.PASS_LOCK])
        return True
    with open(f"{connection.settings_dict['NAME']}.pass-lock", "a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def pass_loop_of(serve) -> int | None:
    """The pid of the pass loop ``serve`` runs now."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"--follow" in (entry / "cmdline").read_bytes() \
                    and process_stat(int(entry.name))[1] == serve.pid:
                return int(entry.name)
        except OSError:  # gone meanwhile
            continue
    return None


def process_stat(pid: int) -> tuple[str, int]:
    """(state, parent pid) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def pause_outside_a_pass(pid: int) -> None:
    """SIGSTOP the loop at a moment it holds no pass lock: any pass it makes once continued
    starts after, and reads what was committed meanwhile."""
    while True:
        os.kill(pid, signal.SIGSTOP)
        processes.wait_until(lambda: process_stat(pid)[0] == "T", 10, "the loop to stop")
        if pass_lock_free():
            return
        os.kill(pid, signal.SIGCONT)  # mid-pass: let it finish, and try again
        time.sleep(0.01)


def test_a_loop_killed_mid_pass_is_started_again_by_serve_and_grants_what_it_was_granting(alice, bob, settings,
                                                                                          tmp_path):
    """SIGKILL while the loop holds the pass lock (its write waits for this test's transaction):
    its pass lock goes with it (a flock on SQLite, a session's advisory lock on PostgreSQL), and the
    loop serve starts again grants the request by itself, in its first pass."""
    config_services.config_provision_document(document=document(), author=alice)  # passed here (inline)
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    # Only the loop passes below: the worker's periodic pass is an hour away (serve keeps next_run),
    # and its first pass (serve queues one as it starts) is waited for.
    Schedule.objects.create(name="reconcile", func=triggers.PERIODIC_TASK, schedule_type=Schedule.MINUTES,
                            minutes=1, repeats=-1, next_run=timezone.now() + timedelta(hours=1))
    # The loop listens in its data directory, where this process wakes it (wakeup.socket_path).
    with processes.live_server(tmp_path, POOLWEB_DATA_DIR=str(settings.DATA_DIR)) as serve:
        processes.wait_until(lambda: Success.objects.filter(name="pass:start").exists(), 60, "the worker's pass")
        processes.wait_until(listening, 60, "the pass loop to listen")
        killed = pass_loop_of(serve.process)
        pause_outside_a_pass(killed)
        row, _ = services.request_submit(user=bob, submission=HALF)  # its wake-up waits in the loop's socket

        with transaction.atomic():
            RequestRow.objects.select_for_update().get(pk=row.pk)  # the pass's write waits for this transaction
            os.kill(killed, signal.SIGCONT)
            processes.wait_until(lambda: not pass_lock_free(), 30, "the loop to hold the pass lock, mid-pass")
            os.kill(killed, signal.SIGKILL)
            processes.wait_until(lambda: pass_loop_of(serve.process) not in (killed, None), 30,
                                 "serve to start it again")

        processes.wait_until(lambda: RequestRow.objects.get(pk=row.pk).state == "allocated", 60,
                             "the loop started again to grant it")
        assert list(PassRecord.objects.values_list("trigger", "grants")) == [("start", 1)]  # the new loop's first
        processes.wait_until(pass_lock_free, 10, "the pass lock to be free")
    output = serve.output()
    assert f"The pass loop (pid {killed}) was killed by SIGKILL" in output, output
