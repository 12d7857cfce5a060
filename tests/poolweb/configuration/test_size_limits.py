"""A configuration's size is bounded (docs/api.md §1, decision 93) — past a limit
the document is refused naming the field, even as a draft — and the pages that show the whole
configuration render at the limits. How fast they render is bench/config_pages.py's to say."""

from __future__ import annotations

import copy
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from poolweb.models import ConfigVersion, Draft
from poolweb.services import config as config_services
from tests.poolweb.conftest import client_for, document, request_row, signed_in
from tests.poolweb.largest import largest_document

pytestmark = pytest.mark.django_db


def beyond(limit: str) -> dict:
    """The largest document with one more of ``limit``."""
    doc = largest_document()
    if limit == "pools":
        doc["pools"].append({"name": "one-more", "capacity": {"gpu": 1}})
    elif limit == "connections":
        doc["profiles"][1]["connections"].append({"pool": "pool-199"})
    elif limit == "queues":
        doc["profiles"][1]["policies"].append("team-499")
    else:
        doc["policies"][1]["quotas"].append({"scope": "pool-100", "key": "gpu", "limit": 8})
    return doc


@pytest.mark.parametrize(("limit", "path"), [("pools", "pools"), ("connections", "profiles"),
                                             ("queues", "profiles"), ("quotas", "policies")])
def test_one_more_than_a_limit_is_refused_naming_the_field_even_as_a_draft(alice, limit, path):
    response = client_for(alice).put("/api/v1/config/draft", beyond(limit), format="json")
    assert response.status_code == 400
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [(path, "too_many")]
    with pytest.raises(config_services.ConfigInvalid):
        config_services.config_provision_document(document=beyond(limit))
    assert not Draft.objects.exists() and not ConfigVersion.objects.exists()


def test_every_page_of_the_configuration_renders_at_the_limits(alice):
    doc = largest_document()
    config_services.config_provision_document(document=doc, author=alice)
    changed = copy.deepcopy(doc)
    changed["pools"][0]["capacity"]["gpu"] = 16
    config_services.config_provision_document(document=changed, author=alice)
    client = signed_in(alice)

    pages = {path: client.get(path) for path in ("/", "/versions/2/", "/versions/1/diff/2/", "/queues/", "/policies/")}
    pages["board"] = client.post("/editor/board/", json.dumps({"document": changed, "errors": [], "warnings": []}),
                                 content_type="application/json")

    assert {path: response.status_code for path, response in pages.items()} == dict.fromkeys(pages, 200)
    for path in ("/", "/versions/2/", "board"):
        html = pages[path].content.decode()
        assert html.count("data-pool-card") == 200 and html.count("data-profile-card") == 500
        assert html.count('data-list="connections"') == 500 and html.count("data-policy-card") == 500
    diff = pages["/versions/1/diff/2/"].content.decode()
    assert diff.count('class="card diff-card') == 1 and 'aria-label="Pool pool-000 changed"' in diff
    assert pages["/policies/"].content.decode().count("<tr data-scope=") == 5_000


def test_the_editor_board_draws_a_draft_beyond_the_limits_only_as_far_as_they_go(provisioned, alice):
    doc = largest_document()
    doc["pools"] += [{"name": f"extra-{i}", "capacity": {"gpu": 1}} for i in range(100)]
    doc["profiles"][2]["policies"] = [f"team-{i:03d}" for i in range(500)]  # 5,491 queues in all
    response = signed_in(alice).post("/editor/board/", json.dumps({"document": doc}), content_type="application/json")
    html = response.content.decode()
    assert response.status_code == 200 and html.count("data-pool-card") == 200
    assert html.count('class="order-item"') == 2_000 + 2_000 + 5_000  # connections both ends, and queues


def test_the_editor_board_shows_as_many_findings_as_the_api_gives_at_most(provisioned, alice):
    warnings = [{"path": "", "message": f"finding {n}"} for n in range(10_000)]
    body = json.dumps({"document": document(), "errors": warnings, "warnings": warnings})
    html = signed_in(alice).post("/editor/board/", body, content_type="application/json").content.decode()
    assert html.count('class="issue ') == 2 * 2_000


def test_the_policies_page_reads_the_running_requests_of_every_policy_at_once(alice, bob):
    running = []

    def queries_for(count: int) -> int:
        policies = [{"name": f"team-{i}", "group": "dev"} for i in range(count)]
        doc = document(policies=policies)
        for profile in doc["profiles"]:
            profile["policies"] = [p["name"] for p in policies]
        config_services.config_provision_document(document=doc, author=alice)
        running.extend(request_row(bob, f"team-{i}", "half", 0.5, state="allocated", pool="a100")
                       for i in range(len(running), count))
        client = signed_in(alice)
        client.get("/policies/")  # the version's rows are read once
        with CaptureQueriesContext(connection) as queries:
            html = client.get("/policies/").content.decode()
        assert html.count('<span class="state-chip state-allocated">') == count
        return len(queries)

    assert queries_for(3) == queries_for(30)
