"""Template filters and tags of the console (``{% load console %}``).

Times are shown relative ("3 minutes ago", "in 4 minutes") in a ``<time>`` whose title is the
exact time; static/console/times.js keeps the relative text current with the same wording, so a
time reads the same whether the server rendered it or a live update wrote it.

The rows a configuration has thousands of — a card's ordered items and quota rows, a policy's
usage rows — are written by tags here rather than by partials: one speed trick, in one place,
measured in bench/config_pages.py (decision 93).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone as tz
from html import escape as html_escape
from typing import TYPE_CHECKING

from django import template
from django.conf import settings
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince, timeuntil

from poolweb.console.cards import Link, QuotaLine, resources_text
from reconcile import ALL_POOLS
from reconcile.eta import BASIS_TEXT, confidence
from reconcile.quantity import quantity_text

if TYPE_CHECKING:
    from poolweb.console.policy_pages import PolicyView

register = template.Library()


def escape(value: object) -> str:
    """Django's ``escape`` without its lazy-string wrapper, which doubled the cost of the tags below
    that call it thousands of times a page."""
    return html_escape(str(value))

EXACT = "%Y-%m-%d %H:%M:%S UTC"  # the title of every <time>, as times.js writes it


@register.simple_tag
def oidc_provider():
    """The OpenID Connect provider (``settings.OIDC``), or None: the admin's sign-in page offers it."""
    return settings.OIDC


@register.filter
def ago(at: datetime | None) -> str:
    """"just now", "3 minutes ago", "2 days ago", "in 4 minutes": the largest unit only (the exact
    time is in the element's title)."""
    if at is None:
        return ""
    now = timezone.now()
    seconds = (now - at).total_seconds()
    if abs(seconds) < 60:
        return "just now"
    if seconds < 0:
        return f"in {timeuntil(at, now=now, depth=1)}"
    return f"{timesince(at, now=now, depth=1)} ago"


@register.simple_tag
def time_ago(value: datetime | None, empty: str = "—") -> str:
    """``<time datetime="…" title="exact">3 minutes ago</time>``, or ``empty`` for no time."""
    if value is None:
        return format_html('<span class="muted">{}</span>', empty)
    utc = value.astimezone(tz.utc)
    return format_html('<time datetime="{}" title="{}" data-relative>{}</time>',
                       utc.isoformat().replace("+00:00", "Z"), utc.strftime(EXACT), ago(value))


@register.filter
def shown(name: str | None, labels: Mapping[str, str] | None) -> str | None:
    """A pool's, profile's or policy's name as people read it (its display name), from ``labels``
    (selectors.versions.display_names); the name itself when it has none or is not live."""
    return (labels or {}).get(name, name) if name else name


