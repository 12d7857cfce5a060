"""Configuration text holds no control characters (docs/api.md §1), whichever way
it arrives — the API's draft and provision, the services, ``manage.py config import`` — and a
refusal names the field and leaves the stored state as it was."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from poolweb.models import ConfigVersion, Draft
from poolweb.selectors import versions
from poolweb.services import config as services
from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db

API = "/api/v1"
TITLE = "\x1b]0;pwned\x07"  # sets a terminal's window title
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"  # writes a terminal's clipboard (OSC 52)


def with_text(path: str, text: str) -> dict:
    """The conftest document with ``text`` written at ``path`` (``policies[0].group`` and the like)."""
    doc = document()
    where, field = path.rsplit(".", 1)
    entry = doc
    for part in where.replace("]", "").split("."):
        name, _, index = part.partition("[")
        entry = entry[name][int(index)] if index else entry[name]
    entry[field] = text
    return doc


HOSTILE = [
    ("policies[0].group", f"dev{TITLE}"),
    ("pools[0].description", f"eight GPUs{CLIPBOARD}"),
    ("profiles[0].description", "\x1b[2J\x1b[H cleared"),
    ("profiles[0].connections[0].name", "a100\x9b31m"),  # C1 CSI
    ("policies[1].description", "admin \u202egnp.exe"),  # a bidirectional override
    ("policies[0].group", "dev\nresearch"),  # a group is one line
    ("pools[1].description", "tab\there"),
    ("pools[1].description", "del\x7f"),
]


@pytest.mark.parametrize(("path", "text"), HOSTILE)
def test_a_draft_with_a_control_character_is_refused_naming_the_field(alice, path, text):
    services.draft_save(document=document(), user=alice)
    with pytest.raises(services.ConfigInvalid) as refused:
        services.draft_save(document=with_text(path, text), user=alice)
    assert [(e.path, e.code) for e in refused.value.errors] == [(path, "control_character")]
    assert versions.draft_get() == document()


@pytest.mark.parametrize(("path", "text"), HOSTILE[:3])
def test_a_provision_with_a_control_character_is_refused_and_nothing_is_written(db, path, text):
    with pytest.raises(services.ConfigInvalid) as refused:
        services.config_provision_document(document=with_text(path, text))
    assert [(e.path, e.code) for e in refused.value.errors] == [(path, "control_character")]
    assert not ConfigVersion.objects.exists()


def test_names_keys_and_references_with_control_characters_are_refused_even_in_a_draft(alice):
    doc = document()
    doc["pools"][0]["name"] = "h100\x1b[8m"
    doc["profiles"][0]["policies"][0] = "dev\x07"
    doc["policies"][0]["quotas"][0]["scope"] = "\u2066h100"
    with pytest.raises(services.ConfigInvalid) as refused:
        services.draft_save(document=doc, user=alice)
    assert {(e.path, e.code) for e in refused.value.errors} >= {
        ("pools[0].name", "control_character"), ("profiles[0].policies[0]", "control_character"),
        ("policies[0].quotas[0].scope", "control_character")}
    assert not Draft.objects.exists()


def test_a_description_may_have_several_lines(db):
    doc = with_text("pools[0].description", "8 × H100\nrack 4, row 2")
    assert services.config_provision_document(document=doc, comment="two racks\nand a note").number == 1


@pytest.mark.parametrize(("field", "text"), [("comment", f"rolled back{TITLE}"), ("comment", "a\rb"),
                                             ("author_name", "ci\nrunner"), ("author_name", "ci\u202e")])
def test_a_version_comment_or_author_with_a_control_character_is_refused(db, field, text):
    with pytest.raises(services.ConfigInvalid) as refused:
        services.config_provision_document(document=document(), **{field: text})
    assert [(e.path, e.code) for e in refused.value.errors] == [(field.split("_")[0], "control_character")]
    assert not ConfigVersion.objects.exists()


def test_the_api_refuses_a_draft_and_a_provision_comment_with_control_characters(alice, provisioned):
    admin = client_for(alice)
    response = admin.put(f"{API}/config/draft", with_text("policies[0].group", f"dev{CLIPBOARD}"), format="json")
    assert response.status_code == 400
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [("policies[0].group", "control_character")]
    assert admin.get(f"{API}/config/draft").status_code == 404
    admin.put(f"{API}/config/draft", document(pools=document()["pools"][::-1]), format="json")
    response = admin.post(f"{API}/config/draft/provision", {"comment": f"ok{TITLE}"}, format="json")
    assert response.status_code == 400
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [("comment", "control_character")]
    assert ConfigVersion.objects.count() == 1 and Draft.objects.exists()


@pytest.mark.parametrize("provision", [False, True])
def test_config_import_refuses_control_characters(provisioned, tmp_path, provision):
    file = tmp_path / "hostile.json"
    file.write_text(json.dumps(with_text("policies[0].group", f"dev{TITLE}")))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("config", "import", str(file), *(["--provision"] if provision else []),
                     stdout=io.StringIO(), stderr=err)
    assert err.getvalue().startswith("policies[0].group: control_character: ")
    assert "\x1b" not in err.getvalue()
    assert not Draft.objects.exists() and ConfigVersion.objects.count() == 1
