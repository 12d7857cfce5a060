"""Usage reports (docs/usage.md): key-hours of a period by policy, profile, pool or user, in share
and borrowed, each reservation's idle part, and GPU-hours per policy over time for the chart.

The intervals come from the requests' history (``sql.usage``), the configuration of each instant
from the versions, the arithmetic from ``reconcile.usage``. Who sees what follows the requests'
privacy (docs/api.md §4): totals by policy, profile and pool are public to signed-in users, like
``GET /policies`` and ``GET /pools``; by user, a member sees their own usage and that in their
teams' policies, and everyone else's summed in one row without a name.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import orjson
from django.contrib.auth import get_user_model

from poolweb.models import ConfigVersion
from poolweb.selectors.requests import Audience, audience_of
from poolweb.selectors.versions import engine_version
from poolweb.sql.usage import allocation_intervals
from reconcile.usage import Era, Held, Reservation, Split, key_seconds, totals

GROUPINGS = ("policy", "profile", "pool", "user")
HOUR, DAY = 3600, 86400
HOURLY_UP_TO = 2 * DAY  # a longer period is charted per day
MAX_PERIOD = timedelta(days=366)
CHART_KEY = "gpu"


@dataclass(frozen=True)
class UsageRow:
    """One group's key-seconds of one key (milli-units × seconds). ``group`` is None for the
    usage of users the reader may not see (by user only)."""

    group: str | None
    key: str
    used: int
    in_share: int
    borrowed: int


@dataclass(frozen=True)
class ReservationRow:
    policy: str
    scope: str
    key: str
    reserved: int
    idle: int


@dataclass(frozen=True)
class UsageReport:
    since: datetime
    until: datetime  # the period's end as asked
    counted_until: datetime  # the end of what was counted: ``until``, or now when that is earlier
    by: str
    rows: list[UsageRow]
    reservations: list[ReservationRow]
    bucket_seconds: int  # the chart's step
    buckets: list[datetime]  # the chart's bucket starts
    series: dict[str, list[int]]  # policy → GPU milli-unit-seconds per bucket


def key_order(key: str) -> tuple[int, str]:
    """GPU first, then the keys in name order."""
    return (0 if key == CHART_KEY else 1, key)


def usage_report(*, user, since: datetime, until: datetime, by: str, now: datetime) -> UsageReport:
    """The report of ``[since, until)`` as ``user`` may see it; nothing after ``now`` is counted."""
    counted_until = max(since, min(until, now))
    start, stop = _epoch(since), _epoch(counted_until)
    intervals = allocation_intervals(since, counted_until)
    decoded: dict[str, Mapping[str, int]] = {}
    held = [Held(i.request, i.policy, i.profile, i.owner, i.pool,
                 decoded.get(i.resources) or decoded.setdefault(i.resources, orjson.loads(i.resources)),
                 i.start, i.start, stop if i.stop is None else i.stop) for i in intervals]
    found = key_seconds(held, _eras(since, counted_until), since=start, until=stop)
    rows = _grouped(held, found.held, by, audience_of(user) if by == "user" else None)
    size = HOUR if (until - since).total_seconds() <= HOURLY_UP_TO else DAY
    buckets = _bucket_starts(start, stop, size)
    return UsageReport(since, until, counted_until, by, rows, _reservation_rows(found.reservations), size,
                       [datetime.fromtimestamp(b, timezone.utc) for b in buckets],
                       _series(held, buckets, stop))


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp() // 1)


def _eras(since: datetime, until: datetime) -> list[Era]:
    """The versions live in the period: the last provisioned by ``since``, and those after it."""
    versions = list(ConfigVersion.objects.filter(created_at__gt=since, created_at__lt=until).order_by("number"))
    before = ConfigVersion.objects.filter(created_at__lte=since).order_by("-number").first()
    if before is not None:
        versions.insert(0, before)
    return [Era(_epoch(v.created_at), engine_version(v).config) for v in versions]


def _grouped(held: list[Held], splits: list[Split], by: str, audience: Audience | None) -> list[UsageRow]:
    groups: dict[str | int | None, list[Split]] = {}
    for h, split in zip(held, splits):
        if by == "user":
            group = h.owner if audience is None or audience.sees_details(h.owner, h.policy) else None
        else:
            group = getattr(h, by)
        groups.setdefault(group, []).append(split)
    names: dict[int, str] = {}
    if by == "user":
        ids = [g for g in groups if g is not None]
        names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    rows = []
    for group, parts in groups.items():
        total = totals(parts)
        label = names.get(group, str(group)) if by == "user" and group is not None else group
        for key in total.used:
            rows.append(UsageRow(label, key, total.used[key], total.in_share.get(key, 0), total.borrowed.get(key, 0)))
    rows.sort(key=lambda row: (key_order(row.key), row.group is None, row.group or ""))
    return rows


def _reservation_rows(found: Mapping[tuple[str, str, str], Reservation]) -> list[ReservationRow]:
    rows = [ReservationRow(policy, scope, key, r.reserved, r.idle) for (policy, scope, key), r in found.items()]
    rows.sort(key=lambda row: (row.policy, key_order(row.key), row.scope))
    return rows


def _bucket_starts(start: int, stop: int, size: int) -> list[int]:
    """``start``, then every whole hour or UTC day after it before ``stop``."""
    found = [start]
    step = (start // size + 1) * size
    while step < stop:
        found.append(step)
        step += size
    return found


def _series(held: list[Held], buckets: list[int], stop: int) -> dict[str, list[int]]:
    """GPU milli-unit-seconds held per policy in each bucket."""
    series: dict[str, list[int]] = {}
    edges = buckets + [stop]
    for h in held:
        amount = h.resources.get(CHART_KEY)
        if not amount:
            continue
        line = series.setdefault(h.policy, [0] * len(buckets))
        begin, end = max(h.start, buckets[0]), min(h.stop, stop)
        index = bisect.bisect_right(buckets, begin) - 1
        while begin < end:
            upper = min(end, edges[index + 1])
            line[index] += amount * (upper - begin)
            begin, index = upper, index + 1
    return dict(sorted(series.items()))


# --- the period and grouping asked for ---------------------------------------------------------------

DEFAULT_PERIOD = timedelta(days=30)
MAX_TEXT = 40  # longer than any valid time


@dataclass(frozen=True)
class UsageAsk:
    since: datetime
    until: datetime
    by: str


@dataclass(frozen=True)
class AskError:
    field: str
    message: str
    code: str


class UsageAskInvalid(ValueError):
    def __init__(self, errors: list[AskError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = errors


def parse_ask(params: Mapping[str, str], now: datetime) -> UsageAsk:
    """``since``, ``until`` (ISO 8601: a date is its midnight UTC, a time without an offset is UTC;
    defaults: the 30 days up to now) and ``by`` (default ``policy``); ``UsageAskInvalid`` naming
    each bad parameter."""
    errors: list[AskError] = []
    until = _moment(params.get("until") or None, "until", errors)
    since = _moment(params.get("since") or None, "since", errors)
    by = params.get("by") or "policy"
    if by not in GROUPINGS:
        errors.append(AskError("by", f"by must be one of {', '.join(GROUPINGS)}", "invalid_choice"))
    if not errors:
        until = until or (now if since is None else min(now, since + DEFAULT_PERIOD))
        since = since or until - DEFAULT_PERIOD
        if since >= until:
            errors.append(AskError("until", "until must be after since", "invalid"))
        elif until - since > MAX_PERIOD:
            errors.append(AskError("since", f"the period may be at most {MAX_PERIOD.days} days", "invalid"))
    if errors:
        raise UsageAskInvalid(errors)
    return UsageAsk(since, until, by)


def _moment(text: str | None, field: str, errors: list[AskError]) -> datetime | None:
    if text is None:
        return None
    try:
        if len(text) > MAX_TEXT:
            raise ValueError
        moment = datetime.fromisoformat(text)
    except ValueError:
        errors.append(AskError(field, f"{field} must be a date or a time in ISO 8601, such as 2026-11-01 "
                                      "or 2026-11-01T08:00:00Z", "invalid"))
        return None
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    if not datetime(1970, 1, 1, tzinfo=timezone.utc) <= moment <= datetime(9000, 1, 1, tzinfo=timezone.utc):
        errors.append(AskError(field, f"{field} must be between 1970 and 9000", "invalid"))
        return None
    return moment


def hours_text(milli_unit_seconds: int) -> str:
    """Key-seconds in milli-units as key-hours with three decimals, rounded half up:
    ``hours_text(5_400_000)`` is ``1.500`` (1.5 units for an hour, or one for 90 minutes)."""
    thousandths = (milli_unit_seconds + 1800) // 3600
    return f"{thousandths // 1000}.{thousandths % 1000:03d}"
