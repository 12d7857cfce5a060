"""``manage.py grant_submit_for_others USERNAME [--revoke]``: let an account submit requests owned
by other users (``POST /requests`` with ``owner``), as the Slurm bridge's service account does
(docs/slurm.md); ``--list`` names the accounts that may. Decision 131: only such a grant counts,
never staff or superuser. Granted to a person's account rather than a service account
(``manage.py service_account``), it is granted all the same, with a warning (decision 192)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.management.users import command_line, user_named
from poolweb.selectors.service_accounts import is_service_account
from poolweb.services.submit_for_others import NoSuchAccount, submit_for_others_grant, submit_for_others_holders


class Command(BaseCommand):
    help = "Grant USERNAME the permission to submit requests for other users (poolweb.submit_for_others)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", nargs="?", help="the account, e.g. the bridge's service account")
        parser.add_argument("--revoke", action="store_true", help="take the permission away instead")
        parser.add_argument("--list", dest="listing", action="store_true", help="list the accounts that hold it")

    def handle(self, *args, username: str | None, revoke: bool, listing: bool, **options) -> None:
        if listing:
            holders = submit_for_others_holders()
            self.stdout.write("\n".join(holders) if holders else "no account may submit for others")
            return
        if not username:
            raise CommandError("give a USERNAME (or --list)")
        try:
            with command_line():
                changed = submit_for_others_grant(username=username, granted=not revoke)
        except NoSuchAccount as error:
            raise CommandError(str(error)) from None
        verb = "may no longer" if revoke else "may"
        self.stdout.write(f"{username} {verb} submit requests for other users"
                          + ("" if changed else " (so it was already)"))
        if not revoke and not is_service_account(user_named(username)):
            self.stderr.write(f"warning: {username} is not a service account: whoever holds its password or a token "
                              "may now submit as any user. A program should have an account of its own: "
                              f"manage.py service_account create NAME --submit-for-others")
