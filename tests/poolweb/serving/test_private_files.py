"""The data directory and the SQLite files hold sessions, password hashes and the secret key: only
their owner may read them (poolweb/private_files.py), whether a process makes them or finds them
left more open by an older install. SQLite's files, whatever DATABASE_URL the suite runs on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db.utils import ConnectionHandler

# Writes (the write lock, the WAL), takes the pass lock, then lists the data directory's modes
# while the connection is still open (SQLite removes its -wal and -shm with the last one).
USE_THE_DATABASE = """
import os
from django.conf import settings
from django.db.utils import ConnectionHandler
from django.db import connection, transaction
from poolweb.sql import pass_lock
with transaction.atomic(), connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS probe (x integer)")
with pass_lock():
    pass
for name in sorted(os.listdir(settings.DATA_DIR)):
    print(name, oct(os.stat(settings.DATA_DIR / name).st_mode & 0o777))
"""
FILES = {"poolweb.sqlite3", "poolweb.sqlite3-wal", "poolweb.sqlite3-shm", "poolweb.sqlite3.write-lock",
         "poolweb.sqlite3.pass-lock", "secret_key"}


def modes_after_a_start(data_dir: Path) -> dict[str, str]:
    """A process of a deployment on SQLite (the usual umask, 022) uses the database; the modes it leaves."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DATABASE_URL", "POOLWEB_SECRET_KEY")}
    environment.update(DJANGO_SETTINGS_MODULE="poolweb.settings", POOLWEB_DATA_DIR=str(data_dir))
    result = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", USE_THE_DATABASE], cwd=settings.BASE_DIR,
                            env=environment, umask=0o022, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return dict(line.split() for line in result.stdout.splitlines()) | {".": oct(data_dir.stat().st_mode & 0o777)}


def test_a_new_data_directory_and_every_file_in_it_are_the_owner_s_only(tmp_path):
    modes = modes_after_a_start(tmp_path / "var")

    assert FILES <= set(modes)
    assert modes == {**{name: "0o600" for name in modes}, ".": "0o700"}


def test_an_install_left_readable_by_everyone_is_tightened_at_start(tmp_path):
    data_dir = tmp_path / "var"
    data_dir.mkdir(mode=0o755)
    for name in FILES:
        (data_dir / name).touch(mode=0o644)  # empty: a new database, an empty WAL, unlocked locks
    (data_dir / "secret_key").write_text("an old key, long enough to be strong: " + "k" * 40)
    for path in (data_dir, *data_dir.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)

    modes = modes_after_a_start(data_dir)

    assert modes == {**{name: "0o600" for name in modes}, ".": "0o700"}


def test_opening_a_connection_leaves_the_locks_of_the_process_s_others_alone(tmp_path, django_db_blocker):
    """Closing any descriptor of a database drops the POSIX locks SQLite holds on it for the whole
    process: the database is made, never opened, by the backend, or another process could write
    beside a transaction of this one."""
    database = {"default": {"ENGINE": "poolweb.sqlite", "NAME": str(tmp_path / "poolweb.sqlite3")}}
    writer, opened = ConnectionHandler(database)["default"], ConnectionHandler(database)["default"]
    with django_db_blocker.unblock(), writer.cursor() as cursor:  # a database of this test's own
        cursor.execute("CREATE TABLE probe (x integer)")
        cursor.execute("BEGIN IMMEDIATE")  # SQLite's write lock, held
        opened.ensure_connection()  # another connection of this process
        other_process = subprocess.run([sys.executable, "-c", OTHER_WRITER, database["default"]["NAME"]],
                                       capture_output=True, text=True, timeout=60, check=False)
        cursor.execute("ROLLBACK")
        writer.close()
        opened.close()

    assert "database is locked" in other_process.stderr, other_process


OTHER_WRITER = """
import sys, sqlite3
sqlite3.connect(sys.argv[1], timeout=0).execute("BEGIN IMMEDIATE")
"""
