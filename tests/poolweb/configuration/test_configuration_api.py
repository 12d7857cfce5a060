"""The configuration API (api.md §2): S-12, versions, preview, validation errors, hostile bodies,
the management switch and who may call it."""

from __future__ import annotations

import copy
import json

import pytest
from drf_spectacular.generators import SchemaGenerator

from poolweb.models import (
    ConfigVersion, Connection, Draft, Policy, Pool, Profile, Queue, Quota, Request, SiteState,
)
from tests.poolweb.conftest import request_row, client_for, document

pytestmark = pytest.mark.django_db



API = "/api/v1"
TABLES = (ConfigVersion, Pool, Profile, Connection, Policy, Quota, Queue, Draft, Request, SiteState)


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in TABLES}



def issues(response) -> set[tuple[str, str]]:
    return {(e["path"], e["code"]) for e in response.json()["errors"]}


def test_s12_draft_validate_provision_reset_and_rollback(admin, provisioned):
    v1 = admin.get(f"{API}/config").json()
    # 1. A profile with no connection is saved.
    broken = document()
    broken["profiles"][1]["connections"] = []
    assert admin.put(f"{API}/config/draft", broken, format="json").status_code == 200
    # 2. Validate points at that profile.
    checked = admin.post(f"{API}/config/draft/validate").json()
    assert checked["valid"] is False
    assert [(e["path"], e["code"]) for e in checked["errors"]] == [("profiles[1].connections", "no_connection")]
    # 3. Provision is refused; the live configuration is still version 1.
    refused = admin.post(f"{API}/config/draft/provision")
    assert refused.status_code == 400 and issues(refused) == {("profiles[1].connections", "no_connection")}
    assert admin.get(f"{API}/config").json() == v1
    # 4. Fixed, it provisions as version 2.
    fixed = document()
    fixed["pools"][0]["capacity"] = {"gpu": 16}
    assert admin.put(f"{API}/config/draft", fixed, format="json").status_code == 200
    assert admin.post(f"{API}/config/draft/provision", {"comment": "more h100"}, format="json").json() == {"version": 2}
    live = admin.get(f"{API}/config").json()
    assert (live["version"], live["pools"][0]["capacity"]) == (2, {"gpu": 16})
    # 5. An edited draft is discarded; the live configuration does not move.
    assert admin.put(f"{API}/config/draft", document(pools=[]), format="json").status_code == 200
    assert admin.delete(f"{API}/config/draft").status_code == 204
    assert admin.get(f"{API}/config/draft").status_code == 404
    assert admin.get(f"{API}/config").json() == live
    # 6. Restore version 1 and provision: version 3 is version 1 again.
    restored = admin.post(f"{API}/config/versions/1/restore")
    assert restored.status_code == 200 and restored.json() == {k: v for k, v in v1.items() if k != "version"}
    assert admin.post(f"{API}/config/draft/provision").json() == {"version": 3}
    assert admin.get(f"{API}/config").json() == {**v1, "version": 3}


def test_before_any_provision_the_configuration_is_version_zero_and_empty(admin):
    assert admin.get(f"{API}/config").json() == {"version": 0, "pools": [], "profiles": [], "policies": []}
    assert admin.get(f"{API}/config/versions").json() == {"count": 0, "next": None, "previous": None, "results": []}


def test_the_draft_reads_back_as_written_and_delete_is_idempotent(admin):
    assert admin.get(f"{API}/config/draft").status_code == 404
    doc = document()
    assert admin.put(f"{API}/config/draft", doc, format="json").json() == doc
    assert admin.get(f"{API}/config/draft").json() == doc
    assert [admin.delete(f"{API}/config/draft").status_code for _ in range(2)] == [204, 204]


def test_without_a_draft_validate_preview_and_provision_are_not_found(admin):
    for action in ("validate", "preview", "provision"):
        assert admin.post(f"{API}/config/draft/{action}").status_code == 404


