"""``manage.py audit [--actor NAME] [--action CODE] [--object TARGET] [--request ID] [--since TIME]
[--until TIME] [--limit N] [--json]``: the audit log, newest first, filtered as ``GET /audit`` is
(selectors.audit). A table for people — when, who, from where, what, the object, old → new — or
with ``--json`` one JSON object per line, as the API writes an entry. A filter that cannot match
exits 1 naming it."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from poolweb.selectors.audit import ACTIONS, FiltersInvalid, audit_list, parse_audit_filters
from poolweb.services.audit import entry_data

FILTERS = ("actor", "action", "object", "request", "since", "until")
COLUMNS = ("at", "actor", "origin", "action", "object", "change")


class Command(BaseCommand):
    help = "Print the audit log, newest first (filters as GET /api/v1/audit; --json for one object a line)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--actor", help="a username, or a command line's user@host")
        parser.add_argument("--action", help=f"one of: {', '.join(ACTIONS)}")
        parser.add_argument("--object", help="version:7, token:PREFIX, user:NAME, request:ID, management, draft")
        parser.add_argument("--request", help="entries about this request id, batches included")
        parser.add_argument("--since", help="ISO 8601 time, inclusive (UTC without an offset)")
        parser.add_argument("--until", help="ISO 8601 time, exclusive")
        parser.add_argument("--limit", type=int, default=50, help="at most this many entries (default 50; 0: all)")
        parser.add_argument("--json", dest="as_json", action="store_true", help="one JSON object per line")

    def handle(self, *args, limit: int, as_json: bool, **options) -> None:
        try:
            filters = parse_audit_filters({name: options[name] for name in FILTERS if options[name]})
        except FiltersInvalid as invalid:
            raise CommandError("; ".join(f"--{e.field}: {e.message}" for e in invalid.errors)) from None
        if limit < 0:
            raise CommandError("--limit: an integer ≥ 0")
        rows = audit_list(filters)
        entries = [entry_data(row) for row in (rows[:limit] if limit else rows.iterator())]
        if as_json:
            for entry in entries:
                self.stdout.write(_json(entry))
            return
        if not entries:
            self.stdout.write("no entries" + (" match these filters" if filters.active else ""))
            return
        self.stdout.write(table([_cells(entry) for entry in entries]))


def _json(entry: dict) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def _cells(entry: dict) -> tuple[str, ...]:
    change = f"{entry['before']} → {entry['after']}" if entry["before"] else entry["after"]
    return (entry["at"], entry["actor"], entry["origin"], entry["action"], entry["object"], change)


def table(rows: list[tuple[str, ...]]) -> str:
    """Columns padded to their widest cell, the last one left ragged."""
    widths = [max(len(cells[i]) for cells in [COLUMNS, *rows]) for i in range(len(COLUMNS) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(cells, widths)), cells[-1]]).rstrip()
                     for cells in [COLUMNS, *rows])
