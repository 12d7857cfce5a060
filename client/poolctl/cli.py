"""``poolctl``: the command line — the requests' and the live state's commands, and ``main``.

Human tables by default; ``--json`` prints one JSON document on stdout (``commands.Output``).
Every failure is one line on stderr that names the fix, and a distinct exit code (``EXIT_CODES``,
printed by ``poolctl --help``); ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import getpass
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence

from poolctl.admin import add_admin_commands
from poolctl.api import RequestRef, request_id
from poolctl.client import Client
from poolctl.commands import (Commands, Handler, Output, Parser, client_for, common_options, exit_code_table,
                              wait_with_progress, warn)
from poolctl.config import normalise_url, read_file, token_source, write_file
from poolctl.errors import FAILURE, INTERRUPTED, Interrupted, PoolctlError, UsageError, ended
from poolctl.models import Account, Pool, Request
from poolctl.render import (Cell, duration, local_time, number_cell, printable, quantities, starts_text, state_cell,
                            state_word)
from poolctl.run import add_run_command
from poolctl.submission import add_submission_arguments, label, seconds, submission_from
from poolctl.version import __version__


# --- requests --------------------------------------------------------------------------------------

def describe(request: Request) -> str:
    """One line: request 17 (dev/half) queued · position 3 · WaitingForCapacity: …"""
    where = f" on pool {request.pool}" if request.pool else ""
    place = f" · position {request.position}" if request.position is not None else ""
    starts = f" · {text}" if (text := starts_text(request)) else ""
    reason = f" · {why(request)}" if request.reason else ""
    return printable(f"request {request.id} ({request.policy}/{request.profile}) {state_word(request.state)}"
                     f"{where}{place}{starts}{reason}")


def why(request: Request) -> str:
    """Its reason and sentence: "WaitingForCapacity: pool box is short of 1 gpu"."""
    return f"{request.reason}: {request.message}" if request.message else request.reason or ""


def waiting_since(request: Request, now: float) -> str:
    return duration(now - request.submitted_at.timestamp()) if request.submitted_at else ""


def next_steps(request: Request) -> tuple[str, ...]:
    if request.state == "pending":
        return f"poolctl wait {request.id}", f"poolctl cancel {request.id}"
    if request.live:
        return (f"poolctl release {request.id} when done",)
    return ()


def details(request: Request) -> str:
    rows = [
        ("request", f"{request.id}" + (f"  {request.name}" if request.name else "")),
        ("queue", f"{request.policy}/{request.profile}"),
        ("state", state_word(request.state)),
        ("reason", why(request)),
        ("position", "" if request.position is None else str(request.position)),
        ("starts", starts_text(request)),
        ("pool", request.pool or ""),
        ("resources", quantities(request.resources)),
        ("attempt", f"{request.attempt} (max_retries {request.max_retries})"),
        ("preemptible", "yes" if request.preemptible else "no"),
        ("owner", request.owner or ""),
        ("labels", ", ".join(f"{k}={v}" for k, v in request.labels.items())),
        ("submitted", local_time(request.submitted_at)),
        ("allocated", local_time(request.allocated_at)),
        ("lease until", local_time(request.lease_expires_at) if request.live else ""),
        ("run ends", local_time(request.time_limit_at) if request.live else ""),
        ("finished", local_time(request.finished_at)),
    ]
    return "\n".join(f"{name:<12} {printable(value)}" for name, value in rows if value)


def show_request(out: Output, request: Request, human: Callable[[], str] | None = None) -> int:
    """Print ``request`` and the next steps for it."""
    out.result(request.to_json(), human or (lambda: describe(request)))
    out.hint(*next_steps(request))
    return 0


def outcome(out: Output, request: Request) -> int:
    """After submit or wait: the request, or the error of a request that ended without running
    (its exit code, and with ``--json`` an error document that carries the request)."""
    failure = ended(request)
    if failure is not None:
        raise failure
    return show_request(out, request)


def wait_or_stop(client: Client, request: RequestRef, timeout: float | None, out: Output) -> Request:
    """Wait with the progress line; Ctrl-C stops waiting and leaves the request queued."""
    try:
        return wait_with_progress(client, request, timeout, out)
    except KeyboardInterrupt:
        number = request_id(request)
        raise Interrupted(f"stopped waiting; request {number} stays queued",
                          f"`poolctl wait {number}` waits again, `poolctl cancel {number}` withdraws it") from None


def cmd_submit(args: argparse.Namespace, out: Output) -> int:
    client = client_for(args)
    request = client.submit(**submission_from(args))
    warn(out, request)
    if args.wait and request.state == "pending":
        request = wait_or_stop(client, request, args.timeout, out)
    return outcome(out, request)


def cmd_status(args: argparse.Namespace, out: Output) -> int:
    request = client_for(args).get(args.id)
    return show_request(out, request, lambda: details(request))


def cmd_wait(args: argparse.Namespace, out: Output) -> int:
    return outcome(out, wait_or_stop(client_for(args), args.id, args.timeout, out))


def cmd_action(action: str) -> Handler:
    def handler(args: argparse.Namespace, out: Output) -> int:
        request = getattr(client_for(args), action)(args.id)
        out.result(request.to_json(), lambda: describe(request))
        if request.state == "pending":  # a release gives back capacity; a queued request holds none
            out.hint(f"poolctl cancel {request.id} withdraws it from the queue")
        return 0

    return handler


def cmd_list(args: argparse.Namespace, out: Output) -> int:
    requests = client_for(args).list(state=args.state, policy=args.policy, profile=args.profile, pool=args.pool,
                                     owner=args.owner, labels=dict(args.label), limit=args.limit)
    rows = [[Cell(str(r.id), right=True), f"{r.policy}/{r.profile}", state_cell(r.state), r.pool or "",
             number_cell(r.position), local_time(r.submitted_at), why(r)] for r in requests]
    out.result([r.to_json() for r in requests],
               lambda: out.table(["id", "queue", "state", "pool", "pos", "submitted", "why"], rows)
               if rows else "no requests")
    if not requests:
        out.hint("poolctl submit --policy P --profile R")
    return 0


# --- live state ------------------------------------------------------------------------------------

def cmd_queue(args: argparse.Namespace, out: Output) -> int:
    if args.pool is None:
        return queue_summary(client_for(args), out)
    entries = client_for(args).queue(args.pool)
    now = time.time()
    rows = [[number_cell(e.position), Cell(str(e.id), right=True), f"{e.policy}/{e.profile}", e.owner or "",
             e.name or "", quantities(e.resources), waiting_since(e, now), why(e)] for e in entries]
    out.result([e.to_json() for e in entries],
               lambda: out.table(["pos", "id", "queue", "owner", "name", "resources", "waiting", "why"], rows)
               if rows else f"nothing is queued on pool {args.pool}")
    return 0


def queue_summary(client: Client, out: Output) -> int:
    """Every pool's queue in a row: how many wait and run there, and who is next and why."""
    pools = client.pools()
    heads = {p.name: next(iter(client.queue(p.name, limit=1)), None) if p.pending else None for p in pools}
    now = time.time()

    def row(pool: Pool, head: Request | None) -> list[Cell | str]:
        first = [pool.name, number_cell(pool.pending), number_cell(pool.running)]
        if head is None:
            return first
        return [*first, Cell(str(head.id), right=True), f"{head.policy}/{head.profile}", waiting_since(head, now),
                why(head)]

    rows = [row(p, heads[p.name]) for p in pools]
    out.result([{"pool": p.name, "pending": p.pending, "running": p.running,
                 "next": heads[p.name].to_json() if heads[p.name] else None} for p in pools],
               lambda: out.table(["pool", "pending", "running", "next", "queue", "waiting", "why"], rows)
               if rows else "no pools: nothing is provisioned yet")
    out.hint("poolctl queue POOL lists a pool's queue")
    return 0


