"""Django's SQLite backend whose write transactions queue on a lock of the kernel's (decision 72).

SQLite lets one connection write at a time. Every transaction here is ``BEGIN IMMEDIATE``, so a
second writer waits for the first — but SQLite's own wait is a busy handler that sleeps and
retries (1, 2, 5, 10 … 100 ms), so a writer that finds the lock taken sleeps milliseconds after it
was freed: with web processes, the pass loop and the worker all writing, those naps, not the
writes, set the pace. Here a write transaction first takes ``flock`` on a file beside the database
(each holder opens the file itself, so threads of one process exclude each other too, and a
process that dies lets go), and only then ``BEGIN IMMEDIATE``: a waiter sleeps in the kernel and
wakes as the holder commits, and SQLite's lock is free when it asks. Readers take nothing (WAL).
A statement outside a transaction still waits in SQLite's busy handler, as before. Both waits
are bounded by the connection's ``timeout`` option (``POOLWEB_LOCK_WAIT_SECONDS``): past it the
call fails with ``LockTimeout`` (503) instead of waiting for ever (decision 79).

The database and the files beside it are its owner's only (poolweb/private_files.py).
"""

from __future__ import annotations

import os

from django.db.backends.sqlite3 import base

from poolweb.django_internals import SQLiteTransactionHooks
from poolweb.private_files import open_private, tighten
from poolweb.sqlite.locks import FileLock, file_lock

WRITE_LOCK_FILE = ".write-lock"  # held while a transaction writes (below)
PASS_LOCK_FILE = ".pass-lock"  # whoever runs a pass (poolweb.sql.pass_lock)


class DatabaseWrapper(SQLiteTransactionHooks):
    _writer: int | None = None  # the lock file's descriptor while a write transaction is open

    def get_new_connection(self, conn_params):
        if not self.is_in_memory_db():
            self._keep_private(str(self.settings_dict["NAME"]))
        return super().get_new_connection(conn_params)

    def _keep_private(self, name: str) -> None:
        """The database made 0600 before SQLite opens it (SQLite makes its -wal and -shm with the
        database's mode); the files an older install left more open, tightened."""
        for suffix in ("", "-wal", "-shm", WRITE_LOCK_FILE, PASS_LOCK_FILE):
            tighten(name + suffix)
        try:
            # O_EXCL: a database that exists is never opened here, since closing any descriptor of
            # it would drop the locks SQLite holds on it for this process's other connections.
            os.close(open_private(name, os.O_RDONLY | os.O_EXCL))
        except FileExistsError:
            pass
        except OSError as error:  # as SQLite says it: a database that cannot be opened is down
            raise base.Database.OperationalError(f"unable to open database file {name}: {error.strerror}") from None

    def transaction_starting(self) -> None:
        self._writer = self._write_lock().acquire(self.settings_dict["OPTIONS"].get("timeout", 5))

    def transaction_ended(self) -> None:
        self._release_writer()

    def _release_writer(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            self._write_lock().release(writer)

    def _write_lock(self) -> FileLock:
        return file_lock(f"{self.settings_dict['NAME']}{WRITE_LOCK_FILE}", "write lock")
