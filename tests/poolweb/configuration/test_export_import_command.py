"""``manage.py config export`` and ``config import``: JSON and YAML round trips, the draft, errors."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from poolweb.models import ConfigVersion, Draft
from poolweb.selectors import versions
from poolweb.services import config as services
from poolweb.management.commands.config import os_author
from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db




def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("config", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> tuple[CommandError, str]:
    err = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("config", *args, stdout=io.StringIO(), stderr=err)
    return raised.value, err.getvalue()


def test_export_without_a_file_prints_the_live_document_as_json(provisioned):
    out, _ = run("export")
    assert json.loads(out) == {"version": 1, **provisioned.document}


def test_export_before_any_provision_is_version_zero(db):
    assert json.loads(run("export")[0]) == {"version": 0, "pools": [], "profiles": [], "policies": []}


@pytest.mark.parametrize("name", ["live.json", "live.yaml", "live.YML", "live.txt"])
def test_export_then_import_with_provision_round_trips(provisioned, tmp_path, name):
    file = tmp_path / name
    out, _ = run("export", str(file))
    assert "exported version 1" in out
    text = file.read_text()
    loaded = yaml.safe_load(text) if name.lower().endswith((".yaml", ".yml")) else json.loads(text)
    assert loaded == {"version": 1, **provisioned.document}
    assert run("import", str(file), "--provision")[0].startswith("no change: ")  # it is the live one
    services.config_provision_document(document=document(pools=document()["pools"][::-1]))  # version 2
    out, _ = run("import", str(file), "--provision", "--comment", "round trip")
    assert "provisioned version 3" in out
    third = ConfigVersion.objects.get(number=3)
    assert (third.document, third.comment, third.author) == (provisioned.document, "round trip", None)


def test_yaml_export_is_readable_yaml_not_json(provisioned, tmp_path):
    file = tmp_path / "live.yaml"
    run("export", str(file))
    assert file.read_text().startswith("version: 1\npools:\n- name: h100\n")


def test_import_without_provision_saves_the_draft(provisioned, tmp_path):
    file = tmp_path / "next.yaml"
    file.write_text(yaml.safe_dump(document(pools=document()["pools"][::-1])))
    out, _ = run("import", str(file))
    assert "saved" in out and "valid" in out
    assert versions.draft_get()["pools"][0]["name"] == "a100"
    assert ConfigVersion.objects.count() == 1


def test_an_invalid_but_well_formed_file_is_saved_as_draft_with_its_errors_shown(provisioned, tmp_path):
    doc = document()
    doc["profiles"][0]["connections"] = []
    file = tmp_path / "draft.json"
    file.write_text(json.dumps(doc))
    out, err = run("import", str(file))
    assert "refused until its 1 error(s) are fixed" in out
    assert err.startswith("profiles[0].connections: no_connection: ")
    assert versions.draft_get() == doc


def test_provisioning_an_invalid_file_prints_each_error_and_fails(provisioned, tmp_path):
    doc = document()
    doc["pools"][0]["capacity"] = {"gpu": "lots"}
    doc["policies"][0]["quotas"][0]["reserved"] = 9
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(doc))
    error, err = refused("import", str(file), "--provision")
    lines = err.strip().splitlines()
    assert [line.split(": ")[:2] for line in lines] == [
        ["pools[0].capacity.gpu", "invalid_quantity"], ["policies[0].quotas[0].reserved", "reserved_above_limit"]]
    assert error.returncode == 1 and "refused with 2 error(s)" in str(error)
    assert ConfigVersion.objects.count() == 1


def test_a_malformed_file_is_not_saved_as_draft(provisioned, tmp_path):
    file = tmp_path / "bad.yaml"
    file.write_text("pools: {}\nprofiles: []\npolicies: []\n")
    _, err = refused("import", str(file))
    assert err.startswith("pools: invalid_type: ")
    assert not Draft.objects.exists()


@pytest.mark.parametrize(("name", "text", "says"), [
    ("bad.json", "{not json", "not valid JSON"),
    ("bad.json", '{"pools": [NaN]}', "not valid JSON"),
    ("bad.yaml", "pools: [unclosed", "not valid YAML"),
    ("bad.json", "[" * 100_000, "not valid JSON"),
])
def test_a_file_that_does_not_parse_is_refused(db, tmp_path, name, text, says):
    file = tmp_path / name
    file.write_text(text)
    error, _ = refused("import", str(file))
    assert says in str(error)
    assert not Draft.objects.exists()


def test_yaml_values_that_are_not_json_are_refused(db, tmp_path):
    file = tmp_path / "dates.yaml"
    file.write_text("pools:\n- name: p\n  description: 2026-01-01\nprofiles: []\npolicies: []\n")
    _, err = refused("import", str(file))
    assert err.startswith("pools[0].description: invalid_type: ")


def test_a_missing_file_and_an_unknown_user_are_refused(db, tmp_path):
    assert "no such file" in str(refused("import", str(tmp_path / "nope.json"))[0])
    file = tmp_path / "doc.json"
    file.write_text(json.dumps(document()))
    assert "no user named 'nobody'" in str(refused("import", str(file), "--user", "nobody")[0])


def test_the_user_option_names_the_author(alice, tmp_path):
    file = tmp_path / "doc.json"
    file.write_text(json.dumps(document()))
    run("import", str(file), "--provision", "--user", "alice")
    assert ConfigVersion.objects.get(number=1).author == alice


def test_without_user_the_author_is_who_ran_the_command_and_the_api_shows_it(alice, tmp_path):
    file = tmp_path / "doc.json"
    file.write_text(json.dumps(document()))

    run("import", str(file), "--provision")

    version = ConfigVersion.objects.get(number=1)
    assert version.author is None and version.author_name == os_author() and "@" in os_author()
    listed = client_for(alice).get("/api/v1/config/versions").json()["results"]
    assert listed[0]["author"] == os_author()


def test_the_author_option_names_an_author_who_is_no_account(db, tmp_path):
    file = tmp_path / "doc.json"
    file.write_text(json.dumps(document()))

    run("import", str(file), "--provision", "--author", "release pipeline")

    assert ConfigVersion.objects.get().author_label == "release pipeline"


def test_reimporting_the_live_configuration_says_no_change_and_writes_nothing(provisioned, tmp_path):
    file = tmp_path / "same.yaml"
    reordered = {"policies": document()["policies"], "profiles": document()["profiles"], "pools": document()["pools"]}
    file.write_text(yaml.safe_dump(reordered))  # the same document, keys in another order

    out, _ = run("import", str(file), "--provision", "--comment", "deploy 2")

    assert out == f"no change: {file} is the live configuration (version 1); nothing provisioned\n"
    assert ConfigVersion.objects.count() == 1


def test_the_api_like_import_makes_no_version_of_a_draft_equal_to_the_live_configuration(alice, provisioned):
    # It used to make a "no changes" version; now it says so and writes nothing.
    client = client_for(alice)
    client.put("/api/v1/config/draft", provisioned.document, format="json")

    answer = client.post("/api/v1/config/draft/provision", {"comment": "again, on purpose"}, format="json")

    assert answer.status_code == 409
    assert answer.json() == {"detail": "the draft configures exactly what version 1 does: nothing was provisioned",
                             "code": "no_changes", "live_version": 1}
    assert ConfigVersion.objects.count() == 1
    assert client.get("/api/v1/config/draft/info").json()["exists"]  # the draft is left as it was