def cmd_pools(args: argparse.Namespace, out: Output) -> int:
    pools = client_for(args).pools()
    rows = [[p.name, quantities(p.capacity), quantities(p.used), quantities(p.free), quantities(p.held),
             number_cell(p.pending), number_cell(p.running)] for p in pools]
    out.result([p.to_json() for p in pools],
               lambda: out.table(["pool", "capacity", "used", "free", "held", "pending", "running"], rows)
               if rows else "no pools: nothing is provisioned yet")
    return 0


def cmd_policies(args: argparse.Namespace, out: Output) -> int:
    policies = client_for(args).policies()
    rows = [[p.name, number_cell(p.priority), p.group, s.scope, s.key, number_cell(s.usage), number_cell(s.reserved),
             number_cell(s.limit), number_cell(s.borrowed), number_cell(s.pending), number_cell(s.running)]
            for p in policies for s in p.scopes]
    rows += [[p.name, number_cell(p.priority), p.group, "*", "", "", "", "", "", number_cell(p.pending),
              number_cell(p.running)] for p in policies if not p.scopes]  # no quota: no usage rows
    budgets = [printable(f"{p.name} budget: {p.budget.text} ({p.budget.percent} %)"
                         + (f"; spent: {SPENT[p.budget.when_spent]}" if p.budget.spent else ""))
               for p in policies if p.budget is not None]

    def human() -> str:
        table = out.table(["policy", "priority", "group", "scope", "key", "usage", "reserved", "limit",
                           "borrowed", "pending", "running"], rows) if rows else "no policies"
        return "\n".join([table, *([""] + budgets if budgets else [])])

    out.result([p.to_json() for p in policies], human)
    return 0


