"""``GET /usage``'s payload (docs/api.md §4), shared by the API and the console's usage page:
the report's figures as key-hours with three decimals beside the exact integers, and its CSV."""

from __future__ import annotations

import csv
import io

from poolweb.selectors.usage import ReservationRow, UsageReport, UsageRow, hours_text
from poolweb.services.payloads import api_time

MEASURES = ("used", "in_share", "borrowed")
CSV_NOTE = "milli-units × seconds"


def row_data(row: UsageRow, by: str) -> dict:
    data = {by: row.group, "key": row.key}
    data.update({name: hours_text(getattr(row, name)) for name in MEASURES})
    data["exact"] = {name: getattr(row, name) for name in MEASURES}
    return data


def reservation_data(row: ReservationRow) -> dict:
    return {"policy": row.policy, "scope": row.scope, "key": row.key, "reserved": hours_text(row.reserved),
            "idle": hours_text(row.idle), "exact": {"reserved": row.reserved, "idle": row.idle}}


def report_data(report: UsageReport) -> dict:
    return {
        "since": api_time(report.since), "until": api_time(report.until),
        "counted_until": api_time(report.counted_until), "by": report.by,
        "rows": [row_data(row, report.by) for row in report.rows],
        "reservations": [reservation_data(row) for row in report.reservations],
        "chart": {"key": "gpu", "step_seconds": report.bucket_seconds,
                  "buckets": [api_time(b) for b in report.buckets],
                  "series": {policy: [hours_text(v) for v in values] for policy, values in report.series.items()}},
    }


def report_csv(data: dict) -> str:
    """The rows as CSV: the group, the key, key-hours, then the exact milli-unit-seconds."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    by = data["by"]
    writer.writerow([by, "key", *(f"{m}_hours" for m in MEASURES), *(f"{m}_milli_unit_seconds" for m in MEASURES)])
    for row in data["rows"]:
        writer.writerow([row[by] if row[by] is not None else "", row["key"], *(row[m] for m in MEASURES),
                         *(row["exact"][m] for m in MEASURES)])
    return out.getvalue()