class TestVersions:
    def test_the_list_is_newest_first_with_author_time_and_comment(self, admin, provisioned):
        again = document()
        again["pools"][0]["description"] = "again"  # a draft equal to the live version is not provisioned
        admin.put(f"{API}/config/draft", again, format="json")
        admin.post(f"{API}/config/draft/provision", {"comment": "again"}, format="json")
        page = admin.get(f"{API}/config/versions").json()
        assert page["count"] == 2
        assert [(v["version"], v["number"], v["author"], v["comment"]) for v in page["results"]] == [
            (2, 2, "alice", "again"), (1, 1, "alice", "fixture")]
        assert page["results"][0]["created_at"] >= page["results"][1]["created_at"]

    def test_the_list_is_paginated_and_odd_parameters_are_refused_as_every_list_refuses_them(self, admin, provisioned):
        assert len(admin.get(f"{API}/config/versions?limit=1").json()["results"]) == 1
        assert admin.get(f"{API}/config/versions?limit={10**6}").status_code == 200  # cut to 1000
        for query in ("limit=abc", f"limit={10**30}", "offset=-3", f"offset={10**30}", "limit=0"):
            response = admin.get(f"{API}/config/versions?{query}")
            assert response.status_code == 400
            assert [e["path"] for e in response.json()["errors"]] == [query.split("=")[0]]

    def test_one_version_reads_with_its_number(self, admin, provisioned):
        body = admin.get(f"{API}/config/versions/1").json()
        assert body == {"version": 1, **provisioned.document}

    @pytest.mark.parametrize("number", ["0", "2", str(10**30)])
    def test_an_unknown_version_is_not_found(self, admin, provisioned, number):
        assert admin.get(f"{API}/config/versions/{number}").status_code == 404
        assert admin.post(f"{API}/config/versions/{number}/restore").status_code == 404
        assert not Draft.objects.exists()


def test_preview_shows_a_grant_a_queue_removal_and_an_r57_refusal_and_changes_nothing(admin, provisioned, bob):
    running = request_row(bob, "dev", "job", 1, state="allocated", pool="h100")
    fits = request_row(bob, "dev", "half", 0.5)
    orphan = request_row(bob, "research", "4xgpu", 4)
    draft = document()
    draft["profiles"] = [p for p in draft["profiles"] if p["name"] != "job"]
    draft["profiles"][1]["policies"] = ["dev"]  # 4xgpu loses research
    admin.put(f"{API}/config/draft", draft, format="json")
    before = counts()
    body = admin.post(f"{API}/config/draft/preview").json()
    assert body["valid"] is False
    assert [(e["path"], e["code"]) for e in body["errors"]] == [("profiles", "removal_refused")]
    assert body["refusals"] == [{"kind": "profile", "name": "job", "requests": [running.id],
                                 "message": f"profile job still holds live request(s) {running.id}"}]
    granted = body["granted"]
    assert [(g["id"], g["policy"], g["profile"], g["owner"], g["pool"], g["reason"]) for g in granted] == [
        (fits.id, "dev", "half", "bob", "a100", "Granted")]
    assert [(c["id"], c["reason"], c["pool"]) for c in body["cancelled"]] == [(orphan.id, "QueueRemoved", None)]
    assert (body["preempted"], body["rejected"]) == ([], [])
    usage = {(u["policy"], u["scope"], u["key"]): u for u in body["usage"]}
    assert usage["dev", "*", "gpu"]["before"] == {"usage": 1, "reserved": 4, "limit": 8, "borrowed": 0}
    assert usage["dev", "*", "gpu"]["after"] == {"usage": 1.5, "reserved": 4, "limit": 8, "borrowed": 0}
    assert usage["dev", "a100", "gpu"]["before"] is None
    assert counts() == before
    assert list(Request.objects.order_by("id").values_list("state", flat=True)) == ["allocated", "pending", "pending"]


def test_an_invalid_draft_previews_as_invalid_with_empty_lists(admin):
    broken = document()
    broken["pools"][0]["name"] = "H100"
    admin.put(f"{API}/config/draft", broken, format="json")
    body = admin.post(f"{API}/config/draft/preview").json()
    assert body["valid"] is False
    assert ("pools[0].name", "invalid_name") in {(e["path"], e["code"]) for e in body["errors"]}
    assert body["granted"] == body["usage"] == body["refusals"] == []


def _bad(change) -> dict:
    doc = document()
    change(doc)
    return doc


INVALID_DOCUMENTS = [
    (_bad(lambda d: d["pools"].append({"name": "h100"})), "pools[2].name", "duplicate_name"),
    (_bad(lambda d: d["profiles"][0]["connections"].append({"pool": "v100"})),
     "profiles[0].connections[1].pool", "unknown_pool"),
    (_bad(lambda d: d["profiles"][2]["policies"].append("ops")), "profiles[2].policies[1]", "unknown_policy"),
    (_bad(lambda d: d["policies"][0]["quotas"][0].update(reserved=9)), "policies[0].quotas[0].reserved",
     "reserved_above_limit"),
    (_bad(lambda d: d["profiles"][1].update(resources={"gpu": 32})), "profiles[1].resources", "fits_no_pool"),
    (_bad(lambda d: d["policies"][0]["quotas"][0].update(limit=2, reserved=2)), "profiles[1].policies[0]",
     "exceeds_limit"),
    (_bad(lambda d: d["policies"][0]["quotas"].append({"scope": "a100", "key": "gpu", "reserved": 5})),
     "policies[0].quotas[1].reserved", "reservations_above_capacity"),
    (_bad(lambda d: d["pools"][0].update(execution_order=["half"])), "pools[0].execution_order[0]", "not_connected"),
    (_bad(lambda d: d["pools"][1].update(name="A100")), "pools[1].name", "invalid_name"),
]


