"""The worked example at the top of every reconcile module must stay true.

Every example runs with the names that ``reconcile`` exports, ``datetime``, ``timedelta``,
``timezone`` and ``t0`` (1 January 2026, UTC) in scope, as reconcile/__init__.py says, so the
examples show the rule at hand rather than the same imports again and again."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from datetime import datetime, timedelta, timezone

import pytest

import reconcile

MODULES = sorted(m.name for m in pkgutil.iter_modules(reconcile.__path__, "reconcile."))
EXAMPLE_NAMES = {
    **{name: getattr(reconcile, name) for name in reconcile.__all__},
    "datetime": datetime, "timedelta": timedelta, "timezone": timezone,
    "t0": datetime(2026, 1, 1, tzinfo=timezone.utc),
}


@pytest.mark.parametrize("name", MODULES)
def test_the_module_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), extraglobs=EXAMPLE_NAMES, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_every_module_opens_with_a_worked_example():
    without = [name for name in MODULES if ">>>" not in (importlib.import_module(name).__doc__ or "")
               and name not in ("reconcile.plan", "reconcile.groups")]
    assert without == []
