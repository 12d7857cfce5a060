"""selectors.configuration: the live version as the console's configuration page shows it — who
provisioned it, its configuration as read from its rows, each profile's queued and running."""

from __future__ import annotations

import pytest

from poolweb.selectors.configuration import live_configuration
from poolweb.services import config as config_services
from tests.poolweb.conftest import document, request_row

pytestmark = pytest.mark.django_db


def test_before_any_provision_it_is_version_zero_and_empty(db):
    view = live_configuration()
    assert (view.version, view.author, view.config.pools, view.pending) == (0, None, (), {})


def test_it_is_the_live_version_with_its_orders_and_names(alice, provisioned):
    doc = document()
    doc["pools"][0]["execution_order"] = ["job"]
    doc["profiles"][1]["connections"] = [{"pool": "h100", "name": "4 × H100"}, {"pool": "a100"}]
    doc["profiles"][1]["policies"] = ["research", "dev"]
    config_services.config_provision_document(document=doc, author=alice, comment="second")

    view = live_configuration()

    assert (view.version, view.author, view.comment) == (2, "alice", "second")
    assert [(p.name, p.execution_order) for p in view.config.pools] == [("h100", ("job", "4xgpu")),
                                                                        ("a100", ("4xgpu", "half"))]
    four = view.config.profiles[1]
    assert (four.pools, four.connection_names, four.policies) == (("h100", "a100"), ("4 × H100", "a100"),
                                                                  ("research", "dev"))


def test_it_counts_each_profiles_queued_and_running_requests(alice, bob, provisioned):
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    request_row(bob, "dev", "half", 0.5, state="preempting", pool="a100")
    request_row(bob, "dev", "half", 0.5)
    request_row(bob, "dev", "4xgpu", 4)
    request_row(bob, "dev", "half", 0.5, state="released")

    view = live_configuration()

    assert (view.pending, view.running) == ({"half": 1, "4xgpu": 1}, {"half": 2})


def test_it_takes_a_fixed_handful_of_queries(alice, provisioned, django_assert_num_queries):
    big = document()
    big["pools"] += [{"name": f"p{i}", "capacity": {"gpu": 1}} for i in range(20)]
    config_services.config_provision_document(document=big, author=alice)
    live_configuration()  # the version's rows are read once, then kept
    with django_assert_num_queries(2):  # the site row with its version and author, the counts
        assert len(live_configuration().config.pools) == 22
