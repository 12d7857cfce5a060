"""``manage.py revoke_api_token ID [ID …]`` or ``--user USERNAME``: revoke tokens by id (from
``list_api_tokens``), or all of one user's. They stop working at once; open event streams signed
in with them close at their next check. An unknown id is an error (status 1) and revokes nothing."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from poolweb.management.users import command_line, user_named
from poolweb.services.tokens import TokenNotFound, token_revoke, tokens_revoke_all


class Command(BaseCommand):
    help = "Revoke API tokens by id, or every token of --user USERNAME."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", type=int, metavar="ID", help="token ids (list_api_tokens)")
        parser.add_argument("--user", help="revoke every token of this user instead")

    def handle(self, *args, ids: list[int], user: str | None, **options) -> None:
        with command_line():
            self.revoke(ids, user)

    def revoke(self, ids: list[int], user: str | None) -> None:
        if bool(ids) == bool(user):
            raise CommandError("give token ids or --user USERNAME, not both")
        if user is not None:
            owner = user_named(user)
            self.stdout.write(f"revoked {tokens_revoke_all(owner=owner)} token(s) of {user}")
            return
        try:
            with transaction.atomic():
                for token_id in ids:
                    token_revoke(token_id=token_id)
        except TokenNotFound as error:
            raise CommandError(f"{error}; nothing was revoked") from None
        self.stdout.write(f"revoked {len(ids)} token(s)")
