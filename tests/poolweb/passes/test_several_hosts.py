"""Pass loops on several hosts (decision 143): one active, the others standing by; a standby takes
over when the active one's host dies; a change on a host whose own loop stands by wakes the
active loop on another. A "host" here is a process group on the tests' database; on PostgreSQL
each has a data directory (so a wake-up socket) of its own, and this test's process is a web
process on a host of its own. SQLite runs on one machine: there the loops share this process's
data directory."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Success
from django_q.tasks import async_task

from poolweb import sql
from poolweb.models import PassRecord, PassTaskFlag, Request as RequestRow
from poolweb.services import config as config_services, requests as services, wakeup
from poolweb.services.tokens import token_issue
from reconcile import Vector

from tests.live_server import LiveServer, launch, stop
from tests.poolweb import processes
from tests.poolweb.conftest import document

pytestmark = pytest.mark.django_db(transaction=True)
HALF = services.Submission("dev", "half", Vector.of(gpu=0.5, step_run=1))
postgresql_only = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="one host on SQLite")


@pytest.fixture(autouse=True)
def passes_by_worker(settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


@pytest.fixture
def provisioned_here(alice):
    config_services.config_provision_document(document=document(), author=alice)


class Host:
    """A pass loop (``manage.py reconcile --follow``) with a data directory of its own."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        own = connection.vendor == "postgresql"
        self.data = directory if own else settings.DATA_DIR
        self.log = directory / "loop.log"
        self.process = launch([sys.executable, "manage.py", "reconcile", "--follow"],
                              processes.environment(POOLWEB_DATA_DIR=str(self.data)), self.log)

    def active(self) -> bool:
        """Whether it says it is active and its loop listens on its socket (only the active binds it)."""
        said = self.output()
        if said.count("this pass loop is active") <= said.count("no longer the active one"):
            return False
        with override_settings(DATA_DIR=self.data):
            return wakeup.Waker()._wake_here()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """As its host dies: SIGKILL to the whole group."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@contextmanager
def hosts(tmp_path: Path, *names: str) -> Iterator[list[Host]]:
    started: list[Host] = []
    try:
        for name in names:
            started.append(Host(tmp_path / name))
            if len(started) == 1:
                processes.wait_until(started[0].active, 60, f"the loop on {name} to be active")
        yield started
    finally:
        for host in started:
            if host.process.poll() is None:
                stop(host.process)


def granted(row: RequestRow) -> bool:
    return RequestRow.objects.get(pk=row.pk).state == "allocated"


def test_a_standby_takes_over_when_the_active_loops_host_is_killed(provisioned_here, bob, tmp_path):
    with hosts(tmp_path, "a", "b") as (a, b):
        processes.wait_until(lambda: "standing by" in b.output(), 60, "the loop on b to stand by")
        assert a.active() and not b.active()

        killed = time.monotonic()
        a.kill()
        processes.wait_until(b.active, 30, "the loop on b to take over")
        print(f"taken over {time.monotonic() - killed:.2f} s after the kill")

        row, _ = services.request_submit(user=bob, submission=HALF)
        processes.wait_until(lambda: granted(row), 30, "the loop on b to grant it")
    assert "this pass loop is active now: the one before stopped" in b.output()


@postgresql_only
def test_a_change_on_a_host_whose_loop_stands_by_wakes_the_active_loop_elsewhere(provisioned_here, bob, tmp_path):
    """This test's process is a web process of a third host: no loop listens on its socket."""
    with hosts(tmp_path, "a", "b"):
        assert not wakeup.Waker()._wake_here()
        first, _ = services.request_submit(user=bob, submission=HALF)
        processes.wait_until(lambda: granted(first), 30, "the loop on a to grant the first")  # after its start
        queued, passes = OrmQ.objects.count(), PassRecord.objects.count()

        row, _ = services.request_submit(user=bob, submission=HALF)

        processes.wait_until(lambda: granted(row), 30, "the loop on a to grant it")
        woken = PassRecord.objects.order_by("id")[passes:]
        assert [record.trigger for record in woken if record.grants] == ["change"]
        assert OrmQ.objects.count() == queued  # no worker's task: the loop was found


@postgresql_only
def test_without_an_active_loop_anywhere_a_change_queues_the_workers_task(provisioned_here, bob):
    assert wakeup.Waker().wake() is False  # NOTIFY sent, but no session holds the loop's lock
    OrmQ.objects.all().delete()  # the provision's task, and its flag (decision 13's coalescing)
    PassTaskFlag.objects.update(raised=False)
    services.request_submit(user=bob, submission=HALF)
    assert OrmQ.objects.count() == 1


@postgresql_only
def test_a_loop_whose_connection_the_server_dropped_stands_by_and_becomes_active_again(provisioned_here, bob,
                                                                                      tmp_path):
    with hosts(tmp_path, "a") as (a,):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
                           "classid = %s::oid AND objid = %s::oid AND objsubid = 1",
                           [sql.LEADER_LOCK >> 32, sql.LEADER_LOCK & 0xFFFF_FFFF])
        processes.wait_until(lambda: "no longer the active one" in a.output(), 30, "the loop to notice")
        processes.wait_until(a.active, 30, "the loop to be active again")
        row, _ = services.request_submit(user=bob, submission=HALF)
        processes.wait_until(lambda: granted(row), 30, "the loop to grant it")


