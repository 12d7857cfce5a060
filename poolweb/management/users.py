"""What several commands ask of an account: the user a command-line argument names, and who runs
the command (a version's author, the audit's actor when no account acts)."""

from __future__ import annotations

import getpass
import socket
from contextlib import AbstractContextManager

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from poolweb.services.audit import COMMAND_LINE, acting_from

MAX_OPERATOR = 150  # ConfigVersion.author_name, AuditEntry.actor


def os_author() -> str:
    """Who runs the command, as ``user@host``: a version provisioned by a script says from where."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container), no login
        user = "unknown"
    return f"{user}@{socket.gethostname()}"[:MAX_OPERATOR]


def command_line() -> AbstractContextManager[None]:
    """What a command does inside is audited as from ``manage.py``, by its operator when no account
    acts."""
    return acting_from(COMMAND_LINE, os_author())


def user_named(username: str):
    """The user called ``username``; a ``CommandError`` naming it when there is none."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user