SPENT = {"refuse": "new requests are refused until it resets",
         "idle": "served last, from idle capacity only, until it resets"}


def cmd_usage(args: argparse.Namespace, out: Output) -> int:
    client = client_for(args)
    if args.csv:
        out.stdout.write(client.usage_csv(args.since, args.until, args.by))
        return 0
    report = client.usage(args.since, args.until, args.by)
    rows = [[row.group if row.group is not None else "(others)", row.key, Cell(row.used, right=True),
             Cell(row.in_share, right=True), Cell(row.borrowed, right=True)] for row in report.rows]
    idle = [[r.policy, r.scope, r.key, Cell(r.reserved, right=True), Cell(r.idle, right=True)]
            for r in report.reservations]

    def human() -> str:
        period = f"key-hours from {local_time(report.since)} to {local_time(report.counted_until)}"
        parts = [period, out.table([report.by, "key", "used", "in share", "borrowed"], rows) if rows
                 else "nothing was allocated in the period"]
        if idle:
            parts += ["", out.table(["policy", "scope", "key", "reserved", "idle"], idle)]
        return "\n".join(parts)

    out.result(report.to_json(), human)
    return 0


# --- login ---------------------------------------------------------------------------------------

DEFAULT_URL = "http://127.0.0.1:8000"


def cmd_login(args: argparse.Namespace, out: Output) -> int:
    saved = read_file()
    interactive = sys.stdin.isatty()
    url = args.url or os.environ.get("POOLWEB_URL") or saved.get("url")
    if interactive and not args.url:
        url = input(f"Server URL [{url or DEFAULT_URL}]: ").strip() or url or DEFAULT_URL
    url = normalise_url(url or DEFAULT_URL)
    if args.token_stdin:
        token = sys.stdin.readline().strip()
    elif os.environ.get("POOLWEB_TOKEN"):
        token = os.environ["POOLWEB_TOKEN"]
    elif interactive:
        token = getpass.getpass(f"API token (input hidden; make one on {token_source(url)}): ").strip()
    else:
        raise UsageError("no token given", "pipe it in with `poolctl login --token-stdin`, or set POOLWEB_TOKEN")
    if not token:
        raise UsageError("the token is empty", f"paste a token from {token_source(url)}")
    client = Client(url, token)
    account = client.me()  # proves the URL and the token before anything is saved
    admin = client.is_admin() if account is None else account.is_admin
    path = write_file(url, token)
    out.result({"url": url, "config_file": str(path), "admin": admin,
                "username": account.username if account else None},
               lambda: f"Signed in to {url} as {signed_in_as(account, admin)}; saved to {path} (readable only by you).")
    out.hint("poolctl pools", "poolctl policies")
    return 0


