"""The tests' own machinery for real server processes: the flush between tests survives a
deadlock with a server's transaction (PostgreSQL aborts one side of it)."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections

from tests.poolweb import processes
from tests.poolweb.processes import wait_until

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql", reason="TRUNCATE's locks are PostgreSQL's")]

# Two tables nothing refers to, so TRUNCATE needs no CASCADE; it locks them in this order.
FLUSH = ['TRUNCATE "poolweb_passrecord", "django_session";']


def _server_transaction(holding: threading.Event, flush_waits: threading.Event) -> None:
    """A server's transaction in the order that deadlocks with FLUSH: the second table first,
    then, once the flush holds the first and waits for the second, the first."""
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute('LOCK TABLE "django_session" IN ROW EXCLUSIVE MODE')
            holding.set()
            flush_waits.wait(10)
            cursor.execute('LOCK TABLE "poolweb_passrecord" IN ROW EXCLUSIVE MODE')
            cursor.execute("COMMIT")
    finally:
        other.close()


def _when_the_flush_waits(flush_waits: threading.Event) -> None:
    watching = connections.create_connection("default")
    try:
        with watching.cursor() as cursor:
            def waiting() -> bool:
                cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'django_session'::regclass")
                return cursor.fetchone()[0] > 0

            wait_until(waiting, 10, "the flush to wait for the second table")
    finally:
        watching.close()
        flush_waits.set()


def _interleaved(flush) -> None:
    holding, flush_waits = threading.Event(), threading.Event()
    threads = [threading.Thread(target=_server_transaction, args=[holding, flush_waits]),
               threading.Thread(target=_when_the_flush_waits, args=[flush_waits])]
    for thread in threads:
        thread.start()
    try:
        assert holding.wait(10), "the server's transaction did not start"
        flush(FLUSH)
    finally:
        flush_waits.set()
        for thread in threads:
            thread.join()


def test_the_flush_is_the_side_postgresql_aborts():
    # The flush waits first, so its deadlock check runs first and aborts it: what the retry is for.
    with pytest.raises(OperationalError, match="deadlock detected"):
        _interleaved(connection.ops.execute_sql_flush)


def test_a_flush_that_meets_a_deadlock_is_run_again():
    with processes.flushes_retried():
        _interleaved(connection.ops.execute_sql_flush)
    assert "execute_sql_flush" not in vars(connection.ops)  # the retry ends with the context
