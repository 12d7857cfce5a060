"""The allocation intervals of a period, from the requests' history, in one statement
(docs/usage.md §3).

Each ``allocated`` change starts an allocation; it ends at the next change, or at the one after
when the next is ``preempting`` (still live, same pool). ``LEAD`` over each request's changes
finds both, on PostgreSQL and SQLite alike. Times leave the database as whole seconds since the
epoch (floored), so the arithmetic after it is on integers and Python parses no timestamp: at a
month of history (10^6 changes) converting ~3×10^5 timestamps in Python cost more than the query.
Resources come as JSON text, decoded once per distinct text (requests of one profile share it).

Only requests that can overlap the period are windowed: submitted before its end and not
finished before its start (``request_finished_at`` is an index).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from django.db import connection

from poolweb.models import Request as RequestRow, RequestChange


class Interval(NamedTuple):
    request: int
    policy: str
    profile: str
    owner: int
    pool: str
    resources: str  # JSON text
    start: int  # the grant, seconds since the epoch
    stop: int | None  # None: live still


def _epoch(expression: str) -> str:
    # date_part is a double; EXTRACT's numeric cost PostgreSQL a third of the query at 2×10^5 rows.
    if connection.vendor == "postgresql":
        return f"FLOOR(date_part('epoch', {expression}))::bigint"
    return f"CAST(strftime('%%s', {expression}) AS INTEGER)"


def allocation_intervals(since, until, policies: Collection[str] | None = None) -> list[Interval]:
    """Allocations that overlap ``[since, until)`` (datetimes; whole seconds, as the report
    counts them): the stored times are compared, then cut to the second; of ``policies`` only
    when given (a budget's burn)."""
    since_epoch = int(since.timestamp() // 1)
    quote = connection.ops.quote_name
    changes, requests = quote(RequestChange._meta.db_table), quote(RequestRow._meta.db_table)
    # For a budget's burn (``policies`` given, read by every pass) a pending request at its first
    # attempt is left out: it was never granted (an eviction re-queues with attempt + 1, R-46), and
    # a pass's 10^4 of them were most of the statement's time. The policies are kept in Python: as
    # a condition, SQLite searched request_policy_state once per policy, twice as slow (bench/budgets.py).
    among = "" if policies is None else " AND (state <> 'pending' OR attempt > 1)"
    resources = "r.resources::text" if connection.vendor == "postgresql" else "r.resources"
    query = f"""
        SELECT s.request_id, r.policy, r.profile, r.owner_id, s.pool, {resources}, {_epoch("s.at")}, {_epoch("s.stop")}
        FROM (
            SELECT c.request_id, c.state, c.pool, c.at,
                   CASE WHEN LEAD(c.state) OVER w = 'preempting' THEN LEAD(c.at, 2) OVER w ELSE LEAD(c.at) OVER w END
                   AS stop
            FROM {changes} c
            WHERE c.request_id IN (SELECT id FROM {requests}
                                   WHERE submitted_at < %s AND (finished_at IS NULL OR finished_at >= %s){among})
            WINDOW w AS (PARTITION BY c.request_id ORDER BY c.id)
        ) s JOIN {requests} r ON r.id = s.request_id
        WHERE s.state = 'allocated' AND s.at < %s AND (s.stop IS NULL OR s.stop >= %s)
    """
    with connection.cursor() as cursor:
        cursor.execute(query, [until, since, until, since])
        return [Interval(*row) for row in cursor.fetchall()
                if (row[7] is None or row[7] > since_epoch) and (policies is None or row[1] in policies)]
