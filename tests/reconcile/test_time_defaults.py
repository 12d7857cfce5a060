"""With none of the time rules' settings used, a pass decides exactly what it decided before
issue 23 (docs/scheduling.md R-47, R-48), except where R-47 mends a decision.

The engine before them is read from git at BASE, the commit this work started from, and loaded
as a package of its own; both engines plan every pass of random worlds (the property tests'),
and their plans must be equal, decision by decision, reason by reason. Left out are the passes
R-47 changes: those where the old engine reclaimed one of the pass's own grants, or ranked two
allocations of one pass by id where the order of the grants differs (and, with management off,
whose positions come from such a pass).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given

from reconcile import Config, Plan, Snapshot, Vector, plan
from reconcile.quota import TermsCache
from tests.reconcile.test_properties import ACTIONS, GRACE, _run, _story, configs

BASE = "d998da61b2ff1e979f4c246adfafc79076a27086"  # main before issue 23
ROOT = Path(__file__).resolve().parents[2]


def _engine_before(tmp: Path):
    """The ``reconcile`` package at BASE, imported as ``reconcile_before``; None without git."""
    target = tmp / "reconcile_before"
    try:
        names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{BASE}:reconcile"],
                               check=True, capture_output=True, text=True).stdout.split()
        target.mkdir(exist_ok=True)
        for name in (n for n in names if n.endswith(".py")):
            text = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:reconcile/{name}"],
                                  check=True, capture_output=True, text=True).stdout
            (target / name).write_text(text)
    except (OSError, subprocess.CalledProcessError):
        return None
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module("reconcile_before")
    finally:
        sys.path.remove(str(tmp))


@pytest.fixture(scope="module")
def before(tmp_path_factory):
    engine = _engine_before(tmp_path_factory.mktemp("engine"))
    if engine is None:
        pytest.skip(f"the engine at {BASE[:7]} cannot be read from git here")
    return engine


def _as_before(value, old):
    """A value of this engine as the old engine's: the same fields, less those it did not have."""
    if isinstance(value, Vector):
        return old.Vector(dict(value))
    if isinstance(value, enum.Enum):
        return getattr(old, type(value).__name__)(value.value)
    if isinstance(value, tuple):
        return tuple(_as_before(v, old) for v in value)
    if dataclasses.is_dataclass(value):
        kind = getattr(old, type(value).__name__)
        known = {f.name for f in dataclasses.fields(kind)}
        return kind(**{f.name: _as_before(getattr(value, f.name), old) for f in dataclasses.fields(value)
                       if f.name in known})
    return value


def _said(result) -> tuple:
    """A plan as plain values: every decision (without the grant's order) and every wait."""
    decisions = tuple((d.request_id, str(d.state), str(d.reason), d.message, str(d.from_state), d.pool,
                       d.preempted_by) for d in result.decisions())
    waits = {i: (str(w.reason), w.message, w.position, w.pool) for i, w in result.waiting.items()}
    return decisions, waits


def _mended_by_r47(snapshot: Snapshot, old_plan, before) -> bool:
    if not snapshot.management_enabled:  # positions are those of the pass as if it were on (decision 120)
        old_plan = before.plan(_as_before(dataclasses.replace(snapshot, management_enabled=True), before))
    granted = {d.request_id for d in old_plan.grants}
    if any(d.request_id in granted for d in old_plan.preemptions):
        return True
    by_time: dict[object, list] = {}  # borrowing ranks a policy's allocations, R-42 every victim's
    for r in snapshot.requests:
        if r.state.live:
            by_time.setdefault(r.allocated_at, []).append(r)
    return any(sorted(g, key=lambda r: r.id) != sorted(g, key=lambda r: (r.grant_order, r.id))
               for g in by_time.values() if len(g) > 1)


@given(config=configs(), actions=ACTIONS, grace=GRACE)
def test_without_the_time_settings_every_pass_decides_as_before(before, config: Config, actions: list[tuple],
                                                               grace: timedelta):
    _story(config)

    def check(snapshot: Snapshot, kept: TermsCache) -> None:
        old_snapshot = _as_before(snapshot, before)
        old_plan = before.plan(old_snapshot)
        if _mended_by_r47(snapshot, old_plan, before):
            return
        assert _said(plan(snapshot, kept)) == _said(old_plan)

    _run(config, actions, grace, check)


def test_the_comparison_sees_a_difference(before):
    """The property above can fail: R-47's own example decides otherwise in the two engines."""
    from tests.reconcile.test_preemption import TAKEN_BACK_AT_ONCE

    assert _said(plan(TAKEN_BACK_AT_ONCE)) != _said(before.plan(_as_before(TAKEN_BACK_AT_ONCE, before)))
    assert _mended_by_r47(TAKEN_BACK_AT_ONCE, before.plan(_as_before(TAKEN_BACK_AT_ONCE, before)), before)
