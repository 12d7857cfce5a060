"""The rule tables' cases have distinct names: a failing case is found by its name, and pytest
would only number a second one of the same name."""

from __future__ import annotations

import pytest

from tests.reconcile import test_order, test_preemption


@pytest.mark.parametrize("table", [test_order.CASES, test_preemption.CASES], ids=["order", "preemption"])
def test_every_case_of_a_rule_table_has_a_distinct_name(table):
    names = [case.name for case in table]
    assert len(names) == len(set(names))