def signed_in_as(account: Account | None, admin: bool) -> str:
    """``bob (teams dev, research)``, ``alice (an admin)``; only the role from a server without ``/me``."""
    role = "an admin" if admin else "a user who is not an admin"
    if account is None:
        return role
    teams = f"teams {', '.join(account.groups)}" if account.groups else "in no team"
    return f"{printable(account.username)} ({'an admin, ' if admin else ''}{printable(teams)})"


# --- the parser ------------------------------------------------------------------------------------

DESCRIPTION = """\
poolctl: submit work to Poolweb, wait for capacity, and run commands under an allocation.

The server and token come from --url / POOLWEB_URL and POOLWEB_TOKEN, or from `poolctl login`.
Start with:  poolctl login  ·  poolctl pools  ·  poolctl run --policy dev --profile half -- python train.py
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="poolctl", description=DESCRIPTION, epilog=exit_code_table(),
                    formatter_class=argparse.RawDescriptionHelpFormatter, parents=[common_options(True)])
    parser.add_argument("--version", action="version", version=f"poolctl {__version__}")
    commands = Commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser),
                        common_options(False))
    add_run_command(commands)
    submit = commands.add("submit", cmd_submit, "submit a request")
    add_submission_arguments(submit)
    submit.add_argument("--wait", action="store_true", help="wait until it is allocated (or ends)")
    submit.add_argument("--timeout", type=seconds, metavar="SECONDS", help="with --wait: give up after this long")
    commands.add("status", cmd_status, "show one request").add_argument("id", type=int)
    wait = commands.add("wait", cmd_wait, "wait until a request is allocated (or ends)")
    wait.add_argument("id", type=int)
    wait.add_argument("--timeout", type=seconds, metavar="SECONDS", help="give up after this long (exit 8)")
    commands.add("cancel", cmd_action("cancel"), "withdraw a request (idempotent)").add_argument("id", type=int)
    commands.add("release", cmd_action("release"), "give a request's capacity back (idempotent)").add_argument(
        "id", type=int)
    listing = commands.add("list", cmd_list, "your requests (admins: everyone's), newest first")
    for name in ("state", "policy", "profile", "pool", "owner"):
        listing.add_argument(f"--{name}", help="a state, or several separated by commas" if name == "state" else None)
    listing.add_argument("--label", type=label, action="append", default=[], metavar="KEY=VALUE",
                         help="only requests with this label (repeat: with every one)")
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    commands.add("queue", cmd_queue, "a pool's pending requests in service order; without POOL, each pool's "
                 "queue in a row").add_argument("pool", nargs="?")
    commands.add("pools", cmd_pools, "each pool's capacity, use and queue")
    commands.add("policies", cmd_policies, "each policy's usage, reservations and limits")
    usage = commands.add("usage", cmd_usage, "key-hours of a period by policy, profile, pool or user, in share "
                         "and borrowed, and each reservation left idle")
    usage.add_argument("--since", help="a date or time in ISO 8601 (default: 30 days before --until)")
    usage.add_argument("--until", help="a date or time in ISO 8601 (default: now)")
    usage.add_argument("--by", choices=("policy", "profile", "pool", "user"), default="policy")
    usage.add_argument("--csv", action="store_true", help="print the server's CSV of the rows")
    login = commands.add("login", cmd_login, "check a URL and token, and save them for the next commands")
    login.add_argument("--token-stdin", action="store_true", help="read the token from stdin (for scripts)")
    add_admin_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Output(json=args.json, debug=args.debug)
    try:
        return args.handler(args, out) or 0
    except PoolctlError as error:
        return report(out, error)
    except KeyboardInterrupt:
        return report(out, Interrupted("interrupted"))
    except BrokenPipeError:  # `poolctl list | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 128 + signal.SIGPIPE
    except Exception as error:  # a bug: one line, the traceback on request
        if out.debug:
            traceback.print_exc()
        out.say(f"poolctl: unexpected {type(error).__name__}: {error} (run again with --debug for the traceback)")
        return FAILURE


def report(out: Output, error: PoolctlError) -> int:
    if out.debug:
        traceback.print_exc()
    out.failure(error)
    return error.exit_code


def entry_point() -> None:
    try:
        code = main()
    except KeyboardInterrupt:  # a second Ctrl-C while the first was being answered
        code = INTERRUPTED
    sys.exit(code)
