"""The worked example at the top of every reconcile module must stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import reconcile

MODULES = sorted(m.name for m in pkgutil.iter_modules(reconcile.__path__, "reconcile."))


@pytest.mark.parametrize("name", MODULES)
def test_the_module_examples_hold(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_every_module_opens_with_a_worked_example():
    without = [name for name in MODULES if ">>>" not in (importlib.import_module(name).__doc__ or "")
               and name not in ("reconcile.model", "reconcile.plan", "reconcile.groups")]
    assert without == []