@pytest.mark.parametrize(("doc", "path", "code"), INVALID_DOCUMENTS)
def test_an_invalid_draft_is_saved_then_validate_and_provision_name_the_error(admin, provisioned, doc, path, code):
    assert admin.put(f"{API}/config/draft", doc, format="json").status_code == 200
    checked = admin.post(f"{API}/config/draft/validate").json()
    assert checked["valid"] is False and (path, code) in {(e["path"], e["code"]) for e in checked["errors"]}
    before = counts()
    refused = admin.post(f"{API}/config/draft/provision")
    assert refused.status_code == 400 and refused.json()["errors"] == checked["errors"]
    assert counts() == before and admin.get(f"{API}/config").json()["version"] == 1


MALFORMED_BODIES = [
    ("{not json", "", "malformed_json"),
    ('{"pools": [], "profiles": [], "policies": [NaN]}', "", "malformed_json"),
    ('{"pools": [], "profiles": [], "policies": [], "x": 1e400}', "x", "unknown_field"),
    ("[" * 50_000 + "]" * 50_000, "", "malformed_json"),
    (json.dumps([document()]), "", "invalid_type"),
    (json.dumps("x" * 1_000_000), "", "invalid_type"),
    (json.dumps(document(pools=[{"name": "p", "description": "x" * 1_000_000}])), "pools[0].description", "too_long"),
    (json.dumps(document(pools=[{"name": "p" * 1_000_000}])), "pools[0].name", "too_long"),
    (json.dumps(document(pools=[{"name": "p", "capacity": {"gpu": "NaN"}}])), "pools[0].capacity.gpu",
     "invalid_quantity"),
    (json.dumps(document(pools=[{"name": "p", "capacity": {"gpu": 0.0001}}])), "pools[0].capacity.gpu",
     "invalid_quantity"),
    (json.dumps(document(pools=[{"name": "p", "capacity": {"gpu": 10**13}}])), "pools[0].capacity.gpu",
     "invalid_quantity"),
    (json.dumps(document(pools=[{"name": "p", "capacity": {"gpu": -1}}])), "pools[0].capacity.gpu",
     "invalid_quantity"),
    (json.dumps(document(pools=[{"name": "p", "capacity": [1, {"a": [None]}]}])), "pools[0].capacity", "invalid_type"),
    (json.dumps(document(pools=[{"name": "p", "x": {"y": [[[{"z": "\u0000"}]]]}}])), "pools[0].x", "unknown_field"),
    (json.dumps(document(policies=[{"name": "p", "priority": "high"}])), "policies[0].priority", "invalid_type"),
    (json.dumps(document(policies=[{"name": "p", "priority": 10**9}])), "policies[0].priority", "out_of_range"),
    (json.dumps({"pools": None, "profiles": 3, "policies": "x"}), "pools", "invalid_type"),
    ('{"pools": [{"name": "\\ud800"}], "profiles": [], "policies": []}', "pools[0].name", "invalid_character"),
]


@pytest.mark.parametrize(("body", "path", "code"), MALFORMED_BODIES)
def test_a_malformed_draft_is_refused_naming_the_path_and_nothing_changes(admin, provisioned, body, path, code):
    admin.put(f"{API}/config/draft", document(), format="json")
    before = counts()
    response = admin.put(f"{API}/config/draft", data=body, content_type="application/json")
    assert response.status_code == 400
    assert (path, code) in issues(response)
    assert counts() == before and admin.get(f"{API}/config/draft").json() == document()


