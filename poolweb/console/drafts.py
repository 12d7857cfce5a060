"""Cards from a configuration document, read leniently: a draft being edited may be incomplete
or invalid (docs/api.md §1 lets a draft be saved so), and its cards must still show what it says, so
that the errors the API reports can be shown at the card they concern.

Defaults are those of docs/api.md §1 (``description ""``, connection name = pool name, quota scope
``*``, priority 0); a pool's execution order is shown in full, as the engine serves it — the
listed connected profiles, then the other connected ones by name. A value that is not a
quantity is shown as written.

A document beyond the limits of §1 (a draft being edited may be) is shown as far as a document at
the limits goes (``_Shown``), so drawing it costs no more.

The draft's cards are compared with the live ones by name: a card is *added*, *changed* (in the
fields that differ) or not marked; live entries the draft no longer has are listed as removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from itertools import islice
from typing import Any

from poolweb.console.cards import (
    Amount, Board, Finding, Link, Mark, PolicyCard, PoolCard, ProfileCard, QuotaLine, Removed, key_order, time_rule_lines,
)
from reconcile import ALL_POOLS, QuantityError, parse_quantity
from reconcile.document import MAX_CONNECTIONS, MAX_KEYS, MAX_POLICIES, MAX_POOLS, MAX_PROFILES, MAX_QUOTAS
from reconcile.document_checks import MAX_ALL_CONNECTIONS, MAX_ALL_QUEUES, MAX_ALL_QUOTAS
from reconcile.document_fields import MAX_LABELS
from reconcile.quantity import quantity_text

_CARD_PATH = re.compile(r"(pools|profiles|policies)\[(\d+)\]")


class _Shown:
    """How much of a document the cards show: what a document at the limits of docs/api.md §1
    holds, so a draft beyond them (its ``too_many`` errors say so) costs no more to draw."""

    def __init__(self) -> None:
        self.left = {"connections": MAX_ALL_CONNECTIONS, "policies": MAX_ALL_QUEUES, "quotas": MAX_ALL_QUOTAS}

    def items(self, raw: Any, most: int, total: str) -> list:
        """The first items of the list ``raw`` (none when it is not a list): at most ``most``, and
        at most what is left of the ``total`` over every card."""
        found = raw[:min(most, self.left[total])] if isinstance(raw, list) else []
        self.left[total] -= len(found)
        return found


def document_board(document: Any) -> Board:
    """The cards of a configuration document (a version's, or a draft), without marks."""
    shown = _Shown()
    profiles = tuple(_profile(i, raw, shown) for i, raw in _entries(document, "profiles", MAX_PROFILES))
    connected: dict[str, list[str]] = {}
    for profile in profiles:
        for link in profile.connections:
            connected.setdefault(link.pool, []).append(profile.name)
    pools = tuple(_pool(i, raw, connected) for i, raw in _entries(document, "pools", MAX_POOLS))
    policies = tuple(_policy(i, raw, shown) for i, raw in _entries(document, "policies", MAX_POLICIES))
    return Board(pools, profiles, policies)


def draft_board(document: Any, live: Board, errors: Iterable[Mapping], warnings: Iterable[Mapping]) -> Board:
    """The draft's cards in editor mode: marked against ``live``, with each error and warning at
    the card its path concerns, and the others in the board's summary."""
    board = document_board(document)
    placed, summary = _placed([*_issues("error", errors), *_issues("warning", warnings)])
    pools = _marked(board.pools, live.pools, placed, "pools")
    profiles = _marked(board.profiles, live.profiles, placed, "profiles")
    policies = _marked(board.policies, live.policies, placed, "policies")
    # An issue at an entry no card shows (an unreadable one) goes to the summary too.
    shown = {(kind, card.index) for kind, cards in (("pools", pools), ("profiles", profiles),
                                                    ("policies", policies)) for card in cards}
    summary += [issue for at, issues in placed.items() if at not in shown for issue in issues]
    removed: list[Removed] = []
    for kind, old, new in (("pool", live.pools, pools), ("profile", live.profiles, profiles),
                           ("policy", live.policies, policies)):
        kept = {card.name for card in new}
        removed += [Removed(kind, card.name) for card in old if card.name not in kept]
    return Board(pools, profiles, policies, editing=True, removed=tuple(removed), issues=tuple(summary))


def _marked(cards: tuple, live: tuple, placed: dict[tuple[str, int], list[Finding]], kind: str) -> tuple:
    before = {card.name: card for card in live}
    return tuple(replace(card, mark=mark(card, before.get(card.name)), issues=tuple(placed.get((kind, card.index), ())))
                 for card in cards)


def mark(card: PoolCard | ProfileCard | PolicyCard, live: PoolCard | ProfileCard | PolicyCard | None) -> Mark | None:
    if live is None:
        return Mark("added")
    fields = tuple(dict.fromkeys(label for label, attribute in card.COMPARED
                                 if getattr(card, attribute) != getattr(live, attribute)))
    return Mark("changed", fields) if fields else None


def _issues(level: str, raw: Iterable[Mapping]) -> list[Finding]:
    return [Finding(level, str(i.get("path", "")), str(i.get("message", ""))) for i in raw if isinstance(i, Mapping)]


def _placed(issues: list[Finding]) -> tuple[dict[tuple[str, int], list[Finding]], list[Finding]]:
    placed: dict[tuple[str, int], list[Finding]] = {}
    summary = []
    for issue in issues:
        found = _CARD_PATH.match(issue.path)
        if found:
            placed.setdefault((found[1], int(found[2])), []).append(issue)
        else:
            summary.append(issue)
    return placed, summary


# Lenient readers: whatever the entry holds, a card (never an exception).


def _entries(document: Any, kind: str, most: int) -> list[tuple[int, Mapping]]:
    items = document.get(kind) if isinstance(document, Mapping) else None
    if not isinstance(items, list):
        return []
    return [(i, item) for i, item in enumerate(items[:most]) if isinstance(item, Mapping)]


def _pool(index: int, raw: Mapping, connected: Mapping[str, list[str]]) -> PoolCard:
    name = _text(raw.get("name"))
    profiles = connected.get(name, [])
    written = raw.get("execution_order")
    listed = [p for p in dict.fromkeys(_names(written[:MAX_PROFILES] if isinstance(written, list) else ()))
              if p in profiles]
    order = (*listed, *sorted(set(profiles) - set(listed)))
    return PoolCard(index, name, _text(raw.get("description")), _amounts(raw.get("capacity")), order,
                    display_name=_display_name(raw, name), labels=_labels(raw.get("labels")))


def _profile(index: int, raw: Mapping, shown: _Shown) -> ProfileCard:
    links = []
    for connection in shown.items(raw.get("connections"), MAX_CONNECTIONS, "connections"):
        if isinstance(connection, Mapping):
            pool = _text(connection.get("pool"))
            links.append(Link(pool, _text(connection.get("name")) or pool))
    name = _text(raw.get("name"))
    return ProfileCard(index, name, _text(raw.get("description")), _amounts(raw.get("resources")),
                       raw.get("dynamic") is True, tuple(links),
                       _names(shown.items(raw.get("policies"), MAX_POLICIES, "policies")),
                       display_name=_display_name(raw, name))


def _policy(index: int, raw: Mapping, shown: _Shown) -> PolicyCard:
    quotas = tuple(QuotaLine(_text(q.get("scope", ALL_POOLS)), _text(q.get("key")), _quantity(q.get("reserved")),
                             _quantity(q.get("limit")))
                   for q in shown.items(raw.get("quotas"), MAX_QUOTAS, "quotas") if isinstance(q, Mapping))
    name = _text(raw.get("name"))
    return PolicyCard(index, name, _text(raw.get("description")), _text(raw.get("group")),
                      _text(raw.get("priority", 0)), quotas, display_name=_display_name(raw, name),
                      time_rules=time_rule_lines(raw))


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    """A pool's labels as written, by key; none when they are not an object (its error says so)."""
    if not isinstance(raw, Mapping):
        return ()
    return tuple(sorted((_text(key), _text(value)) for key, value in islice(raw.items(), MAX_LABELS * 2)))


def _display_name(raw: Mapping, name: str) -> str:
    """As the document reads it: "" when absent or the name itself."""
    shown = _text(raw.get("display_name"))
    return "" if shown == name else shown


def _amounts(raw: Any) -> tuple[Amount, ...]:
    if not isinstance(raw, Mapping):
        return ()
    shown = ((str(key), _quantity(value)) for key, value in islice(raw.items(), MAX_KEYS))
    return tuple(Amount(key, text) for key, text in sorted(shown, key=lambda a: key_order(a[0])) if text != "0")


def _quantity(raw: Any) -> str | None:
    if raw is None:
        return None
    try:
        return quantity_text(parse_quantity(raw))
    except (QuantityError, ValueError, ArithmeticError):
        return str(raw)


def _text(raw: Any) -> str:
    return raw if isinstance(raw, str) else ("" if raw is None else str(raw))


def _names(raw: Any) -> tuple[str, ...]:
    return tuple(_text(item) for item in raw) if isinstance(raw, (list, tuple)) else ()