def test_kill_of_the_active_host_under_load_loses_and_doubles_nothing(provisioned_here, bob, tmp_path):
    """Submissions and releases keep coming while the active loop's host is killed mid-run; once
    the standby has taken over, every request was decided once and the stored state holds every
    invariant (usage equals the recount: ``check_state``)."""
    submitted: list[int] = []
    stop_load = threading.Event()

    def load() -> None:
        try:
            while not stop_load.is_set():
                row, _ = services.request_submit(user=bob, submission=HALF)
                submitted.append(row.pk)
                for pk in RequestRow.objects.filter(state="allocated").values_list("pk", flat=True)[:1]:
                    services.request_release(user=bob, request_id=pk)
                time.sleep(0.02)
        finally:
            connection.close()

    with hosts(tmp_path, "a", "b") as (a, b):
        processes.wait_until(lambda: "standing by" in b.output(), 60, "the loop on b to stand by")
        worker = threading.Thread(target=load)
        worker.start()
        try:
            time.sleep(1.5)
            a.kill()
            processes.wait_until(b.active, 30, "the loop on b to take over")
            time.sleep(1.5)
        finally:
            stop_load.set()
            worker.join()
        processes.wait_until(lambda: not RequestRow.objects.filter(pk__in=submitted, state="pending",
                                                                   queue_pool__isnull=True).exists(),
                             30, "the loop on b to have seen every submission")
    call_command("check_state")  # raises on a violation
    assert len(submitted) == len(set(submitted)) > 10


@postgresql_only
def test_a_rolling_restart_of_every_web_host_under_load_fails_no_keyed_submission(provisioned_here, bob, tmp_path):
    """Two web hosts and a loop; a client submits with an ``Idempotency-Key`` and, as a proxy does,
    sends a call that found a host down (or answered 503) to the other host. Each host is
    restarted in turn meanwhile. Every key ends with exactly one request."""
    token = token_issue(user=bob)
    webs = []
    for name in ("web-a", "web-b"):
        (tmp_path / name).mkdir()
        webs.append(LiveServer(processes.environment(POOLWEB_DATA_DIR=str(tmp_path / name)),
                               tmp_path / name / "server.log", web_only=True).start())
    keys: list[str] = []
    failures: list[str] = []
    retried: list[str] = []
    done = threading.Event()

    def submit(key: str) -> None:
        body = json.dumps({"policy": "dev", "profile": "half"}).encode()
        for attempt in range(40):
            web = webs[attempt % 2]
            request = urllib.request.Request(f"{web.url}/api/v1/requests", data=body, method="POST", headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Idempotency-Key": key})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    if answer.status in (200, 201):
                        return
            except urllib.error.HTTPError as error:
                if error.code != 503:
                    failures.append(f"{key}: {error.code} {error.read()[:200]!r}")
                    return
                retried.append(key)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                retried.append(key)  # this host is down: the next attempt goes to the other
            time.sleep(0.05)
        failures.append(f"{key}: no host answered")

    def load() -> None:
        n = 0
        while not done.is_set():
            keys.append(key := f"job-{n}")
            submit(key)
            n += 1

    with hosts(tmp_path, "loop"):
        client = threading.Thread(target=load)
        client.start()
        try:
            for web in webs:
                time.sleep(1)
                web.stop()
                web.start()
            time.sleep(1)
        finally:
            done.set()
            client.join()
            for web in webs:
                web.stop()
    assert failures == [] and retried  # some calls did find a host down
    made = list(RequestRow.objects.filter(owner=bob).values_list("idempotency_key", flat=True))
    assert sorted(made) == sorted(keys) and len(keys) > 20


@postgresql_only
def test_workers_on_two_hosts_run_each_task_and_each_due_schedule_once(tmp_path):
    """django-q2's queue in the database: a task is claimed by one worker, and a due schedule is
    taken under a row lock, so two hosts' workers do each once (docs/deploy.md)."""
    for n in range(20):
        async_task("math.floor", n + 0.5, task_name=f"task-{n}")
    Schedule.objects.create(name="every-minute", func="math.floor", args="1.5", schedule_type=Schedule.MINUTES,
                            minutes=1, repeats=-1, next_run=timezone.now())
    workers = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            environment = processes.environment(POOLWEB_DATA_DIR=str(tmp_path / name),
                                                POOLWEB_SECRET_KEY=settings.SECRET_KEY)  # every host's (deploy.md)
            workers.append(launch([sys.executable, "manage.py", "qcluster"], environment, tmp_path / name / "log"))
        processes.wait_until(lambda: Success.objects.filter(group="every-minute").exists(), 90,
                             "a worker's scheduler to run the schedule")  # each looks every 30 s
        processes.wait_until(lambda: Success.objects.filter(name__startswith="task-").count() == 20, 30,
                             "the workers to run the tasks")
        time.sleep(5)  # the other scheduler has looked too by now
    finally:
        for worker in workers:
            stop(worker)
    assert Success.objects.filter(group="every-minute").count() == 1
    assert sorted(Success.objects.filter(name__startswith="task-").values_list("name", flat=True)) == sorted(
        f"task-{n}" for n in range(20))
