"""selectors.configuration: the live configuration read from its version's rows, as the console's
configuration page shows it."""

from __future__ import annotations

import pytest

from poolweb.selectors.configuration import ConnectionView, PolicyView, PoolView, QuotaView, live_configuration
from poolweb.services import config as config_services
from tests.poolweb.conftest import document, request_row

pytestmark = pytest.mark.django_db


def test_before_any_provision_it_is_version_zero_and_empty(db):
    view = live_configuration()
    assert (view.version, view.author, view.pools, view.profiles, view.policies) == (0, None, (), (), ())


def test_it_reads_the_rows_of_the_live_version_in_document_order(alice, provisioned):
    doc = document()
    doc["pools"][0]["execution_order"] = ["job"]
    doc["profiles"][1]["connections"] = [{"pool": "h100", "name": "4 × H100"}, {"pool": "a100"}]
    doc["profiles"][1]["policies"] = ["research", "dev"]
    config_services.config_provision_document(document=doc, author=alice, comment="second")

    view = live_configuration()

    assert (view.version, view.author, view.comment) == (2, "alice", "second")
    assert view.pools == (PoolView("h100", "", {"gpu": 8000}, ("job", "4xgpu")),
                          PoolView("a100", "", {"gpu": 4000}, ("4xgpu", "half")))
    four = view.profiles[1]
    assert (four.name, four.resources, four.dynamic) == ("4xgpu", {"gpu": 4000}, False)
    assert four.connections == (ConnectionView("h100", "4 × H100"), ConnectionView("a100", "a100"))
    assert four.policies == ("research", "dev")
    assert view.profiles[2].dynamic is True
    assert view.policies == (
        PolicyView("dev", "", "dev", 0, (QuotaView("*", "gpu", 4000, 8000),)),
        PolicyView("research", "", "research", 10, (QuotaView("*", "gpu", 4000, 12000),)),
    )


def test_it_counts_each_profiles_queued_and_running_requests(alice, bob, provisioned):
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    request_row(bob, "dev", "half", 0.5, state="preempting", pool="a100")
    request_row(bob, "dev", "half", 0.5)
    request_row(bob, "dev", "4xgpu", 4)
    request_row(bob, "dev", "half", 0.5, state="released")

    counts = {p.name: (p.pending, p.running) for p in live_configuration().profiles}

    assert counts == {"half": (1, 2), "4xgpu": (1, 0), "job": (0, 0)}


def test_it_takes_a_fixed_handful_of_queries(alice, provisioned, django_assert_num_queries):
    big = document()
    big["pools"] += [{"name": f"p{i}", "capacity": {"gpu": 1}} for i in range(20)]
    config_services.config_provision_document(document=big, author=alice)
    with django_assert_num_queries(8):
        assert len(live_configuration().pools) == 22
