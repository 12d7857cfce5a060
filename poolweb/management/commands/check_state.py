"""``manage.py check_state``: the invariants of docs/scheduling.md §10 on the stored state; exit 1 on a violation.

For cron or a deployment's health check beside ``GET /api/v1/health``: it reads what a pass
would read and changes nothing (selectors/health.py says which invariants and how).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from poolweb.selectors.health import check_stored_state


class Command(BaseCommand):
    help = "Check the invariants of the scheduling rules (I-1…I-4, I-7, I-8) on the stored state; exit 1 on a violation."

    def handle(self, *args, **options) -> None:
        checked = check_stored_state(timezone.now())
        for violation in checked.violations:
            self.stderr.write(f"{violation.invariant}: {violation.message}")
        summary = f"{', '.join(checked.checked)} on {checked.live} live and {checked.pending} pending requests"
        if not checked.ok:
            raise CommandError(f"{len(checked.violations)} violation(s) of {summary}")
        self.stdout.write(self.style.SUCCESS(f"all hold: {summary}"))
