"""What several commands ask of an account: the user a command-line argument names."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def user_named(username: str):
    """The user called ``username``; a ``CommandError`` naming it when there is none."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user
