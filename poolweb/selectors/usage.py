"""Usage reports (docs/usage.md): key-hours of a period by policy, profile, pool or user, in share
and borrowed, each reservation's idle part, and GPU-hours per policy over time for the chart.

The intervals come from the requests' history (``sql.usage``), the configuration of each instant
from the versions, the arithmetic from ``reconcile.usage``; whole days that ended are computed
once and kept (``UsageDay``, decision 163), so a report sweeps only its cut ends. Who sees what follows the requests'
privacy (docs/api.md §4): totals by policy, profile and pool are public to signed-in users, like
``GET /policies`` and ``GET /pools``; by user, a member sees their own usage and that in their
teams' policies, and everyone else's summed in one row without a name.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import orjson
from django.contrib.auth import get_user_model

from poolweb.models import ConfigVersion, UsageDay
from poolweb.selectors.requests import Audience, audience_of
from poolweb.selectors.versions import engine_version
from poolweb.sql.usage import allocation_intervals
from reconcile.usage import Era, Held, Split, key_seconds

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
    audience = audience_of(user) if by == "user" and not user.is_staff else None
    grouping = TEAM if audience is not None else by
    piece = merged(_pieces(start, stop, _epoch(now), (grouping, RESERVATIONS, HOURS)))
    size = HOUR if (until - since).total_seconds() <= HOURLY_UP_TO else DAY
    buckets = _bucket_starts(start, stop, size)
    return UsageReport(since, until, counted_until, by, _rows(piece, grouping, audience),
                       _reservation_rows(piece.reservations), size,
                       [datetime.fromtimestamp(b, timezone.utc) for b in buckets], _series(piece, buckets))


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp() // 1)


# --- pieces of a period: closed days kept, the rest computed -------------------------------------------

METHOD = 1  # UsageDay.method: raise it when what a day holds or how it is computed changes
SETTLE = 15 * 60  # a day is kept once it ended this long ago: a change made before its end has committed
TEAM, RESERVATIONS, HOURS = "team", "reservations", "hours"
GROUPS = (*GROUPINGS, TEAM)  # team: by owner and policy, for a member's view by user
PARTS = (*GROUPS, RESERVATIONS, HOURS)  # what a kept day holds, a UsageDay row each
WIDTH = {"policy": 2, "profile": 2, "pool": 2, "user": 2, TEAM: 3, RESERVATIONS: 3, HOURS: 2}  # key columns


@dataclass
class Piece:
    """Key-seconds of part of a period, summed as far as any report needs: ``groups[by]`` maps
    (group, key) — for ``team`` (owner id, policy, key) — to [used, in share, borrowed];
    ``reservations`` (policy, scope, key) to [reserved, idle]; ``hours`` (policy, hour) to
    [the GPU milli-unit-seconds held in that hour] (the hour's start in epoch seconds)."""

    groups: dict[str, dict[tuple, list[int]]]
    reservations: dict[tuple, list[int]]
    hours: dict[tuple, list[int]]

    @classmethod
    def empty(cls) -> Piece:
        return cls({by: {} for by in GROUPS}, {}, {})

    def part(self, name: str) -> dict[tuple, list[int]]:
        return self.reservations if name == RESERVATIONS else self.hours if name == HOURS else self.groups[name]

    def to_parts(self) -> dict[str, list[list]]:
        return {name: [[*row, *figures] for row, figures in self.part(name).items()] for name in PARTS}

    @classmethod
    def from_parts(cls, parts: dict[str, list[list]]) -> Piece:
        piece = cls.empty()
        for name, rows in parts.items():
            piece.part(name).update((tuple(row[:WIDTH[name]]), row[WIDTH[name]:]) for row in rows)
        return piece


def merged(pieces: list[Piece]) -> Piece:
    total = Piece.empty()
    for piece in pieces:
        for name in PARTS:
            into = total.part(name)
            for row, figures in piece.part(name).items():
                before = into.get(row)
                into[row] = list(figures) if before is None else [a + b for a, b in zip(before, figures)]
    return total


def _pieces(start: int, stop: int, now: int, parts: tuple[str, ...]) -> list[Piece]:
    """The closed days within ``[start, stop)`` from UsageDay (computed and kept when missing),
    and the parts before the first and after the last computed from the history; of each kept
    day only ``parts`` are read."""
    first = -(-start // DAY) * DAY
    last = min(stop, now - SETTLE) // DAY * DAY
    if first >= last:
        return _computed([(start, stop)]) if stop > start else []
    ends = [(a, b) for a, b in ((start, first), (last, stop)) if b > a]
    return kept_days(list(range(first, last, DAY)), parts) + _computed(ends)


def kept_days(days: list[int], parts: tuple[str, ...]) -> list[Piece]:
    """The closed ``days`` (epoch seconds of their starts, in order) as kept, computed and kept when
    missing; of each only ``parts`` are read."""
    if not days:
        return []
    found: dict[int, dict[str, list]] = {}
    for day, part, data in UsageDay.objects.filter(day__gte=_date(days[0]), day__lte=_date(days[-1]), method=METHOD,
                                                   part__in=parts).values_list("day", "part", "data"):
        found.setdefault(_epoch(datetime.combine(day, datetime.min.time(), timezone.utc)), {})[part] = data
    kept = {day: Piece.from_parts(data) for day, data in found.items() if len(data) == len(parts)}
    missing = [day for day in days if day not in kept]
    kept.update(zip(missing, _keep(missing)))
    return [kept[day] for day in days]


def _keep(days: list[int]) -> list[Piece]:
    """Compute the closed ``days`` (epoch seconds of their starts, in order) and keep them."""
    if not days:
        return []
    made = _computed([(day, day + DAY) for day in days])
    UsageDay.objects.filter(day__in=[_date(day) for day in days]).delete()  # of an older method
    UsageDay.objects.bulk_create([UsageDay(day=_date(day), part=name, method=METHOD, data=rows)
                                  for day, piece in zip(days, made) for name, rows in piece.to_parts().items()],
                                 ignore_conflicts=True)
    return made


def keep_closed_days(now: datetime, days_back: int) -> int:
    """Keep every closed day of the last ``days_back`` + 1 not kept yet (the periodic task, before
    it forgets requests finished ``days_back`` days ago, so no day loses them: each is kept within
    minutes of its end); how many were computed."""
    last = (_epoch(now) - SETTLE) // DAY * DAY
    days = list(range(last - (days_back + 1) * DAY, last, DAY))
    kept = set(UsageDay.objects.filter(day__gte=_date(days[0]), day__lt=_date(last), method=METHOD,
                                       part=HOURS).values_list("day", flat=True))
    missing = [day for day in days if _date(day) not in kept]
    _keep(missing)
    return len(missing)


def _date(epoch: int):
    return datetime.fromtimestamp(epoch, timezone.utc).date()


def _computed(windows: list[tuple[int, int]]) -> list[Piece]:
    """A piece per window (in start order), from one read of the history per run of adjacent
    windows (the period's two cut ends are two reads, not one of the month between them)."""
    if not windows:
        return []
    runs = [[windows[0]]]
    for window in windows[1:]:
        if window[0] == runs[-1][-1][1]:
            runs[-1].append(window)
        else:
            runs.append([window])
    if len(runs) > 1:
        return [piece for run in runs for piece in _computed(run)]
    since = datetime.fromtimestamp(windows[0][0], timezone.utc)
    until = datetime.fromtimestamp(windows[-1][1], timezone.utc)
    held = held_in(windows[0][0], windows[-1][1], None)
    held.sort(key=lambda h: h.start)
    eras = _eras(since, until)
    pieces, active, taken = [], [], 0
    for start, stop in windows:  # in start order: each allocation is taken once, kept while it lasts
        while taken < len(held) and held[taken].start < stop:
            active.append(held[taken])
            taken += 1
        active = within = [h for h in active if h.stop > start]
        found = key_seconds(within, eras, since=start, until=stop)
        piece = _piece(within, found.held, start, stop)
        piece.reservations = {row: [r.reserved, r.idle] for row, r in found.reservations.items()}
        pieces.append(piece)
    return pieces


def held_in(start: int, stop: int, policies: Collection[str] | None) -> list[Held]:
    """The allocations overlapping ``[start, stop)`` (of ``policies`` when given), a live one as
    held until ``stop``."""
    decoded: dict[str, Mapping[str, int]] = {}
    return [Held(i.request, i.policy, i.profile, i.owner, i.pool,
                 decoded.get(i.resources) or decoded.setdefault(i.resources, orjson.loads(i.resources)),
                 i.start, i.start, stop if i.stop is None else i.stop)
            for i in allocation_intervals(datetime.fromtimestamp(start, timezone.utc),
                                          datetime.fromtimestamp(stop, timezone.utc), policies)]


def _piece(held: list[Held], splits: list[Split], start: int, stop: int) -> Piece:
    piece = Piece.empty()
    groups = piece.groups
    for h, split in zip(held, splits):
        for by, group in (("policy", (h.policy,)), ("profile", (h.profile,)), ("pool", (h.pool,)),
                          ("user", (h.owner,)), (TEAM, (h.owner, h.policy))):
            into = groups[by]
            for key, used in split.used.items():
                figures = into.get((*group, key))
                if figures is None:
                    figures = into[(*group, key)] = [0, 0, 0]
                figures[0] += used
                figures[1] += split.in_share.get(key, 0)
                figures[2] += split.borrowed.get(key, 0)
        amount = h.resources.get(CHART_KEY)
        if amount:
            begin, end = max(h.start, start), min(h.stop, stop)
            while begin < end:
                hour = begin // HOUR * HOUR
                upper = min(end, hour + HOUR)
                figures = piece.hours.get((h.policy, hour))
                if figures is None:
                    figures = piece.hours[(h.policy, hour)] = [0]
                figures[0] += amount * (upper - begin)
                begin = upper
    return piece


def _eras(since: datetime, until: datetime) -> list[Era]:
    """The versions live in the period: the last provisioned by ``since``, and those after it."""
    versions = list(ConfigVersion.objects.filter(created_at__gt=since, created_at__lt=until).order_by("number"))
    before = ConfigVersion.objects.filter(created_at__lte=since).order_by("-number").first()
    if before is not None:
        versions.insert(0, before)
    return [Era(_epoch(v.created_at), engine_version(v).config) for v in versions]


def _rows(piece: Piece, grouping: str, audience: Audience | None) -> list[UsageRow]:
    """The rows of ``grouping``; ``team`` (a member's view by user) names an owner only where
    ``audience`` sees their requests in that policy, and sums the rest in one row (group None)."""
    found: dict[tuple, list[int]] = {}
    for group, figures in piece.groups[grouping].items():
        if grouping == TEAM:
            owner, policy, key = group
            group = (owner if audience is not None and audience.sees_details(owner, policy) else None, key)
        before = found.get(group)
        found[group] = list(figures) if before is None else [a + b for a, b in zip(before, figures)]
    names: dict[int, str] = {}
    by_user = grouping in ("user", TEAM)
    if by_user:
        ids = {owner for owner, _ in found if owner is not None}
        names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    rows = [UsageRow(names.get(group, str(group)) if by_user and group is not None else group, key, *figures)
            for (group, key), figures in found.items()]
    rows.sort(key=lambda row: (key_order(row.key), row.group is None, row.group or ""))
    return rows


def _reservation_rows(found: Mapping[tuple, list[int]]) -> list[ReservationRow]:
    rows = [ReservationRow(policy, scope, key, *figures) for (policy, scope, key), figures in found.items()]
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


def _series(piece: Piece, buckets: list[int]) -> dict[str, list[int]]:
    """GPU milli-unit-seconds held per policy in each bucket (an hour counts in the bucket it starts
    in; the first bucket takes the hour ``since`` falls in)."""
    series: dict[str, list[int]] = {}
    for (policy, hour), (gpu,) in sorted(piece.hours.items()):
        line = series.setdefault(policy, [0] * len(buckets))
        line[max(0, bisect.bisect_right(buckets, hour) - 1)] += gpu
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
    defaults: the 30 days up to now, in whole seconds as the report counts) and ``by`` (default
    ``policy``); ``UsageAskInvalid`` naming each bad parameter."""
    errors: list[AskError] = []
    now = now.replace(microsecond=0)
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
