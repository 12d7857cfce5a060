"""``manage.py list_api_tokens [USERNAME]``: the API tokens (everyone's, or one user's), newest first, one a line,
tab-separated for scripts: id, username, name, created, last used ("never"). Never a secret:
only hashes are stored."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from poolweb.management.users import user_named
from poolweb.services.tokens import token_list


class Command(BaseCommand):
    help = "List API tokens: id, username, name, created, last used (tab-separated)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", help="only this user's tokens")

    def handle(self, *args, username: str | None, **options) -> None:
        owner = None if username is None else user_named(username)
        for row in token_list(owner=owner):
            used = row.last_used_at.isoformat() if row.last_used_at else "never"
            self.stdout.write("\t".join([str(row.pk), row.user.get_username(), row.name, row.created_at.isoformat(),
                                         used]))
