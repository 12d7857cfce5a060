"""``manage.py service_account``: accounts for programs, not people (decision 190; docs/sign-in.md).

- ``create NAME [--description TEXT] [--admin] [--submit-for-others]``: the account, with no
  password, the rights asked for, and a first token printed once, alone on stdout, so a script can
  capture it (``TOKEN=$(python manage.py service_account create slurm-bridge --admin
  --submit-for-others)``);
- ``list [--json]``: each account, its rights, its tokens (prefix, last use) and whether active;
- ``token NAME [--name TOKEN_NAME]``: another token, printed once;
- ``revoke NAME``: the account deactivated and its tokens deleted, at once.

Each is audited as done from ``manage.py`` by the operator's ``user@host``.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.management.users import command_line
from poolweb.selectors.service_accounts import ServiceAccountShown, service_account_list
from poolweb.services.service_accounts import (
    FIRST_TOKEN, NotAServiceAccount, ServiceAccountInvalid, ServiceAccountRevoked, service_account_create,
    service_account_revoke, service_account_token,
)
from poolweb.services.payloads import api_time
from poolweb.services.tokens import MAX_NAME, TooManyTokens

TOKEN_NAME = FIRST_TOKEN  # a token made by ``token`` without --name: the prefix tells them apart


class Command(BaseCommand):
    help = "Create, list, issue tokens to and revoke service accounts (accounts of programs, not people)."

    def add_arguments(self, parser: CommandParser) -> None:
        acts = parser.add_subparsers(dest="act", required=True, metavar="{create,list,token,revoke}")
        create = acts.add_parser("create", help="a new service account and its first token (printed once)")
        create.add_argument("name", help="its username, e.g. slurm-bridge")
        create.add_argument("--description", default="", help="what it is for")
        create.add_argument("--admin", action="store_true",
                            help="a Poolweb administrator for the API: reads every request and the configuration")
        create.add_argument("--submit-for-others", action="store_true",
                            help="may submit requests owned by other users (poolweb.submit_for_others)")
        listing = acts.add_parser("list", help="every service account, its rights and tokens")
        listing.add_argument("--json", dest="as_json", action="store_true", help="as JSON, for scripts")
        token = acts.add_parser("token", help="another token for a service account (printed once)")
        token.add_argument("name")
        token.add_argument("--name", dest="token_name", default=TOKEN_NAME,
                           help=f"what to call the token (default: {TOKEN_NAME})")
        revoke = acts.add_parser("revoke", help="deactivate a service account and delete its tokens")
        revoke.add_argument("name")

    def handle(self, *args, act: str, **options) -> None:
        try:
            with command_line():
                getattr(self, act)(**options)
        except (ServiceAccountInvalid, NotAServiceAccount, ServiceAccountRevoked) as error:
            raise CommandError(str(error)) from None
        except TooManyTokens as error:
            raise CommandError(f"{options['name']} has {error.cap} API tokens, the most one may have "
                               "(POOLWEB_MAX_TOKENS_PER_USER): revoke one first (revoke_api_token)") from None

    def create(self, *, name: str, description: str, admin: bool, submit_for_others: bool, **options) -> None:
        _row, secret = service_account_create(name=name, description=description, admin=admin,
                                              submit_for_others=submit_for_others)
        self.stderr.write(f"created the service account {name}; its token, shown this once:")
        self.stdout.write(secret)

    def token(self, *, name: str, token_name: str, **options) -> None:
        if not token_name.strip() or len(token_name) > MAX_NAME or not token_name.isprintable():
            raise CommandError(f"--name must be 1 to {MAX_NAME} printable characters")
        self.stdout.write(service_account_token(name=name, token_name=token_name))

    def revoke(self, *, name: str, **options) -> None:
        deleted = service_account_revoke(name=name)
        if deleted is None:
            self.stdout.write(f"{name} was revoked already")
        else:
            self.stdout.write(f"revoked the service account {name} and its {deleted} token(s)")

    def list(self, *, as_json: bool, **options) -> None:
        accounts = service_account_list()
        if as_json:
            self.stdout.write(json.dumps([service_account_data(shown) for shown in accounts], indent=2))
            return
        if not accounts:
            self.stdout.write("no service accounts")
        for shown in accounts:
            self.stdout.write(_text(shown))


def _text(shown: ServiceAccountShown) -> str:
    state = "active" if shown.active else "revoked"
    lines = [f"{shown.name} ({state}){' — ' + shown.description if shown.description else ''}",
             f"  rights: {', '.join(shown.rights) or 'none'}",
             f"  created {shown.created_at.isoformat(timespec='seconds')} by {shown.created_by}"]
    if not shown.tokens:
        lines.append("  tokens: none")
    for token in shown.tokens:
        used = token.last_used_at.isoformat(timespec="seconds") if token.last_used_at else "never"
        lines.append(f"  token {token.id} {token.prefix}… {token.name!r}, last used {used}")
    return "\n".join(lines)


def service_account_data(shown: ServiceAccountShown) -> dict:
    """One account as ``service_account list --json`` writes it (times as the API writes them)."""
    data = asdict(shown)
    data.update(created_at=api_time(shown.created_at), revoked_at=api_time(shown.revoked_at),
                rights=list(shown.rights))
    data["tokens"] = [{**token, "created_at": api_time(token["created_at"]),
                       "last_used_at": api_time(token["last_used_at"])} for token in data["tokens"]]
    return data
