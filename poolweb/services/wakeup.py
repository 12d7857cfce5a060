"""Waking the active pass loop (``manage.py reconcile --follow``) the moment something changed.

The active loop (``services.leadership``) listens on a Unix datagram socket named after the
database it serves (in the data directory, or the temporary one when that path is too long for a
socket). A change that wants a pass sends one byte after its commit: no query, no broker, no
poll. Datagrams on a local socket are not lost; a full buffer means wake-ups are already
waiting, which is as good as delivered.

On PostgreSQL the active loop may run on another host (decision 143): a send that finds no loop
on this host's socket then NOTIFYs the loop's channel, and asks in the same statement whether
any session holds the active loop's lock, since a notification is sent whether or not anyone
listens. One query, only on hosts whose own loop stands by. A send that finds no loop at all (the
tests, a deployment that runs only ``qcluster``) says so, and the caller queues the django-q2
task instead.
"""

from __future__ import annotations

import hashlib
import os
import select
import socket
import tempfile
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection

from poolweb import sql
from poolweb.services.leadership import CHANNEL, Leadership, LeadershipLost, PostgresLeadership

MAX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
# NOTIFY, and whether a session of this database holds the active loop's lock (an advisory lock
# on a bigint shows as classid: its high half, objid: its low half, objsubid 1).
NOTIFY_ACTIVE_LOOP = (
    "SELECT pg_notify(%s, ''), EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = %s::oid AND objid = %s::oid AND objsubid = 1)")


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
        """Wake the active loop; False when no loop listens."""
        if self._wake_here():
            return True
        return connection.vendor == "postgresql" and _notify_active_loop()

    def _wake_here(self) -> bool:
        """Wake the loop on this host's socket; False when it is not active here."""
        if self._socket is None or self._pid != os.getpid():  # a fork must not share it
            self._socket, self._pid = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM), os.getpid()
        try:
            self._socket.sendto(b"!", socket.MSG_DONTWAIT, socket_path())
        except BlockingIOError:
            return True  # the loop has wake-ups waiting already
        except OSError:  # no such socket, or nobody bound to it (a loop that died)
            return False
        return True


def _notify_active_loop() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(NOTIFY_ACTIVE_LOOP, [CHANNEL, sql.LEADER_LOCK >> 32, sql.LEADER_LOCK & 0xFFFF_FFFF])
        return cursor.fetchone()[1]


class Listener:
    """The active loop's side: bound to ``socket_path()``, and on PostgreSQL listening on its
    leadership's connection too; refuses to start beside a live listener."""

    def __init__(self, leader: Leadership | None = None) -> None:
        self._postgres = leader.connection if isinstance(leader, PostgresLeadership) else None
        self.path = socket_path()
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if os.path.exists(self.path):
            if Waker()._wake_here():  # a loop of a version before decision 143, in an upgrade
                raise RuntimeError(f"another pass loop listens on {self.path}")
            os.unlink(self.path)  # left by a loop that died
        self._socket.bind(self.path)
        os.chmod(self.path, 0o600)

    def wait(self, timeout: float | None) -> bool:
        """Until a wake-up comes (True) or ``timeout`` seconds pass (False); takes every
        wake-up already waiting, since one pass answers them all."""
        try:
            sources = [self._socket] if self._postgres is None else [self._socket, self._postgres.fileno()]
        except psycopg.Error as error:
            raise LeadershipLost(str(error)) from error
        ready, _, _ = select.select(sources, [], [], timeout)
        if not ready:
            return False
        self.drain()
        return True

    def drain(self) -> None:
        """Take every wake-up waiting, without waiting. ``LeadershipLost`` when the connection
        that holds the active loop's lock broke."""
        self._socket.setblocking(False)
        try:
            while True:
                self._socket.recv(64)
        except BlockingIOError:
            pass
        if self._postgres is not None:
            try:
                while list(self._postgres.notifies(timeout=0)):
                    pass
            except psycopg.Error as error:
                raise LeadershipLost(str(error)) from error

    def close(self) -> None:
        self._socket.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


WAKER = Waker()
