"""Starting real Poolweb processes (worker, web server, a pass) on the tests' database.

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
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import OperationalError, connection

from poolweb.management.commands.serve import web_server_command
from poolweb.ports import free_port, wait_until_listening

ROOT = Path(settings.BASE_DIR)


def database_url() -> str:
    """The tests' database as a DATABASE_URL."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "poolweb.settings", "PYTHONUNBUFFERED": "1",
            "DATABASE_URL": database_url(), "POOLWEB_PASSES": "worker", **extra}


def start(*command: str, **extra: str) -> subprocess.Popen:
    """``command`` (arguments after the Python interpreter) in its own process group."""
    return subprocess.Popen([sys.executable, *command], cwd=ROOT, env=environment(**extra),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            process_group=0)


def stop(process: subprocess.Popen, signum: int = signal.SIGTERM, timeout: float = 15) -> str:
    """``signum`` to the leader (qcluster stops its own pool; signalled under it, the pool can
    leave it waiting on a lock), then SIGKILL to whatever is left of the group; the output."""
    try:
        process.send_signal(signum)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
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
        del operations.execute_sql_flush


@dataclass
class WebServer:
    port: int
    process: subprocess.Popen | None = None
    output: str = ""  # what it printed, once stopped

    def stop(self) -> str:
        """Stop it (once) and return what it printed."""
        if self.process is not None:
            self.output, self.process = stop(self.process), None
        return self.output


@contextmanager
def web_server(data_dir: Path, timeout: float = 30, **extra: str) -> Iterator[WebServer]:
    """One web process serving poolweb.asgi on a free port, as ``serve`` runs it (uvicorn and its
    options); stopped on leaving, before the database is flushed (PostgreSQL cannot drop a
    database a server is still connected to)."""
    server = WebServer(free_port())
    server.process = start(*web_server_command("127.0.0.1", server.port, 1)[1:],
                           POOLWEB_DATA_DIR=str(data_dir), POOLWEB_SECRET_KEY=settings.SECRET_KEY, **extra)
    try:
        wait_until_listening(server.process, "127.0.0.1", server.port, timeout)
        yield server
    finally:
        server.stop()
