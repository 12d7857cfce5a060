"""Migrations that change what existing rows mean: run from the version before, on real rows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE_NAMES = [("poolweb", "0004_request_history")]
WITH_NAMES = [("poolweb", "0005_trust")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_tokens_made_before_names_are_named_after_the_command_that_made_them():
    old = migrate(BEFORE_NAMES)
    try:
        user = old.get_model("auth", "User").objects.create(username="old")
        old.get_model("poolweb", "ApiToken").objects.create(user=user, digest="d" * 64, prefix="abcdefgh")

        new = migrate(WITH_NAMES)

        assert list(new.get_model("poolweb", "ApiToken").objects.values_list("name", flat=True)) == ["create_api_token"]
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_versions_provisioned_before_summaries_are_summarised_against_the_one_before():
    from tests.poolweb.conftest import document

    old = migrate([("poolweb", "0011_password_reset_ask")])
    try:
        versions = old.get_model("poolweb", "ConfigVersion").objects
        versions.create(number=1, document=document())
        versions.create(number=2, document=document(policies=[*document()["policies"], {"name": "ops", "group": "dev"}]))

        new = migrate([("poolweb", "0012_version_summary")])

        summaries = list(new.get_model("poolweb", "ConfigVersion").objects.order_by("number").values_list("summary", flat=True))
        assert summaries[1] == "added policy ops"
        assert summaries[0].startswith("added pools")
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
