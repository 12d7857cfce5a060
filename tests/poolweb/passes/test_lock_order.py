"""Locks are taken in one order everywhere — the pass lock, then a write transaction (on SQLite the
write lock), then rows, then the outbox — and waited for with a bound (decision 79): a provision
never holds the write lock while it waits for a pass, the stale-draft check runs under the lock
that keeps the live version put, and a lock not free in time fails the call with a 503."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection, connections

from poolweb import sql
from poolweb.models import ConfigVersion, Draft, Request as RequestRow
from poolweb.services import config as config_services, reconciler
from poolweb.services.draft_base import DraftStale
from poolweb.sqlite.locks import FileLock, LockTimeout
from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db(transaction=True)
BOUND = 20  # seconds: far beyond any healthy wait here; reaching it means something hangs


@pytest.fixture
def passes_by_worker(settings):
    """Changes queue a pass instead of running one: the passes under test are the only ones."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


class Worker(threading.Thread):
    """``action`` in a thread with its own database connection; what it returned or raised."""

    def __init__(self, action: Callable[[], object]) -> None:
        super().__init__(daemon=True)  # a hung one must not hold up the test run's exit
        self.action, self.result, self.error = action, None, None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.action()
        except BaseException as error:  # noqa: BLE001 — the test reads it
            self.error = error
        finally:
            connections.close_all()

    def finished(self, seconds: float = BOUND) -> bool:
        self.join(seconds)
        return not self.is_alive()


@contextmanager
def pass_paused_in_its_plan() -> tuple[threading.Event, threading.Event]:
    """Every pass stops in its plan, holding the pass lock, until ``go`` is set."""
    planning, go, real = threading.Event(), threading.Event(), reconciler.plan

    def paused(snapshot, terms=None):
        planning.set()
        assert go.wait(2 * BOUND), "the test never let the pass go on"
        return real(snapshot, terms)

    with mock.patch.object(reconciler, "plan", paused):
        yield planning, go


def save_draft(user, **changes) -> None:
    config_services.draft_save(document=document(**changes), user=user, base_version=config_services.live_number())


def submit(user) -> int:
    answer = client_for(user).post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def test_a_provision_waiting_for_a_pass_holds_no_write_lock(provisioned, alice, bob, passes_by_worker):
    """The deadlock of SQLite: a provision that took the write lock and then waited for the pass
    lock, while the pass that held it waited for the write lock, and every writer behind both."""
    save_draft(alice, policies=[*document()["policies"], {"name": "ops", "group": "dev"}])
    with pass_paused_in_its_plan() as (planning, go):
        a_pass = Worker(lambda: reconciler.reconcile_pass(trigger="test"))
        assert planning.wait(BOUND)
        provision = Worker(lambda: config_services.draft_provision(user=alice, comment="during a pass"))
        provision.join(0.3)
        assert provision.is_alive()  # waits for the pass lock...
        submission = Worker(lambda: submit(bob))
        assert submission.finished(), "a submission waited behind a provision that waits for a pass"
        assert submission.error is None, submission.error  # ...holding nothing a writer needs
        go.set()
        assert a_pass.finished() and provision.finished(), "the pass and the provision hang"
    assert a_pass.error is None and provision.error is None, (a_pass.error, provision.error)
    assert ConfigVersion.objects.filter(comment="during a pass").exists()


