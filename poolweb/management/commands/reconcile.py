"""``manage.py reconcile --once [--dry-run]``: run one pass now and print what it decided.
``manage.py reconcile --follow``: the pass loop ``serve`` runs (``services.triggers.follow``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from poolweb.services import triggers
from poolweb.services.reconciler import PassResult, reconcile_pass
from reconcile import Plan


class Command(BaseCommand):
    help = "Run one reconcile pass and print its decisions and why each pending request waits."

    def add_arguments(self, parser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--once", action="store_true", help="one pass, then exit")
        mode.add_argument("--follow", action="store_true",
                          help="pass whenever a change asks for one or a deadline comes, until stopped")
        parser.add_argument("--dry-run", action="store_true", help="decide, print, write nothing")
        parser.add_argument("--waiting", type=int, default=20, metavar="N",
                            help="show the first N waiting requests by position (default 20; 0 for none)")

    def handle(self, *args, once: bool, follow: bool, dry_run: bool, waiting: int, **options) -> None:
        if waiting < 0:
            raise CommandError("--waiting must be 0 or more")
        if follow:
            if dry_run:
                raise CommandError("--dry-run goes with --once")
            triggers.follow()
            return
        result = reconcile_pass(dry_run=dry_run, trigger="command")
        for line in describe(result, waiting=waiting, dry_run=dry_run):
            self.stdout.write(line)


def describe(result: PassResult, *, waiting: int, dry_run: bool) -> list[str]:
    decided = result.plan
    verb = "would decide" if dry_run else "decided"
    counts = ", ".join(f"{n} {name}" for name, n in result.counts.items() if n) or "nothing"
    lines = [f"Pass at {decided.now.isoformat()} {verb} {counts} in {result.duration_ms:.0f} ms "
             f"({result.pending} pending, {result.live} live"
             + (f", {result.conflicts} conflicts left for the next pass)" if result.conflicts else ")")]
    lines += [_decision_line(d) for d in decided.decisions()]
    lines += _waiting_lines(decided, waiting)
    return lines


def _decision_line(decision) -> str:
    where = f" on {decision.pool}" if decision.pool else ""
    return (f"  request {decision.request_id}: {decision.from_state.value} → {decision.state.value}{where} "
            f"[{decision.reason.value}] {decision.message}")


def _waiting_lines(decided: Plan, limit: int) -> list[str]:
    if not limit or not decided.waiting:
        return []
    first = sorted(decided.waiting.items(), key=lambda item: (item[1].pool, item[1].position))[:limit]
    lines = [f"Waiting ({len(decided.waiting)}; the first {len(first)} by pool and position):"]
    lines += [f"  request {request_id}: #{w.position} on {w.pool} [{w.reason.value}] {w.message}"
              for request_id, w in first]
    return lines
