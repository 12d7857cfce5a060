"""Waking the pass loop (``manage.py reconcile --follow``) the moment something changed.

The loop listens on a Unix datagram socket named after the database it serves (in the data
directory, or the temporary one when that path is too long for a socket). A change that wants a
pass sends one byte after its commit: no query, no broker, no poll. Datagrams on a local socket
are not lost; a full buffer means wake-ups are already waiting, which is as good as delivered.
A send that finds nobody listening (no loop runs on this machine: the tests, a deployment that
runs only ``qcluster``) says so, and the caller queues the django-q2 task instead.

Why not LISTEN/NOTIFY on PostgreSQL: a notification is sent whether or not anyone listens, so
a web process could not tell that it must fall back to the task; the socket says so at once, and
works the same on both databases. Web processes and the loop run on one machine (``serve``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
from pathlib import Path

from django.conf import settings
from django.db import connection

MAX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def socket_path() -> str:
    """Where the loop of this database listens."""
    db = connection.settings_dict
    identity = "|".join(str(db.get(key) or "") for key in ("ENGINE", "NAME", "HOST", "PORT"))
    name = f"passes-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.sock"
    path = Path(settings.DATA_DIR) / name
    return str(path if len(str(path)) <= MAX_PATH else Path(tempfile.gettempdir()) / name)


class Waker:
    """The sending side: one unbound datagram socket per process."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None
        self._pid = 0

    def wake(self) -> bool:
        """Wake the loop; False when no loop listens."""
        if self._socket is None or self._pid != os.getpid():  # a fork must not share it
            self._socket, self._pid = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), os.getpid()
        try:
            self._socket.sendto(b"!", socket.MSG_DONTWAIT, socket_path())
        except BlockingIOError:
            return True  # the loop has wake-ups waiting already
        except OSError:  # no such socket, or nobody bound to it (a loop that died)
            return False
        return True


class Listener:
    """The loop's side: bound to ``socket_path()``; refuses to start beside a live listener."""

    def __init__(self) -> None:
        self.path = socket_path()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if os.path.exists(self.path):
            if Waker().wake():
                raise RuntimeError(f"another pass loop listens on {self.path}")
            os.unlink(self.path)  # left by a loop that died
        self._socket.bind(self.path)
        os.chmod(self.path, 0o600)

    def wait(self, timeout: float | None) -> bool:
        """Until a wake-up comes (True) or ``timeout`` seconds pass (False); takes every
        wake-up already waiting, since one pass answers them all."""
        self._socket.settimeout(timeout)
        try:
            self._socket.recv(64)
        except TimeoutError:
            return False
        self.drain()
        return True

    def drain(self) -> None:
        """Take every wake-up waiting, without waiting."""
        self._socket.setblocking(False)
        try:
            while True:
                self._socket.recv(64)
        except BlockingIOError:
            pass

    def close(self) -> None:
        self._socket.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


WAKER = Waker()
