"""``manage.py create_api_token USERNAME``: print a new bearer token for an existing user.

The token is printed once, alone on stdout, so a script can capture it
(``TOKEN=$(python manage.py create_api_token bob)``); only its SHA-256 is stored.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.services.tokens import token_issue


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (shown once; only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="an existing user")

    def handle(self, *args, username: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        token = token_issue(user=user)
        if not user.is_active:
            self.stderr.write(f"warning: {username!r} is inactive; the token works once the account is active")
        self.stdout.write(token)
