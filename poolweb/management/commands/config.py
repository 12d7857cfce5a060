"""``manage.py config export [FILE]`` and ``manage.py config import FILE [--provision]``.

The document is the one of docs/api.md §1, as YAML when the file name ends in ``.yaml``/``.yml`` and
as JSON otherwise. Export writes the live configuration (stdout without FILE). Import saves the
draft, or with ``--provision`` publishes the file as the next version; refused documents print
their errors one per line (``path: code: message``) and exit with status 1.

A provisioned version records who made it: ``--user`` (an account), or ``--author`` (any name),
or by default the operating-system user and host (``deploy@ci-runner``). A file that is the live
configuration already provisions nothing: "no change", status 0, so a deployment can apply its
file every time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import OperationalError

from poolweb.json_input import read_json
from poolweb.management.users import command_line, os_author, user_named
from poolweb.sql import busy_message
from poolweb.selectors.versions import config_live_document
from poolweb.services import config as services
from reconcile.document import Issue

MAX_FILE = 50 * 1024 * 1024  # a configuration file is kilobytes; this only stops a mistake early


def is_yaml(name: str) -> bool:
    return name.lower().endswith((".yaml", ".yml"))


def dump(document: dict, *, as_yaml: bool) -> str:
    if as_yaml:
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def load(text: str, *, as_yaml: bool) -> Any:
    """The file's value; ``ValueError`` with a short reason when it does not parse."""
    if not as_yaml:
        return read_json(text)  # JSONRefused is a ValueError that names the field
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(str(error).splitlines()[0] if str(error) else type(error).__name__) from None
    except RecursionError:
        raise ValueError("the file nests too deeply") from None


class Command(BaseCommand):
    help = "Export the live configuration, or import a configuration file into the draft (or provision it)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{export,import}")
        export = actions.add_parser("export", help="write the live configuration (YAML for .yaml/.yml, else JSON)")
        export.add_argument("file", nargs="?", help="where to write it; stdout when left out (JSON)")
        load_ = actions.add_parser("import", help="read a configuration file into the draft")
        load_.add_argument("file", help="a YAML (.yaml/.yml) or JSON file")
        load_.add_argument("--provision", action="store_true", help="publish it as the next version instead")
        load_.add_argument("--comment", default="", help="the version's comment (with --provision)")
        authors = load_.add_mutually_exclusive_group()
        authors.add_argument("--user", help="the author: an existing username")
        authors.add_argument("--author", help="the author's name, when it is no account (default: your user@host)")

    def handle(self, *args: Any, **options: Any) -> None:
        with command_line():
            self.act(options)

    def act(self, options: dict[str, Any]) -> None:
        if options["action"] == "export":
            self.export(options["file"])
        else:
            self.import_(options["file"], provision=options["provision"], comment=options["comment"],
                         username=options["user"], author_name=options["author"])

    def export(self, file: str | None) -> None:
        document = config_live_document()
        if file is None:
            self.stdout.write(dump(document, as_yaml=False), ending="")
            return
        try:
            Path(file).write_text(dump(document, as_yaml=is_yaml(file)), encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot write {file}: {error.strerror or error}") from None
        self.stdout.write(f"exported version {document['version']} to {file}")

    def import_(self, file: str, *, provision: bool, comment: str, username: str | None,
                author_name: str | None) -> None:
        author = self.author(username)
        document = self.read(file)
        try:
            if not provision:
                services.draft_save(document=document, user=author)
                self.report_draft(file)
                return
            version = services.config_provision_document(
                document=document, author=author, author_name=author_name or ("" if author else os_author()),
                comment=comment, if_changed=True)
        except services.ConfigInvalid as refused:
            self.issues(refused.errors)
            raise CommandError(f"{file}: refused with {len(refused.errors)} error(s)") from None
        except OperationalError as error:
            raise CommandError(busy_message(error) or f"the database failed: {error}") from None
        if version is None:
            live = config_live_document()["version"]
            self.stdout.write(f"no change: {file} is the live configuration (version {live}); nothing provisioned")
            return
        self.stdout.write(self.style.SUCCESS(f"provisioned version {version.number} from {file}"))

    def report_draft(self, file: str) -> None:
        """A saved draft may still be invalid: say so, with the errors, without failing."""
        checked = services.draft_validate()
        if checked.valid:
            self.stdout.write(self.style.SUCCESS(f"saved {file} as the draft; it is valid"))
            return
        self.issues(checked.errors)
        self.stdout.write(f"saved {file} as the draft; provisioning it is refused until its "
                          f"{len(checked.errors)} error(s) are fixed")

    def issues(self, errors: list[Issue]) -> None:
        for error in errors:
            self.stderr.write(f"{error.path or '(document)'}: {error.code}: {error.message}")

    def read(self, file: str) -> Any:
        try:
            path = Path(file)
            if path.stat().st_size > MAX_FILE:
                raise CommandError(f"{file} is larger than {MAX_FILE // (1024 * 1024)} MB")
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CommandError(f"{file}: no such file") from None
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {file}: {error}") from None
        try:
            return load(text, as_yaml=is_yaml(file))
        except ValueError as error:
            raise CommandError(f"{file}: not valid {'YAML' if is_yaml(file) else 'JSON'}: {error}") from None

    def author(self, username: str | None) -> User | None:
        if username is None:
            return None
        return user_named(username)