def test_provisions_passes_and_submissions_together_never_hang(provisioned, alice, bob, passes_by_worker):
    failures: list[BaseException] = []

    def repeat(times: int, action: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for n in range(times):
                try:
                    action() if action.__code__.co_argcount == 0 else action(n)
                except BaseException as error:  # noqa: BLE001
                    failures.append(error)
        return run

    def provision(n: int) -> None:
        # Each round changes the capacity: a draft equal to the live version is not provisioned.
        save_draft(alice, pools=[{"name": "h100", "capacity": {"gpu": 9 - n % 2}}, {"name": "a100", "capacity": {"gpu": 4}}])
        config_services.draft_provision(user=alice, comment=f"round {n}")

    def submit_and_cancel() -> None:
        request_id = submit(bob)
        assert client_for(bob).post(f"/api/v1/requests/{request_id}/cancel").status_code == 200

    workers = [Worker(repeat(8, provision)), Worker(repeat(20, lambda: reconciler.reconcile_pass(trigger="test"))),
               Worker(repeat(20, submit_and_cancel)), Worker(repeat(8, lambda: config_services.management_set(
                   enabled=True, user=alice)))]
    assert all(worker.finished(60) for worker in workers), "provisions, passes and submissions hang"
    assert failures == []
    assert ConfigVersion.objects.count() == 1 + 8
    assert RequestRow.objects.filter(state__in=["cancelled", "released"]).count() == 20  # a pass may grant first


def test_the_stale_draft_check_and_the_provision_are_under_one_lock(provisioned, alice):
    """A provision by another path (``config import --provision``) between the draft's staleness
    check and its publish: either the draft is refused as stale, or the other provision comes
    after it — the other version is never silently undone."""
    save_draft(alice, policies=[*document()["policies"], {"name": "from-the-draft", "group": "dev"}])
    imported = document(policies=[*document()["policies"], {"name": "from-the-import", "group": "dev"}])
    real_check, other = config_services.refuse_stale, []

    def check_then_let_the_import_in(draft, *, confirmed):
        real_check(draft, confirmed=confirmed)
        other.append(Worker(lambda: config_services.config_provision_document(document=imported, author=alice)))
        other[0].join(1)  # it commits now unless the lock keeps it out

    with mock.patch.object(config_services, "refuse_stale", check_then_let_the_import_in):
        try:
            config_services.draft_provision(user=alice)
        except DraftStale:
            pass
    assert other[0].finished() and other[0].error is None, other[0].error
    live = [p["name"] for p in ConfigVersion.objects.order_by("-number").first().document["policies"]]
    assert "from-the-import" in live


def test_a_draft_saved_while_it_is_provisioned_is_not_lost(provisioned, alice):
    save_draft(alice, policies=[*document()["policies"], {"name": "first", "group": "dev"}])
    real_validate = config_services.validate_document

    def validate_while_a_save_lands(checked_document):
        saved = Worker(lambda: save_draft(alice, policies=[*document()["policies"], {"name": "second", "group": "dev"}]))
        assert saved.finished() and saved.error is None, saved.error
        return real_validate(checked_document)

    with mock.patch.object(config_services, "validate_document", validate_while_a_save_lands):
        with pytest.raises(config_services.DraftChanged):
            config_services.draft_provision(user=alice)
    assert ConfigVersion.objects.count() == 1
    assert [p["name"] for p in Draft.objects.get().document["policies"]][-1] == "second"


@contextmanager
def pass_lock_held_elsewhere():
    """Another connection holds the pass lock until the block ends."""
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with sql.pass_lock():
            holding.set()
            done.wait(BOUND)

    holder = Worker(hold)
    assert holding.wait(BOUND)
    try:
        yield
    finally:
        done.set()
        assert holder.finished()


@contextmanager
def lock_bound(seconds: float):
    """This connection waits at most ``seconds`` for a lock."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = %s", [f"{int(seconds * 1000)}ms"])
        yield
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        return
    with mock.patch.dict(connection.settings_dict["OPTIONS"], {"timeout": seconds}):
        yield


def test_a_provision_that_cannot_have_the_pass_lock_in_time_answers_503(provisioned, alice):
    save_draft(alice, policies=[*document()["policies"], {"name": "ops", "group": "dev"}])
    with pass_lock_held_elsewhere(), lock_bound(0.3):
        started = time.monotonic()
        answer = client_for(alice).post("/api/v1/config/draft/provision", {"comment": "busy"}, format="json")
        waited = time.monotonic() - started
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "busy" and "try again" in answer.json()["detail"]
    assert answer["Retry-After"]
    assert waited < BOUND
    assert ConfigVersion.objects.count() == 1 and Draft.objects.exists()  # nothing changed


def test_an_import_that_cannot_have_the_pass_lock_in_time_fails_with_one_line(provisioned, tmp_path):
    file = tmp_path / "config.json"
    file.write_text(json.dumps(document(pools=[{"name": "h100", "capacity": {"gpu": 9}},
                                               {"name": "a100", "capacity": {"gpu": 4}}])))
    with pass_lock_held_elsewhere(), lock_bound(0.3):
        with pytest.raises(CommandError, match="busy"):
            call_command("config", "import", str(file), "--provision", "--author", "ci")
    assert ConfigVersion.objects.count() == 1


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's write lock")
def test_a_submission_that_cannot_have_the_write_lock_in_time_answers_503(provisioned, bob):
    holding, done = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        from django.db import transaction
        with transaction.atomic():
            RequestRow.objects.exists()
            holding.set()
            done.wait(BOUND)

    holder = Worker(hold_the_write_lock)
    assert holding.wait(BOUND)
    try:
        with lock_bound(0.3):
            answer = client_for(bob).post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json")
    finally:
        done.set()
    assert holder.finished()
    assert answer.status_code == 503, answer.content
    assert answer.json()["code"] == "busy"
    assert not RequestRow.objects.exists()


@pytest.fixture
def lock_path(tmp_path) -> str:
    return str(tmp_path / "a.lock")


@contextmanager
def held_by_another_process_like(path: str):
    """The lock taken on a descriptor of its own, as another process takes it."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def test_a_file_lock_waiter_wakes_when_the_holder_lets_go(lock_path):
    lock = FileLock(lock_path, "test lock")
    with held_by_another_process_like(lock_path):
        waiter = Worker(lambda: lock.acquire(BOUND))
        waiter.join(0.2)
        assert waiter.is_alive()
    assert waiter.finished(5) and waiter.error is None
    lock.release(waiter.result)


def test_a_file_lock_waiter_gives_up_at_the_bound_and_leaves_the_lock_free(lock_path):
    lock = FileLock(lock_path, "test lock")
    with held_by_another_process_like(lock_path):
        with pytest.raises(LockTimeout, match="test lock was not free within 0.2 s"):
            lock.acquire(0.2)
    # The helper that waited on gets the lock as the holder lets go, and lets go of it at once.
    descriptor = lock.acquire(5)
    lock.release(descriptor)
    assert isinstance(LockTimeout("x", 1), OperationalError)


def test_threads_of_one_process_queue_on_a_file_lock_with_the_bound(lock_path):
    lock = FileLock(lock_path, "test lock")
    descriptor = lock.acquire(1)
    try:
        other = Worker(lambda: lock.acquire(0.2))
        assert other.finished(5)
        assert isinstance(other.error, LockTimeout)
    finally:
        lock.release(descriptor)
