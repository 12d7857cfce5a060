"""Which pass loop is active, when one runs on each of several hosts (issue 24, decision 143).

Every host runs ``serve``, so every host runs a pass loop; one is active, the others stand by.
Being active is holding a lock that goes with the process, or with the host:

- PostgreSQL: a session advisory lock (``sql.LEADER_LOCK``) on a connection of the loop's own,
  not Django's (which a failed pass closes and opens again). A process that dies closes its
  connection, and the server lets go at once; a host that dies or drops off the network closes
  nothing, so the connection asks the server to probe it (TCP keepalives, a user timeout):
  the server lets go of a silent host's lock within ``DEAD_PEER_SECONDS``. The same connection
  LISTENs for wake-ups from other hosts (``services.wakeup``); a loop whose connection broke has
  lost the lock, and stands by again.
- SQLite (one host): ``flock`` on a file beside the database, which a dead process lets go.

A standby asks every ``STANDBY_SECONDS``. Two loops never pass at once whatever this says: a pass
holds the pass lock (``sql.pass_lock``) and commits only decisions still true (decisions 16 and 24), so a
loop that has not yet noticed it lost the lock can at worst make one more pass, after its
successor's or before it, never beside it.
"""

from __future__ import annotations

import fcntl
import os

import psycopg
from django.db import connection

from poolweb import sql
from poolweb.private_files import open_private

STANDBY_SECONDS = 0.5
DEAD_PEER_SECONDS = 6  # keepalive idle 3 s, then 3 probes 1 s apart
CHANNEL = "poolweb_passes"  # NOTIFY channel of wake-ups (services.wakeup)
LOOP_LOCK_FILE = ".pass-loop"


class LeadershipLost(Exception):
    """The active loop's hold ended (its connection to PostgreSQL broke)."""


class PostgresLeadership:
    """The session advisory lock, on a connection that also listens for wake-ups."""

    def __init__(self) -> None:
        self.connection: psycopg.Connection | None = None

    def try_take(self) -> bool:
        """Take the lock if it is free; True while this loop holds it."""
        try:
            if self.connection is None or self.connection.closed:
                self.connection = _connect()
            taken = self.connection.execute("SELECT pg_try_advisory_lock(%s)", [sql.LEADER_LOCK]).fetchone()[0]
            if taken:
                # After the lock: what committed before this LISTEN, the first pass reads anyway.
                self.connection.execute(f"LISTEN {CHANNEL}")
            return taken
        except psycopg.OperationalError:
            self.release()  # the server is down or restarting: ask again later
            return False

    def release(self) -> None:
        if self.connection is not None:
            self.connection.close()  # the server lets go of the lock and the LISTEN with the session
            self.connection = None


class FileLeadership:
    """``flock`` on a file beside the SQLite database."""

    def __init__(self) -> None:
        self.path = f"{connection.settings_dict['NAME']}{LOOP_LOCK_FILE}"
        self.descriptor: int | None = None

    def try_take(self) -> bool:
        if self.descriptor is not None:
            return True
        descriptor = open_private(self.path)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        self.descriptor = descriptor
        return True

    def release(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


Leadership = PostgresLeadership | FileLeadership


def leadership() -> Leadership:
    return PostgresLeadership() if connection.vendor == "postgresql" else FileLeadership()


def _connect() -> psycopg.Connection:
    """A connection of its own, with Django's settings, that a server notices dying within
    ``DEAD_PEER_SECONDS`` and that notices a dead server as soon."""
    params = {key: value for key, value in connection.get_connection_params().items()
              if key not in ("cursor_factory", "context", "prepare_threshold")}
    probes = {"keepalives": 1, "keepalives_idle": 3, "keepalives_interval": 1, "keepalives_count": 3,
              "tcp_user_timeout": DEAD_PEER_SECONDS * 1000, "connect_timeout": 5}
    link = psycopg.connect(**params, **probes, autocommit=True)
    for setting, value in (("tcp_keepalives_idle", 3), ("tcp_keepalives_interval", 1), ("tcp_keepalives_count", 3),
                           ("tcp_user_timeout", DEAD_PEER_SECONDS * 1000)):
        link.execute(f"SET {setting} = {value}")
    return link