@pytest.mark.parametrize(("body", "path", "code"), [
    ("[1]", "", "invalid"),
    ('{"comment": 42}', "comment", "invalid_type"),
    ('{"comment": ["a"]}', "comment", "invalid_type"),
    (json.dumps({"comment": "x" * 501}), "comment", "max_length"),
    ('{"comment": "a\\u0000b"}', "comment", "null_characters_not_allowed"),
    ("{oops", "", "malformed_json"),
])
def test_provision_refuses_a_bad_body_and_keeps_the_draft(admin, provisioned, body, path, code):
    admin.put(f"{API}/config/draft", document(), format="json")
    before = counts()
    response = admin.post(f"{API}/config/draft/provision", data=body, content_type="application/json")
    assert response.status_code == 400 and (path, code) in issues(response)
    assert counts() == before


def test_a_body_over_the_upload_limit_is_refused(admin, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = admin.put(f"{API}/config/draft", data=json.dumps(document()) + " " * 1000,
                         content_type="application/json")
    assert response.status_code == 413 and not Draft.objects.exists()


class TestManagement:
    def test_it_is_enabled_by_default_and_switches(self, admin):
        assert admin.get(f"{API}/management").json() == {"enabled": True}
        assert admin.put(f"{API}/management", {"enabled": False}, format="json").json() == {"enabled": False}
        assert admin.get(f"{API}/management").json() == {"enabled": False}
        assert SiteState.objects.get(pk=1).management_enabled is False

    @pytest.mark.parametrize("body", ['{"enabled": "false"}', '{"enabled": 0}', '{"enabled": null}', "{}",
                                      '{"enabled": [true]}'])
    def test_only_a_real_boolean_is_accepted(self, admin, body):
        response = admin.put(f"{API}/management", data=body, content_type="application/json")
        assert response.status_code == 400 and [e["path"] for e in response.json()["errors"]] == ["enabled"]
        assert admin.get(f"{API}/management").json() == {"enabled": True}

    @pytest.mark.parametrize("body", ["[true]", "true", "{bad"])
    def test_a_body_that_is_not_an_object_is_refused(self, admin, body):
        assert admin.put(f"{API}/management", data=body, content_type="application/json").status_code == 400

    def test_switching_on_grants_what_waited(self, admin, provisioned, bob):
        admin.put(f"{API}/management", {"enabled": False}, format="json")
        waiting = request_row(bob, "dev", "half", 0.5)
        admin.put(f"{API}/management", {"enabled": True}, format="json")
        waiting.refresh_from_db()
        assert waiting.state == "allocated"


ENDPOINTS = [
    ("get", "/config"), ("get", "/config/draft"), ("put", "/config/draft"), ("delete", "/config/draft"),
    ("post", "/config/draft/validate"), ("post", "/config/draft/preview"), ("post", "/config/draft/provision"),
    ("get", "/config/versions"), ("get", "/config/versions/1"), ("post", "/config/versions/1/restore"),
    ("get", "/management"), ("put", "/management"),
]


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_only_admins_may_call_the_configuration_api(method, url, provisioned, bob, carol):
    before = counts()
    assert getattr(client_for(None), method)(f"{API}{url}", {}, format="json").status_code == 401
    for user in (bob, carol):
        assert getattr(client_for(user), method)(f"{API}{url}", {}, format="json").status_code == 403
    assert counts() == before


def test_the_schema_documents_every_configuration_operation_with_its_bodies():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]
    ref = lambda op, code: op["responses"][code]["content"]["application/json"]["schema"]  # noqa: E731
    assert ref(paths["/api/v1/config"]["get"], "200") == {"$ref": "#/components/schemas/ConfigDocument"}
    put = paths["/api/v1/config/draft"]["put"]
    assert put["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/DraftDocumentRequest"}
    assert ref(put, "400") == {"$ref": "#/components/schemas/ErrorsSchema"}
    assert ref(paths["/api/v1/config/draft/preview"]["post"], "200") == {"$ref": "#/components/schemas/PreviewSchema"}
    assert ref(paths["/api/v1/config/versions"]["get"], "200") == {
        "$ref": "#/components/schemas/PaginatedVersionSummaryList"}
    assert set(paths["/api/v1/management"]) == {"get", "put"}
    assert {"pools", "profiles", "policies"} <= set(schema["components"]["schemas"]["DraftDocumentRequest"]["required"])


def test_an_exported_document_provisions_back_through_the_api_unchanged(admin, provisioned):
    live = admin.get(f"{API}/config").json()
    exported = copy.deepcopy(live)
    exported["pools"][0]["description"] = "edited after export"  # one equal to the live one is not provisioned
    admin.put(f"{API}/config/draft", exported, format="json")
    assert admin.post(f"{API}/config/draft/provision").json() == {"version": 2}
    assert admin.get(f"{API}/config").json() == {**exported, "version": 2}
