"""Starting real Poolweb processes (a server, the worker, a pass) on the tests' database, by
tests/live_server.py.

The database must be committed for another process to see it: tests that use these take
``transactional_db``. On SQLite the tests' database is a file (settings), handed over as a
``sqlite:////path`` DATABASE_URL, which keeps the same WAL and IMMEDIATE options.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, connection

from tests.live_server import LiveServer, launch, stop as stop_group


def database_url() -> str:
    """The tests' database as a DATABASE_URL."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url(), "POOLWEB_PASSES": "worker", **extra}


def start(*command: str, **extra: str) -> subprocess.Popen:
    """``command`` (arguments after the Python interpreter) in its own process group, its output
    piped: for short and quiet processes (the worker, the pass loop, a pass)."""
    return launch([sys.executable, *command], environment(**extra))


def stop(process: subprocess.Popen, signum: int = signal.SIGTERM, timeout: float = 15) -> str:
    """``signum`` to the leader, then SIGKILL to whatever is left of its groups; its output."""
    stop_group(process, signum, timeout)
    return process.stdout.read().decode(errors="replace") if process.stdout else ""


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(0.05)


DEADLOCK_DETECTED = "40P01"


@contextmanager
def flushes_retried(attempts: int = 5) -> Iterator[None]:
    """While server processes run beside the tests, the flush after a test can meet one of their
    transactions in a deadlock: TRUNCATE locks its tables one by one in its own order, a pass or
    a task locks them in another. PostgreSQL aborts one side; when that is the flush (rolled back
    whole), it is run again rather than failing the test and leaving its rows to the next."""
    operations = connection.ops
    flush = operations.execute_sql_flush
    nested = "execute_sql_flush" in vars(operations)  # in another's: left as that one made it

    def retried(sql_list):
        for attempt in range(1, attempts + 1):
            try:
                return flush(sql_list)
            except OperationalError as error:
                if getattr(error.__cause__, "sqlstate", None) != DEADLOCK_DETECTED or attempt == attempts:
                    raise

    operations.execute_sql_flush = retried
    try:
        yield
    finally:
        if nested:
            operations.execute_sql_flush = flush
        else:
            del operations.execute_sql_flush


@contextmanager
def live_server(data_dir: Path, *, web_only: bool = False, **extra: str) -> Iterator[LiveServer]:
    """A ``LiveServer`` on the tests' database, its data in ``data_dir`` and its output in
    ``data_dir/server.log``; ``extra`` adds to its environment (or names another data directory).
    The tests it outlives flush the database after each, retried as above. It is stopped on
    leaving, before the database is dropped (PostgreSQL cannot drop a database a server is still
    connected to)."""
    server_environment = environment(**{"POOLWEB_DATA_DIR": str(data_dir), "POOLWEB_SECRET_KEY": settings.SECRET_KEY,
                                        **extra})
    with LiveServer(server_environment, data_dir / "server.log", web_only=web_only) as server, flushes_retried():
        yield server
