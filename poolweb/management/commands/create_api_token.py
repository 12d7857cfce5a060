"""``manage.py create_api_token USERNAME [--name NAME]``: print a new bearer token for an existing user.

The token is printed once, alone on stdout, so a script can capture it
(``TOKEN=$(python manage.py create_api_token bob --name ci)``); only its SHA-256 is stored.
``list_api_tokens`` shows tokens and ``revoke_api_token`` revokes them.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.management.users import command_line, user_named
from poolweb.services.tokens import COMMAND_NAME, MAX_NAME, TooManyTokens, token_issue


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (shown once; only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="an existing user")
        parser.add_argument("--name", default=COMMAND_NAME, help=f"what to call it (default: {COMMAND_NAME})")

    def handle(self, *args, username: str, name: str, **options) -> None:
        user = user_named(username)
        if not name.strip() or len(name) > MAX_NAME or not name.isprintable():
            raise CommandError(f"--name must be 1 to {MAX_NAME} printable characters")
        try:
            with command_line():
                token = token_issue(user=user, name=name, by=None)
        except TooManyTokens as error:
            raise CommandError(f"{username} has {error.cap} API tokens, the most one may have "
                               "(POOLWEB_MAX_TOKENS_PER_USER): revoke one first (revoke_api_token)") from None
        if not user.is_active:
            self.stderr.write(f"warning: {username!r} is inactive; the token works once the account is active")
        self.stdout.write(token)
