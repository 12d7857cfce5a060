"""``manage.py clear_sign_in_failures USERNAME | --address ADDRESS``: end a sign-in lockout now
(services/signin.py), for a user locked out by failures on their account — theirs, or someone
guessing — or for an address, such as a shared one behind which a script kept sending a stale token."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.services.signin import sign_in_failures_clear


class Command(BaseCommand):
    help = "Forget the failed sign-ins for USERNAME (and/or from --address), ending its lockout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", help="the account, whether or not it exists")
        parser.add_argument("--address", help="a client address, as the warning in the log names it")

    def handle(self, *args, username: str | None, address: str | None, **options) -> None:
        if not username and not address:
            raise CommandError("give a USERNAME, --address ADDRESS, or both")
        cleared = sign_in_failures_clear(username=username, address=address)
        self.stdout.write(f"forgot {cleared} failed sign-in(s); the lockout is over")
