"""SQLite's write transactions queue on the lock file (poolweb/sqlite/base.py): a second writer
waits for the first without failing and goes on once it commits or rolls back; readers do not
wait. Two threads, each with its own connection, interleaved by events."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest
from django.db import connection, connections, transaction

from poolweb.models import UnannouncedChange

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's writer lock")]


def lock_file_taken() -> bool:
    """Whether a write transaction holds the lock file beside the database."""
    descriptor = os.open(f"{connection.settings_dict['NAME']}.write-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)


def in_thread(work) -> threading.Thread:
    def run():
        try:
            work()
        finally:
            connections.close_all()  # this thread's connection

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("first_ends", ["commit", "rollback"])
def test_a_second_writer_waits_for_the_first_and_then_writes(first_ends):
    holding, release, order = threading.Event(), threading.Event(), []

    def first():
        try:
            with transaction.atomic():
                UnannouncedChange.objects.create(pool="first", policy="p")
                holding.set()
                release.wait(10)
                order.append("first ends")
                if first_ends == "rollback":
                    raise RuntimeError("rolled back")
        except RuntimeError:
            pass

    def second():
        with transaction.atomic():
            order.append("second begins")
            UnannouncedChange.objects.create(pool="second", policy="p")

    assert not lock_file_taken()
    one = in_thread(first)
    assert holding.wait(10)
    assert lock_file_taken()  # from BEGIN to the end of the transaction
    two = in_thread(second)
    two.join(0.3)
    assert two.is_alive() and order == []  # waiting for the lock, not failed
    assert not UnannouncedChange.objects.exists()  # a reader does not wait (and sees nothing uncommitted)
    release.set()
    one.join(10)
    two.join(10)
    assert order == ["first ends", "second begins"]
    assert not lock_file_taken()  # let go at commit and at rollback
    expected = ["first", "second"] if first_ends == "commit" else ["second"]
    assert list(UnannouncedChange.objects.order_by("id").values_list("pool", flat=True)) == expected
