"""Locks on files beside the SQLite database, waited for with a bound (decision 79).

Poolweb takes two such locks: the pass lock (``sql.pass_lock``: a pass, a provision, the switch)
and the write lock (``poolweb.sqlite.base``: every write transaction). ``flock`` has no timeout,
so a holder that never lets go (a process stopped in a debugger, a bug) would hold every waiter
for ever. Here a thread first queues on a lock of its own process (``threading.Lock``, which has
a timeout), then tries ``flock`` without blocking; only when another process holds the file does
it wait in the kernel, on a helper thread it can stop waiting for: it still wakes the moment the
holder lets go (decision 72), and gives up with ``LockTimeout`` at the bound. A helper whose waiter
gave up closes its descriptor as soon as it gets the lock, so nobody holds it by accident; while a
holder is stuck, each process starts at most one such helper per bound.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from django.db.utils import OperationalError

from poolweb.private_files import open_private


class LockTimeout(OperationalError):
    """A lock was not free within the bound: the caller answers 503 and the client tries again."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"Poolweb is busy: the {name} was not free within {seconds:g} s; try again")
        self.lock_name = name


class FileLock:
    """An exclusive lock on ``path`` for one thread of one process at a time."""

    def __init__(self, path: str, name: str) -> None:
        self.path = path
        self.name = name
        self._threads = threading.Lock()

    def acquire(self, seconds: float) -> int:
        """Wait at most ``seconds`` for the lock; the descriptor that holds it (give it to
        ``release``), or ``LockTimeout``."""
        deadline = time.monotonic() + seconds
        if not self._threads.acquire(timeout=seconds):
            raise LockTimeout(self.name, seconds)
        try:
            descriptor = open_private(self.path)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return descriptor
            except BlockingIOError:
                os.close(descriptor)
            return _Waiter(self.path).wait(deadline - time.monotonic(), self.name, seconds)
        except BaseException:
            self._threads.release()
            raise

    def release(self, descriptor: int) -> None:
        try:
            os.close(descriptor)  # closing lets go of the lock
        finally:
            self._threads.release()


class _Waiter:
    """``flock`` blocking on a helper thread, handed over unless the waiter gave up first."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._handed = threading.Condition()
        self._descriptor: int | None = None
        self._abandoned = False

    def wait(self, remaining: float, name: str, seconds: float) -> int:
        threading.Thread(target=self._block, name=f"poolweb-wait-{name}", daemon=True).start()
        with self._handed:
            if self._handed.wait_for(lambda: self._descriptor is not None, timeout=max(0.0, remaining)):
                return self._descriptor
            self._abandoned = True
        raise LockTimeout(name, seconds)

    def _block(self) -> None:
        descriptor = open_private(self.path)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        with self._handed:
            if self._abandoned:
                os.close(descriptor)
                return
            self._descriptor = descriptor
            self._handed.notify()


_locks: dict[str, FileLock] = {}
_locks_guard = threading.Lock()


def file_lock(path: str, name: str) -> FileLock:
    """The process's one ``FileLock`` for ``path`` (its threads must share it to queue on it)."""
    with _locks_guard:
        if path not in _locks:
            _locks[path] = FileLock(path, name)
        return _locks[path]
