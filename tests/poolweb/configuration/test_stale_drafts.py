"""The draft's base version and the diff between versions (decision 43): a draft saved with
``?base_version=N`` is refused with 409 once another version is live, unless ``confirm_stale``;
a draft saved without one behaves as before; ``/config/versions/{a}/diff/{b}`` says what changed."""

from __future__ import annotations

import pytest

from poolweb.models import ConfigVersion, Draft
from poolweb.services import config as config_services
from tests.poolweb.conftest import document

pytestmark = pytest.mark.django_db

API = "/api/v1"


def more_h100() -> dict:
    doc = document()
    doc["pools"][0]["capacity"] = {"gpu": 16}
    return doc


def someone_else_provisions(alice, doc: dict) -> int:
    return config_services.config_provision_document(document=doc, author=alice, comment="meanwhile").number


def info(admin) -> dict:
    body = admin.get(f"{API}/config/draft/info").json()
    return {key: body[key] for key in ("exists", "base_version", "based_on", "live_version", "stale", "updated_by")}


def test_a_draft_made_from_the_live_version_provisions(admin, provisioned):
    assert admin.put(f"{API}/config/draft?base_version=1", more_h100(), format="json").status_code == 200
    assert info(admin) == {"exists": True, "base_version": 1, "based_on": 1, "live_version": 1, "stale": False,
                           "updated_by": "alice"}
    assert admin.post(f"{API}/config/draft/provision", {"comment": "more"}, format="json").json() == {"version": 2}


def test_a_stale_draft_is_refused_with_what_changed_until_the_admin_confirms(admin, alice, provisioned):
    admin.put(f"{API}/config/draft?base_version=1", document(pools=document()["pools"][::-1]), format="json")
    assert someone_else_provisions(alice, more_h100()) == 2
    assert info(admin)["stale"] is True

    refused = admin.post(f"{API}/config/draft/provision", {"comment": "mine"}, format="json")

    assert refused.status_code == 409
    body = refused.json()
    assert (body["code"], body["base_version"], body["live_version"]) == ("stale_draft", 1, 2)
    assert "version 1" in body["detail"] and "version 2" in body["detail"]
    assert body["changes"] == [{"kind": "pool", "name": "h100", "action": "changed",
                                "text": "pool h100 changed: capacity.gpu 8 → 16",
                                "fields": [{"field": "capacity.gpu", "before": 8, "after": 16}]}]
    assert ConfigVersion.objects.count() == 2 and Draft.objects.exists()

    confirmed = admin.post(f"{API}/config/draft/provision", {"comment": "mine", "confirm_stale": True}, format="json")
    assert confirmed.json() == {"version": 3}


def test_a_draft_made_from_nothing_is_stale_once_a_version_exists(admin, alice):
    admin.put(f"{API}/config/draft?base_version=0", document(), format="json")
    someone_else_provisions(alice, document())

    body = admin.post(f"{API}/config/draft/provision").json()

    assert (body["base_version"], body["live_version"]) == (0, 1)
    assert [(c["kind"], c["name"], c["action"]) for c in body["changes"]][:2] == [
        ("pool", "h100", "added"), ("pool", "a100", "added")]


def test_a_draft_saved_without_a_base_is_never_stale(admin, alice, provisioned):
    admin.put(f"{API}/config/draft?base_version=1", document(), format="json")
    admin.put(f"{API}/config/draft", more_h100(), format="json")  # saving without one clears it
    someone_else_provisions(alice, document(policies=document()["policies"][::-1]))

    assert info(admin)["base_version"] is None and info(admin)["stale"] is False
    assert admin.post(f"{API}/config/draft/provision").json() == {"version": 3}


def test_restoring_makes_a_draft_from_the_live_version(admin, alice, provisioned):
    someone_else_provisions(alice, more_h100())

    admin.post(f"{API}/config/versions/1/restore")

    assert info(admin) == {"exists": True, "base_version": 2, "based_on": 1, "live_version": 2, "stale": False,
                           "updated_by": "alice"}
    assert admin.post(f"{API}/config/draft/provision").json() == {"version": 3}


@pytest.mark.parametrize("query, code", [
    ("abc", "invalid"), ("-1", "invalid"), ("1.5", "invalid"), ("", "invalid"), (str(10**12), "invalid"),
    ("2", "unknown_version"),
])
def test_a_bad_base_version_is_refused_naming_it_and_leaves_the_draft(admin, provisioned, query, code):
    admin.put(f"{API}/config/draft?base_version=1", document(), format="json")

    refused = admin.put(f"{API}/config/draft?base_version={query}", more_h100(), format="json")

    assert refused.status_code == 400
    assert [(e["path"], e["code"]) for e in refused.json()["errors"]] == [("base_version", code)]
    assert admin.get(f"{API}/config/draft").json() == document() and info(admin)["base_version"] == 1


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_confirm_stale_is_a_boolean(admin, provisioned, value):
    admin.put(f"{API}/config/draft", document(), format="json")
    refused = admin.post(f"{API}/config/draft/provision", {"confirm_stale": value}, format="json")
    assert refused.status_code == 400 and refused.json()["errors"][0]["path"] == "confirm_stale"
    assert ConfigVersion.objects.count() == 1


def test_without_a_draft_the_info_says_so(admin, provisioned):
    assert info(admin) == {"exists": False, "base_version": None, "based_on": None, "live_version": 1,
                           "stale": False, "updated_by": None}


class TestDiff:
    def test_it_lists_each_change_field_by_field_with_a_summary(self, admin, alice, provisioned):
        doc = more_h100()
        doc["profiles"][1]["connections"].reverse()
        doc["policies"].pop()
        doc["profiles"] = [{**p, "policies": [x for x in p["policies"] if x != "research"]} for p in doc["profiles"]]
        someone_else_provisions(alice, doc)

        body = admin.get(f"{API}/config/versions/1/diff/2").json()

        assert (body["before"], body["after"]) == (1, 2)
        assert body["summary"] == "changed pool h100 and profiles half, 4xgpu; removed policy research"
        assert [(c["name"], c["action"], [f["field"] for f in c["fields"]]) for c in body["changes"]] == [
            ("h100", "changed", ["capacity.gpu"]),
            ("half", "changed", ["policies"]),
            ("4xgpu", "changed", ["connections", "policies"]),
            ("research", "removed", ["description", "group", "priority", "quotas[*/gpu].reserved",
                                     "quotas[*/gpu].limit"]),
        ]
        assert body["changes"][2]["fields"][0] == {"field": "connections", "before": ["h100", "a100"],
                                                   "after": ["a100", "h100"]}

    def test_a_version_against_itself_and_against_nothing(self, admin, provisioned):
        assert admin.get(f"{API}/config/versions/1/diff/1").json()["changes"] == []
        body = admin.get(f"{API}/config/versions/0/diff/1").json()
        assert body["summary"] == "added pools h100, a100, profiles half, 4xgpu, job and policies dev, research"
        half = body["changes"][2]
        assert half["fields"][1] == {"field": "resources.gpu", "before": None, "after": 0.5}

    @pytest.mark.parametrize("path", ["1/diff/2", "2/diff/1", f"1/diff/{10**30}"])
    def test_an_unknown_version_is_not_found(self, admin, provisioned, path):
        response = admin.get(f"{API}/config/versions/{path}")
        assert response.status_code == 404 and "version" in response.json()["detail"]
