"""Template filters and tags of the console (``{% load console %}``).

Times are shown relative ("3 minutes ago", "in 4 minutes") in a ``<time>`` whose title is the
exact time; static/console/times.js keeps the relative text current with the same wording, so a
time reads the same whether the server rendered it or a live update wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone as tz

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.timesince import timesince, timeuntil

from poolweb.console.cards import UNSHOWN_KEYS, key_order
from reconcile.quantity import quantity_text

register = template.Library()
EXACT = "%Y-%m-%d %H:%M:%S UTC"  # the title of every <time>, as times.js writes it


@register.filter
def ago(moment: datetime | None) -> str:
    """"just now", "3 minutes ago", "2 days ago", "in 4 minutes": the largest unit only (the exact
    time is in the element's title)."""
    if moment is None:
        return ""
    now = timezone.now()
    seconds = (now - moment).total_seconds()
    if abs(seconds) < 60:
        return "just now"
    if seconds < 0:
        return f"in {timeuntil(moment, now=now, depth=1)}"
    return f"{timesince(moment, now=now, depth=1)} ago"


@register.simple_tag
def moment(value: datetime | None, empty: str = "—") -> str:
    """``<time datetime="…" title="exact">3 minutes ago</time>``, or ``empty`` for no time."""
    if value is None:
        return format_html('<span class="muted">{}</span>', empty)
    utc = value.astimezone(tz.utc)
    return format_html('<time datetime="{}" title="{}" data-relative>{}</time>',
                       utc.isoformat().replace("+00:00", "Z"), utc.strftime(EXACT), ago(value))


@register.filter
def exact(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(tz.utc).strftime(EXACT)


@register.filter
def resources(milli: Mapping[str, int] | None) -> str:
    """A request's resources as people read them: "0.5 gpu · 8000 mcpu" (gpu first, quantities
    as the API writes them, no step_run)."""
    shown = [f"{quantity_text(milli[key])} {key}" for key in sorted(milli or {}, key=key_order)
             if milli[key] and key not in UNSHOWN_KEYS]
    return " · ".join(shown) or "nothing"


@register.filter
def quantity(milli: int | None) -> str:
    return "—" if milli is None else quantity_text(milli)
