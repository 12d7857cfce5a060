"""The usage page (``/usage/``, docs/console.md): a period's GPU-hours per policy over time as a
stacked bar chart drawn on the server (SVG), the report's table under it (by policy, profile, pool
or user, in share and borrowed) and each reservation left idle. The figures are ``GET /usage``'s
own (the same selector, the same payload); only the chart's geometry is computed here. The chart's
text alternative is its figures as a table (in a disclosure under it) and the report's table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from poolweb.selectors.usage import DAY, GROUPINGS, UsageAskInvalid, parse_ask, usage_report
from poolweb.services.usage_data import report_data

WIDTH, HEIGHT = 960, 260  # the chart's viewBox
LEFT, BOTTOM, TOP = 56, 28, 12  # room for the axes' labels
COLOURS = 8  # --series-0 … --series-7 in console.css; a ninth policy takes the first again


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int  # its colour
    label: str  # "dev: 6.000 GPU-hours, 2026-11-01 03:00"


@dataclass(frozen=True)
class Tick:
    at: float
    text: str


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    legend: list[tuple[str, int]]  # policy, colour
    policies: list[str]
    table: list[tuple[str, list[str]]]  # the figures' table: per bucket its label, GPU-hours per policy
    step: str  # "hour" or "day"


def chart_of(data: dict) -> Chart:
    """The stacked bars of ``data["chart"]`` (``report_data``): one column per bucket, one colour
    per policy, scaled to the largest column."""
    chart = data["chart"]
    buckets, series = chart["buckets"], chart["series"]
    step = "day" if chart["step_seconds"] >= DAY else "hour"
    columns = [b[:10] if step == "day" else b[:16].replace("T", " ") for b in buckets]
    hours = {policy: [float(v) for v in values] for policy, values in series.items()}
    totals = [sum(values[i] for values in hours.values()) for i in range(len(buckets))]
    top = _nice(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    slot = plot_w / max(1, len(buckets))
    bars = []
    for index in range(len(buckets)):
        base = 0.0
        for number, (policy, values) in enumerate(hours.items()):
            value = values[index]
            if value <= 0:
                continue
            height = plot_h * value / top
            bars.append(Bar(round(LEFT + index * slot + slot * 0.1, 2), round(TOP + plot_h - base - height, 2),
                            round(slot * 0.8, 2), round(height, 2), number % COLOURS,
                            f"{policy}: {series[policy][index]} GPU-hours, {columns[index]}"))
            base += height
    y_ticks = [Tick(round(TOP + plot_h - plot_h * f, 2), _hours(top * f)) for f in (0, 0.25, 0.5, 0.75, 1)]
    every = max(1, len(buckets) // 8)
    x_ticks = [Tick(round(LEFT + i * slot + slot / 2, 2), columns[i][5:] if step == "day" else columns[i][11:])
               for i in range(0, len(buckets), every)]
    table = [(column, [series[policy][i] for policy in series]) for i, column in enumerate(columns)]
    return Chart(bars, y_ticks, x_ticks, [(p, n % COLOURS) for n, p in enumerate(hours)], list(series), table, step)


def _nice(value: float) -> float:
    """The axis' top: 1, 2, 2.5 or 5 × a power of ten, at least ``value`` (1 when nothing ran)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(power * factor for factor in (1, 2, 2.5, 5, 10) if power * factor >= value)


def _hours(value: float) -> str:
    return f"{value:g}"


@login_required
@require_GET
def usage_page(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    params = request.GET
    values = {name: params.get(name, "") for name in ("since", "until", "by")}
    try:
        ask = parse_ask(params, now)
    except UsageAskInvalid as invalid:
        return render(request, "console/usage.html", {"errors": invalid.errors, "values": values,
                                                      "groupings": GROUPINGS}, status=400)
    data = report_data(usage_report(user=request.user, since=ask.since, until=ask.until, by=ask.by, now=now))
    query = {"since": data["since"], "until": data["until"], "by": ask.by}
    values = {"since": data["since"], "until": data["until"], "by": ask.by}
    return render(request, "console/usage.html", {
        "report": data, "chart": chart_of(data), "values": values, "groupings": GROUPINGS,
        "csv_href": "/api/v1/usage?" + urlencode({**query, "format": "csv"}),
        "rows": [(row[ask.by], row) for row in data["rows"]],
    })
