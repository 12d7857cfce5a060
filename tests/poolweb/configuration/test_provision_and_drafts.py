"""The configuration services: provision (R-55…R-57), the draft, validation and restore."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
from django.contrib.auth.models import Group

from poolweb.models import (
    ConfigVersion, Connection, Draft, Policy, Pool, Profile, Queue, Quota, SiteState,
)
from poolweb.selectors import versions
from poolweb.selectors.versions import management_enabled
from poolweb.services import config as services, validation
from reconcile.document import Issue
from tests.poolweb.conftest import request_row, document

pytestmark = pytest.mark.django_db



CONFIG_TABLES = (ConfigVersion, Pool, Profile, Connection, Policy, Quota, Queue, Draft)


def rows() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in CONFIG_TABLES}



def without(doc: dict, kind: str, name: str) -> dict:
    """``doc`` with the named entry of ``kind`` and every reference to it removed."""
    doc = copy.deepcopy(doc)
    doc[kind] = [entry for entry in doc[kind] if entry["name"] != name]
    for profile in doc["profiles"]:
        profile["policies"] = [p for p in profile["policies"] if p != name]
        profile["connections"] = [c for c in profile["connections"] if c["pool"] != name]
    doc["profiles"] = [p for p in doc["profiles"] if p["connections"]]
    return doc


class TestProvision:
    def test_it_writes_the_version_and_its_rows_in_milli_units(self, provisioned, alice):
        assert (provisioned.number, provisioned.author, provisioned.comment) == (1, alice, "fixture")
        assert SiteState.objects.get(pk=1).live_version == provisioned
        assert {p.name: p.capacity for p in provisioned.pools.all()} == {"h100": {"gpu": 8000}, "a100": {"gpu": 4000}}
        half = provisioned.profiles.get(name="half")
        assert (half.resources, half.dynamic) == ({"gpu": 500}, False)
        dev = provisioned.policies.get(name="dev")
        assert (dev.group_name, dev.priority) == ("dev", 0)
        assert list(dev.quotas.values_list("scope", "key", "reserved", "limit")) == [("*", "gpu", 4000, 8000)]

    def test_connections_keep_both_orders_and_queues_keep_the_policy_rank(self, provisioned):
        four = provisioned.profiles.get(name="4xgpu")
        assert [(c.pool.name, c.precedence, c.execution_position) for c in four.connections.order_by("precedence")] \
            == [("h100", 0, 0), ("a100", 1, 0)]  # 4xgpu comes before half and job by name on both pools
        half = provisioned.profiles.get(name="half").connections.get()
        assert (half.pool.name, half.precedence, half.execution_position) == ("a100", 0, 1)
        assert [(q.policy.name, q.rank) for q in four.queues.order_by("rank")] == [("dev", 0), ("research", 1)]

    def test_it_stores_the_document_with_every_default_spelled_out(self, provisioned):
        pool = provisioned.document["pools"][0]
        assert pool == {"name": "h100", "description": "", "capacity": {"gpu": 8}, "execution_order": ["4xgpu", "job"]}
        assert provisioned.document["profiles"][0]["resources"] == {"gpu": 0.5}
        assert "version" not in provisioned.document

    def test_versions_are_numbered_one_after_another(self, provisioned, alice):
        second = services.config_provision_document(document=document(), author=None)
        assert (second.number, second.author) == (2, None)
        assert SiteState.objects.get(pk=1).live_version == second

    def test_an_invalid_document_is_refused_with_every_error_and_nothing_is_written(self, provisioned):
        before = rows()
        bad = document(pools=[{"name": "H100", "capacity": {"gpu": -1}}])
        with pytest.raises(services.ConfigInvalid) as refused:
            services.config_provision_document(document=bad, author=None)
        paths = {(e.path, e.code) for e in refused.value.errors}
        assert {("pools[0].name", "invalid_name"), ("pools[0].capacity.gpu", "invalid_quantity")} <= paths
        assert rows() == before and SiteState.objects.get(pk=1).live_version == provisioned

    def test_a_comment_longer_than_500_characters_is_refused(self, db):
        with pytest.raises(services.ConfigInvalid) as refused:
            services.config_provision_document(document=document(), author=None, comment="x" * 501)
        assert [(e.path, e.code) for e in refused.value.errors] == [("comment", "too_long")]
        assert not ConfigVersion.objects.exists()

    def test_text_the_database_cannot_hold_is_refused(self, db):
        doc = document()
        doc["pools"][0]["description"] = "nul \x00 inside"
        doc["policies"][0]["description"] = "lone \ud800 surrogate"
        with pytest.raises(services.ConfigInvalid) as refused:
            services.config_provision_document(document=doc, author=None)
        assert [(e.path, e.code) for e in refused.value.errors] == [
            ("pools[0].description", "invalid_character"), ("policies[0].description", "invalid_character")]

    def test_removing_a_profile_that_holds_a_live_allocation_is_refused_naming_it(self, provisioned, bob):
        running = request_row(bob, "dev", "job", 1, state="allocated", pool="h100")
        with pytest.raises(services.ConfigInvalid) as refused:
            services.config_provision_document(document=without(document(), "profiles", "job"), author=None)
        assert refused.value.errors == [Issue("profiles", "removal_refused",
                                              f"profile job still holds live request(s) {running.id}: release or "
                                              "cancel them before removing it (R-57)")]
        assert ConfigVersion.objects.count() == 1

    def test_removing_a_pool_and_a_policy_names_both(self, provisioned, bob):
        running = request_row(bob, "research", "half", 0.5, state="preempting", pool="a100")
        doc = without(without(document(), "pools", "a100"), "policies", "research")
        with pytest.raises(services.ConfigInvalid) as refused:
            services.config_provision_document(document=doc, author=None)
        assert [(e.path, e.code) for e in refused.value.errors] == [
            ("pools", "removal_refused"), ("profiles", "removal_refused"), ("policies", "removal_refused")]
        assert all(str(running.id) in e.message for e in refused.value.errors)

    def test_finished_requests_do_not_block_a_removal(self, provisioned, bob):
        request_row(bob, "dev", "job", 1, state="released", pool="h100")
        version = services.config_provision_document(document=without(document(), "profiles", "job"), author=None)
        assert version.number == 2

    def test_a_capacity_reduced_below_usage_is_allowed(self, provisioned, bob):
        request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
        doc = document()
        doc["pools"][0]["capacity"] = {"gpu": 4}
        assert services.config_provision_document(document=doc, author=None).number == 2

    def test_pending_requests_whose_queue_is_gone_are_cancelled_by_the_pass_that_follows(self, provisioned, bob):
        services.management_set(enabled=False, user=None)  # keep the request pending until the provision
        waiting = request_row(bob, "dev", "job", 1)
        services.config_provision_document(document=without(document(), "profiles", "job"), author=None)
        waiting.refresh_from_db()
        assert (waiting.state, waiting.reason) == ("cancelled", "QueueRemoved")

    def test_a_failing_reconcile_pass_does_not_undo_the_provision(self, db, monkeypatch, caplog):
        def broken() -> None:
            raise RuntimeError("boom")
        monkeypatch.setattr(services, "reconcile_soon", broken)
        assert services.config_provision_document(document=document(), author=None).number == 1
        assert "reconcile pass after a configuration change failed" in caplog.text


class TestDraft:
    def test_a_well_formed_but_invalid_draft_is_saved(self, alice):
        doc = document()
        doc["profiles"][0]["connections"] = []
        assert services.draft_save(document=doc, user=alice) == doc
        assert versions.draft_get() == doc and Draft.objects.get().updated_by == alice

    def test_the_version_field_is_dropped_from_a_draft(self, provisioned, alice):
        saved = services.draft_save(document={"version": 7, **document()}, user=alice)
        assert "version" not in saved and Draft.objects.get().based_on == 1

    @pytest.mark.parametrize(("doc", "path", "code"), [
        ([], "", "invalid_type"),
        ({"pools": {}, "profiles": [], "policies": []}, "pools", "invalid_type"),
        ({"pools": []}, "profiles", "required"),
        (document(pools=[{"name": "p", "capacity": {"gpu": "NaN"}}]), "pools[0].capacity.gpu", "invalid_quantity"),
        (document(pools=[{"name": "p", "junk": {"a": [1, 2]}}]), "pools[0].junk", "unknown_field"),
        (document(pools=[{"name": "p", "description": "x" * 1001}]), "pools[0].description", "too_long"),
        (document(pools=[{"name": "p", "description": "a\x00b"}]), "pools[0].description", "invalid_character"),
        (document(pools=[{"name": "p", "capacity": {"gpu": float("inf")}}]), "pools[0].capacity.gpu",
         "invalid_quantity"),
    ])
    def test_a_malformed_draft_is_refused_and_the_old_one_kept(self, alice, doc, path, code):
        services.draft_save(document=document(), user=alice)
        with pytest.raises(services.ConfigInvalid) as refused:
            services.draft_save(document=doc, user=alice)
        assert (path, code) in {(e.path, e.code) for e in refused.value.errors}
        assert versions.draft_get() == document()

    def test_there_is_no_draft_until_one_is_saved_and_delete_is_idempotent(self, alice):
        with pytest.raises(versions.ConfigNotFound):
            versions.draft_get()
        services.draft_save(document=document(), user=alice)
        services.draft_delete()
        services.draft_delete()
        assert not Draft.objects.exists()

    def test_provisioning_the_draft_discards_it_and_a_refusal_keeps_it(self, alice):
        bad = document()
        bad["profiles"][0]["connections"] = []
        services.draft_save(document=bad, user=alice)
        with pytest.raises(services.ConfigInvalid):
            services.draft_provision(user=alice)
        assert versions.draft_get() == bad
        services.draft_save(document=document(), user=alice)
        assert services.draft_provision(user=alice, comment="go").comment == "go"
        assert not Draft.objects.exists()

    def test_provisioning_without_a_draft_is_not_found(self, db):
        with pytest.raises(versions.ConfigNotFound):
            services.draft_provision(user=None)


class TestValidate:
    def test_a_valid_draft_warns_about_missing_and_empty_groups(self, alice, bob):
        Group.objects.create(name="research")
        doc = document()
        doc["policies"].append({"name": "ops", "group": "ops"})
        doc["profiles"][0]["policies"].append("ops")
        services.draft_save(document=doc, user=alice)
        result = services.draft_validate()
        assert (result.valid, result.errors) == (True, [])
        assert [(w.path, w.code) for w in result.warnings] == [
            ("policies[1].group", "group_empty"), ("policies[2].group", "group_missing")]

    def test_a_policy_without_group_is_warned_about(self, alice):
        doc = document()
        del doc["policies"][1]["group"]
        services.draft_save(document=doc, user=alice)
        assert ("policies[1].group", "group_missing") in {
            (w.path, w.code) for w in services.draft_validate().warnings}

    def test_engine_warnings_are_kept(self, alice):
        doc = document()
        doc["policies"].append({"name": "idle", "group": "dev"})
        services.draft_save(document=doc, user=alice)
        assert ("policies[2]", "unused_policy") in {(w.path, w.code) for w in services.draft_validate().warnings}

    def test_removal_refusals_are_errors(self, provisioned, alice, bob):
        request_row(bob, "dev", "job", 1, state="allocated", pool="h100")
        services.draft_save(document=without(document(), "profiles", "job"), user=alice)
        result = services.draft_validate()
        assert result.valid is False
        assert [(e.path, e.code) for e in result.errors] == [("profiles", "removal_refused")]


class TestStructure:
    @pytest.mark.parametrize(("value", "code"), [
        ({"a": 1.0e308 * 10}, "invalid_number"),
        ({1: "x"}, "invalid_key"),
        ({"when": dt.date(2026, 1, 1)}, "invalid_type"),
        ({"set": {1, 2}}, "invalid_type"),
        ({"key\x00": 1}, "invalid_key"),
    ])
    def test_values_json_or_the_database_cannot_hold_are_found(self, value, code):
        assert [e.code for e in validation.structure_errors(value)] == [code]

    def test_deep_nesting_is_found_once(self):
        deep: list = []
        for _ in range(100):
            deep = [deep]
        assert [e.code for e in validation.structure_errors({"x": deep})] == ["too_deep"]

    def test_an_alias_bomb_stops_the_walk(self, monkeypatch):
        monkeypatch.setattr(validation, "MAX_NODES", 1000)
        shared = list(range(10))
        for _ in range(6):
            shared = [shared] * 10  # a million leaves, shared like YAML aliases
        assert [e.code for e in validation.structure_errors(shared)] == ["too_large"]


class TestVersions:
    def test_restore_copies_a_version_into_the_draft(self, provisioned, alice):
        services.config_provision_document(document=without(document(), "profiles", "job"), author=None)
        draft = services.version_restore(number=1, user=alice)
        assert draft == provisioned.document and Draft.objects.get().based_on == 1
        assert services.draft_provision(user=alice).number == 3
        assert versions.config_live_document() == {"version": 3, **provisioned.document}

    @pytest.mark.parametrize("number", [0, 2, 2**31, 10**30])
    def test_an_unknown_version_is_not_found(self, provisioned, number):
        with pytest.raises(versions.ConfigNotFound):
            services.version_restore(number=number, user=None)
        with pytest.raises(versions.ConfigNotFound):
            versions.version_document(number)

    def test_the_list_is_newest_first(self, provisioned):
        services.config_provision_document(document=document(), author=None)
        assert [v.number for v in versions.version_list()] == [2, 1]


class TestManagement:
    def test_it_is_enabled_on_a_new_install_and_switches(self, db):
        assert management_enabled() is True
        assert services.management_set(enabled=False, user=None) is False
        assert management_enabled() is False

    def test_switching_on_runs_a_pass(self, provisioned, bob):
        services.management_set(enabled=False, user=None)
        waiting = request_row(bob, "dev", "half", 0.5)
        services.management_set(enabled=True, user=None)
        waiting.refresh_from_db()
        assert (waiting.state, waiting.pool) == ("allocated", "a100")
