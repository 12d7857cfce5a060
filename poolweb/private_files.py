"""The data directory and the SQLite files hold sessions, password hashes and the secret key, from
which an admin's session can be forged: only their owner may read them. A file is made with 0600
(a directory 0700) rather than chmod-ed after, when another user could have opened it already;
one an older install left more open is tightened when a process starts."""

from __future__ import annotations

import os
from pathlib import Path

DIRECTORY_MODE = 0o700
FILE_MODE = 0o600
OTHERS = 0o077  # the group's and everyone's bits


def tighten(path: Path | str, mode: int = FILE_MODE) -> None:
    """``path`` to ``mode`` when its group or others may use it; nothing when it is not there."""
    try:
        if os.stat(path).st_mode & OTHERS:
            os.chmod(path, mode)
    except FileNotFoundError:
        pass


def private_directory(path: Path) -> None:
    path.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    tighten(path, DIRECTORY_MODE)


def open_private(path: Path | str, flags: int = os.O_RDWR) -> int:
    """A descriptor of ``path``, made 0600 if it is not there yet."""
    return os.open(path, flags | os.O_CREAT, FILE_MODE)