@register.filter
def exact(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(tz.utc).strftime(EXACT)


@register.filter
def resources(milli: Mapping[str, int] | None) -> str:
    return resources_text(milli)


@register.filter
def quantity(milli: int | None) -> str:
    return "—" if milli is None else quantity_text(milli)


# The items of a card's ordered list, as order.js and lines.js read them: ``data-item`` names the
# pool, profile or policy; ``.item-text`` starts with what people call it.
_ITEM = ('<li data-item="{item}" aria-label="{item}"{drag} class="order-item"><span class="place" aria-hidden="true">'
         '{place}</span>{grip}<span class="item-text">{text}</span>{actions}</li>')
_GRIP = '<span class="grip" aria-hidden="true" title="Drag to reorder">⋮⋮</span>'
_MOVE = ('<button type="button" class="icon-button small" data-move="{way}" aria-label="Move {item} {way}"{off}>'
         '<svg aria-hidden="true" viewBox="0 0 20 20"><path d="{path}"/></svg></button>')
_UP, _DOWN = "M10 15V5m-4 4 4-4 4 4", "M10 5v10m-4-4 4 4 4-4"
_DISCONNECT = ('<button type="button" class="icon-button small danger" data-action="disconnect" data-index="{owner}" '
               'data-pool="{item}" aria-label="Disconnect {name}" title="Disconnect {name}"><svg aria-hidden="true" '
               'viewBox="0 0 20 20"><path d="M6 6l8 8M14 6l-8 8"/></svg></button>')


@register.simple_tag
def order_items(entries: Sequence[str | Link], editing: bool, owner: int | None = None,
                labels: Mapping[str, str] | None = None) -> SafeString:
    """The ``<li>`` of an ordered list of a card: an execution order or a policy rank (names, shown
    by their ``labels``), or a profile's pools (``Link``: its name shown, and in the editor a
    Disconnect button). In the editor each item is draggable, with Move up and Move down.

    Written here, not in a partial: at the limits of docs/api.md §1 the configuration page has
    9,000 items and the editor's board as many, and the template engine spent 20-30 µs on each
    where this spends 3-5 (bench/config_pages.py, decision 93).
    """
    shown = []
    for place, entry in enumerate(entries, 1):
        if isinstance(entry, Link):
            item, name = escape(entry.pool), escape(entry.name)
        else:  # a profile or a policy, shown by its display name with its name beside it
            item, name = escape(entry), escape((labels or {}).get(entry, entry))
        text = name if name == item else f'{name} <span class="muted">{item}</span>'
        actions = ""
        if editing:
            first, last = " disabled" if place == 1 else "", " disabled" if place == len(entries) else ""
            actions = (_MOVE.format(way="up", item=item, off=first, path=_UP)
                       + _MOVE.format(way="down", item=item, off=last, path=_DOWN)
                       + (_DISCONNECT.format(owner=owner, item=item, name=name) if isinstance(entry, Link) else ""))
            actions = f'<span class="item-actions">{actions}</span>'
        shown.append(_ITEM.format(item=item, drag=' draggable="true"' if editing else "", place=place,
                                  grip=_GRIP if editing else "", text=text, actions=actions))
    return mark_safe("".join(shown))  # every value above is escaped


_QUOTA_ROW = '<tr><td>{where}</td><td>{key}</td><td class="num">{reserved}</td><td class="num">{limit}</td></tr>'


@register.simple_tag
def quota_rows(quotas: Sequence[QuotaLine]) -> SafeString:
    """The rows of a policy card's quota table: scope ("all pools" for "*"), key, reserved, limit.

    Written here, not in the card's partial, for the reason ``order_items`` is: the 5,000 rows of
    a configuration at the limits took 75 ms of the template engine's time, 15 ms here.
    """
    return mark_safe("".join(_QUOTA_ROW.format(
        where="all pools" if q.scope == ALL_POOLS else escape(q.scope), key=escape(q.key),
        reserved="—" if q.reserved is None else escape(q.reserved), limit="—" if q.limit is None else escape(q.limit))
        for q in quotas))  # every text above is escaped


# A policy's usage of one scope and key, as policies.js updates it in place (data-scope, data-key,
# data-capacity, data-figure, the bar's parts).
_USAGE_ROW = (
    '<tr data-scope="{scope}" data-key="{key}"{capacity}{over}><th scope="row">{where}</th><td><code>{key}</code></td>'
    '<td class="bar-col"><span class="bar policy-bar" role="meter" aria-label="{key} used by {policy} on {where}" '
    'aria-valuemin="0" aria-valuemax="100" aria-valuenow="{filled}" aria-valuetext="{meter}">'
    '<span class="bar-fill within" style="width: {within}%"></span>'
    '<span class="bar-fill beyond" style="left: {within}%; width: {beyond}%"></span>'
    '<span class="reserved-mark" style="left: {reserved_at}%"{hidden}></span></span></td>'
    '<td class="num" data-figure="usage"><b>{usage}</b></td><td class="num" data-figure="reserved">{reserved}</td>'
    '<td class="num" data-figure="limit">{limit}</td><td class="num" data-figure="borrowed">{borrowed}</td>'
    '<td class="num" data-figure="pending">{pending}</td><td class="num" data-figure="running">{running}</td></tr>')


@register.simple_tag
def usage_rows(policy: PolicyView) -> SafeString:
    """The rows of a policy's usage table on /policies/, one per scope and key.

    Written here, not in the partial, for the reason ``order_items`` is: at the limits the page
    has 5,000 rows of 20 figures each, 0.5-0.8 s of the template engine's time, 40 ms here
    (bench/config_pages.py, decision 93).
    """
    def text(value: object) -> str:
        return "—" if value is None else escape(value)

    return mark_safe("".join(_USAGE_ROW.format(
        scope=escape(bar.scope), key=escape(bar.key), where=escape(bar.scope_text), policy=escape(policy.state.name),
        capacity=f' data-capacity="{escape(bar.capacity)}"' if bar.capacity else "",
        over=' class="is-over"' if bar.over else "", filled=bar.filled, meter=escape(bar.meter_text),
        within=bar.within, beyond=bar.beyond, reserved_at=0 if bar.reserved_at is None else bar.reserved_at,
        hidden=" hidden" if bar.reserved_at is None else "", usage=escape(bar.usage), reserved=text(bar.reserved),
        limit=text(bar.limit), borrowed=escape(bar.borrowed), pending=bar.pending, running=bar.running)
        for bar in policy.bars))  # every text above is escaped


@register.simple_tag
def starts(state: str, eta: datetime | str | None, basis: str | None) -> SafeString:
    """R-54: a pending request's estimated start, small: "starts ≈ 14:20 UTC (run limits, high)",
    the date too when not today, named for assistive technology; "start unknown" when no end known
    frees its room; nothing before its first pass or unless pending. ``eta``: a datetime (a row) or
    the API's text (a request object)."""
    if state != "pending" or not basis:
        return mark_safe("")
    if isinstance(eta, str):
        eta = datetime.fromisoformat(eta.replace("Z", "+00:00"))
    if eta is None:
        return mark_safe('<span class="eta muted" role="note" aria-label="Estimated start: unknown">start unknown</span>')
    eta = eta.astimezone(tz.utc)
    when = eta.strftime("%H:%M" if eta.date() == timezone.now().astimezone(tz.utc).date() else "%Y-%m-%d %H:%M")
    sureness = confidence(basis)
    return format_html(
        '<span class="eta" role="note" aria-label="Estimated start: {} UTC, from {}, {} confidence" title="{}">'
        'starts ≈ {} UTC <span class="eta-basis">({}, {})</span></span>',
        when, BASIS_TEXT.get(basis, basis), sureness, eta.strftime(EXACT), when, BASIS_TEXT.get(basis, basis), sureness)
