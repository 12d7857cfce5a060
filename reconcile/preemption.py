"""Victim search (R-43): take candidates in order until the preemptor fits, then give back, newest
choice first, every victim it still fits without — the "reprieve" of Kueue and kube-scheduler.

The preemptor lacks 4 gpu. Candidates in R-42 order hold 1, 2 and 3 gpu: 1+2 is not enough,
1+2+3 is. Walking back, c is needed (1+2 < 4), b is not (1+3 ≥ 4), a then is (3 < 4).

>>> short = {"gpu": 4}
>>> choose_victims(short, [("a", {"gpu": 1}), ("b", {"gpu": 2}), ("c", {"gpu": 3})])
['a', 'c']
>>> choose_victims(short, [("a", {"gpu": 1})]) is None   # not enough: preempt nobody
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

Victim = TypeVar("Victim")


def choose_victims(
    short: Mapping[str, int], candidates: Sequence[tuple[Victim, Mapping[str, int]]]
) -> list[Victim] | None:
    """The victims to evict so that every short amount is freed, or None when all are not enough.

    ``short`` is key → amount lacking; each candidate is (victim, resources it holds).
    """
    lacking = dict(short)
    chosen: list[tuple[Victim, Mapping[str, int]]] = []
    for victim, holds in candidates:
        if all(amount <= 0 for amount in lacking.values()):
            break
        chosen.append((victim, holds))
        for key in lacking:
            lacking[key] -= holds.get(key, 0)
    if any(amount > 0 for amount in lacking.values()):
        return None
    # Reprieve: walk the chosen set backwards, keeping out whoever is not needed.
    kept = []
    for victim, holds in reversed(chosen):
        if all(lacking[key] + holds.get(key, 0) <= 0 for key in lacking):
            for key in lacking:
                lacking[key] += holds.get(key, 0)
        else:
            kept.append(victim)
    return kept[::-1]
