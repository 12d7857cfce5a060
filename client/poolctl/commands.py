"""What every command shares: where its output goes, its client, and how it is registered.

stdout gets the result — a table for people, or with ``--json`` one JSON document (an
``{"error": …}`` document when the command fails); stderr gets every message and hint.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from poolctl.api import RequestRef
from poolctl.client import Client
from poolctl.errors import EXIT_CODES, USAGE, PoolctlError
from poolctl.models import Request
from poolctl.render import Cell, Progress, colour_wanted, json_text, printable, table, terminal_width
from poolctl.watch import RequestWatch

Handler = Callable[[argparse.Namespace, "Output"], "int | None"]


@dataclass
class Output:
    """Where results and messages go: stdout gets the result (a table, or the JSON document),
    stderr every message and hint. A human result is made of tables and lines that pass the
    server's text through ``printable``; JSON and messages pass through it here."""

    json: bool = False
    debug: bool = False
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def colour(self) -> bool:
        return not self.json and colour_wanted(self.stdout)

    def result(self, document: Any, human: Callable[[], str | None]) -> None:
        if self.json:
            self.stdout.write(json_text(document) + "\n")
        else:
            text = human()
            if text:
                self.stdout.write(text + "\n")

    def say(self, message: str) -> None:
        self.stderr.write(printable(message) + "\n")
        self.stderr.flush()

    def hint(self, *commands: str) -> None:
        """The next commands that help, for people (scripts read the JSON)."""
        if not self.json and commands:
            self.say("next: " + "  ·  ".join(commands))

    def failure(self, error: PoolctlError) -> None:
        self.say(f"poolctl: {error.line()}")
        if self.json:
            self.result({"error": error.as_json()}, lambda: None)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Cell | str]]) -> str:
        return table(headers, rows, colour=self.colour, width=terminal_width(self.stdout))


def warn(out: Output, request: Request) -> None:
    """What the server warns about ``request``, a line each on stderr: its words, not the client's
    (a server without ``warnings`` sends none, and nothing is printed)."""
    for warning in request.warnings:
        out.say(f"poolctl: warning: {warning.message or warning.code}")


def client_for(args: argparse.Namespace) -> Client:
    return Client(url=args.url)


def wait_with_progress(client: Client, request: RequestRef, timeout: float | None, out: Output) -> Request:
    """``client.wait`` with the live line on stderr (a plain line per change when not a terminal)."""
    progress, started = Progress(out.stderr), time.monotonic()

    def show(current: Request, watch: RequestWatch) -> None:
        progress.show(current, time.monotonic() - started, watch.trouble.message if watch.trouble else None)

    try:
        return client.wait(request, timeout=timeout, progress=show)
    finally:
        progress.clear()


def exit_code_table() -> str:
    return "exit codes:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES)


def common_options(defaults: bool) -> argparse.ArgumentParser:
    """--url, --json, --debug: accepted before or after the command (``defaults`` only at the top,
    so a subcommand's parse does not reset what the top level read)."""
    common = argparse.ArgumentParser(add_help=False)
    value = (lambda given: given) if defaults else (lambda given: argparse.SUPPRESS)
    common.add_argument("--url", default=value(None), help="the server's root URL (default: POOLWEB_URL, then login)")
    common.add_argument("--json", action="store_true", default=value(False),
                        help="print one JSON document on stdout; messages stay on stderr")
    common.add_argument("--debug", action="store_true", default=value(False), help="show tracebacks")
    return common


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code for usage errors is ours too
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"poolctl: {message}: see `{self.prog} --help`\n")


class Commands:
    """Registers commands (and groups of them, like ``config export``) with the shared options."""

    def __init__(self, subparsers: Any, common: argparse.ArgumentParser) -> None:
        self.subparsers, self.common = subparsers, common

    def add(self, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub = self.subparsers.add_parser(name, help=help, description=help, parents=[self.common],
                                         epilog=exit_code_table(), formatter_class=argparse.RawDescriptionHelpFormatter)
        sub.set_defaults(handler=handler)
        return sub

    def group(self, name: str, help: str) -> Commands:
        parent = self.add(name, lambda args, out: None, help)
        return Commands(parent.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=Parser),
                        self.common)
