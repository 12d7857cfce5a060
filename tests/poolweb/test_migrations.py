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
