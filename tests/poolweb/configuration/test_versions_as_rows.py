"""A provisioned version is stored as its document and as rows; the engine reads the rows
(selectors/versions.py). Both must say the same configuration."""

from __future__ import annotations

import pytest

from poolweb.selectors.versions import ENGINE_VERSIONS, config_from_rows, live_config
from poolweb.services import config as services
from poolweb.services.demo import demo_document
from reconcile.document import parse_document
from tests.poolweb.conftest import document
from tests.poolweb.largest import largest_document

pytestmark = pytest.mark.django_db


def orders_and_names() -> dict:
    """Orders that are not name order, connection names, a description, several quota rows."""
    doc = document()
    doc["pools"][0].update(description="the big one", execution_order=["job", "4xgpu"],
                           labels={"slurm_partition": "gpu", "rack": "b7"})
    doc["profiles"][1]["connections"] = [{"pool": "a100", "name": "4 × A100"}, {"pool": "h100", "name": "4 × H100"}]
    doc["profiles"][1]["policies"] = ["research", "dev"]
    doc["policies"][1]["quotas"] += [{"scope": "h100", "key": "gpu", "limit": 8}, {"scope": "a100", "key": "gpu",
                                                                                   "reserved": 1}]
    return doc


@pytest.mark.parametrize("doc", [document(), demo_document(), orders_and_names(), largest_document()],
                         ids=["tests", "demo", "orders", "at the limits"])
def test_the_rows_of_a_version_are_the_configuration_its_document_says(alice, doc):
    version = services.config_provision_document(document=doc, author=alice)
    assert config_from_rows(version) == parse_document(version.document).config


def test_the_live_configuration_is_read_once_per_version(alice, django_assert_num_queries):
    services.config_provision_document(document=document(), author=alice)
    ENGINE_VERSIONS._kept.clear()
    with django_assert_num_queries(8):  # the site row, its version (decision 110), the six kinds of rows
        live_config()
    with django_assert_num_queries(2):  # the site row and its version, which is kept
        live_config()


def test_a_version_keeps_what_it_changed_against_the_one_before(alice):
    services.config_provision_document(document=document(), author=alice)
    services.config_provision_document(document=document(pools=[{"name": "h100", "capacity": {"gpu": 9}},
                                                                 {"name": "a100", "capacity": {"gpu": 4}}]), author=alice)
    assert [v.summary for v in services.ConfigVersion.objects.order_by("number")][1] == "changed pool h100"


def test_the_versions_list_reads_no_document(alice, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for gpu in (8, 9, 10):
        services.config_provision_document(document=document(pools=[{"name": "h100", "capacity": {"gpu": gpu}},
                                                                    {"name": "a100", "capacity": {"gpu": 4}}]), author=alice)
    client.force_login(alice)
    with CaptureQueriesContext(connection) as seen:
        page = client.get("/versions/")
        listed = client.get("/api/v1/config/versions")
    assert page.status_code == 200 and "changed pool h100" in page.content.decode()
    assert [v["summary"] for v in listed.json()["results"]][:1] == ["changed pool h100"]
    assert not [q["sql"] for q in seen.captured_queries if '"document"' in q["sql"] and "configversion" in q["sql"]]
