"""``manage.py audit``: the API's filters, a table for people or a JSON object a line."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from poolweb.services.config import management_set
from poolweb.services.tokens import token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def log(provisioned, alice, bob):
    management_set(enabled=False, user=alice)
    token_create(user=bob, name="laptop")


def run(*args: str) -> str:
    out = StringIO()
    call_command("audit", *args, stdout=out)
    return out.getvalue()


def test_the_table_has_a_line_per_entry_newest_first_with_the_change(log):
    lines = run().splitlines()

    assert lines[0].split() == ["at", "actor", "origin", "action", "object", "change"]
    assert [line.split()[3] for line in lines[1:]] == ["token.create", "management.switch", "config.provision"]
    assert re.split(r"\s{2,}", lines[2])[4:] == ["management", "on → off"]


def test_json_is_one_entry_a_line_as_the_api_writes_it(log, alice):
    entries = [json.loads(line) for line in run("--json", "--action", "management.switch").splitlines()]

    assert [(e["actor"], e["actor_id"], e["origin"], e["before"], e["after"]) for e in entries] == [
        ("alice", alice.pk, "manage.py", "on", "off")]


def test_filters_and_limit(log):
    assert len(run("--actor", "bob").splitlines()) == 2
    assert len(run("--limit", "1").splitlines()) == 2
    assert run("--actor", "carol") == "no entries match these filters\n"


@pytest.mark.parametrize("args,named", [(["--since", "soon"], "--since"), (["--action", "x"], "--action"),
                                        (["--limit", "-1"], "--limit")])
def test_a_bad_filter_is_an_error_naming_it(log, args, named):
    with pytest.raises(CommandError, match=named):
        run(*args)
