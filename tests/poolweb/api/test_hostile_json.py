"""JSON from outside is read within bounds (decision 92): JSON nested 10,000 deep, a number of
5,000 digits or an error path with a 5,000-digit index is a 400 that names the field — at the console editor's fragment, the API and
``manage.py config import`` — never a 500 or a traceback, and nothing stored changes."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from poolweb.models import ConfigVersion, Draft, Request
from tests.poolweb.conftest import client_for, document

pytestmark = pytest.mark.django_db

DEEP = "[" * 10_000 + "]" * 10_000
LONG = "9" * 5_000


def with_capacity(digits: str) -> str:
    return json.dumps(document()).replace('"capacity": {"gpu": 8}', f'"capacity": {{"gpu": {digits}}}', 1)


def post_board(user, body: str):
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client.post("/editor/board/", body, content_type="application/json")


@pytest.mark.parametrize(("body", "says"), [
    (f'{{"document": {DEEP}}}', "the JSON nests too deeply"),
    (f'{{"document": {with_capacity(LONG)}}}', "document.pools[0].capacity.gpu: a number has at most 100 digits"),
    (f'{{"document": {with_capacity("9" * 101)}}}', "document.pools[0].capacity.gpu: a number has at most 100 digits"),
    (json.dumps({"document": document(), "errors": [{"path": f"pools[{LONG}]", "message": "m"}]}),
     "errors[0].path: a path has at most 1000 characters"),
    (json.dumps({"document": document(), "warnings": [{}, {"path": f"policies[{'9' * 1001}]"}]}),
     "warnings[1].path: a path has at most 1000 characters"),
])
def test_the_editor_board_refuses_what_it_cannot_read_naming_the_field(provisioned, alice, body, says):
    response = post_board(alice, body)
    assert response.status_code == 400 and response.content.decode() == says


def test_the_editor_board_still_renders_an_error_at_an_index_no_card_has(provisioned, alice):
    errors = [{"path": f"pools[{'9' * 900}].name", "message": "far away"}]
    response = post_board(alice, json.dumps({"document": document(), "errors": errors}))
    assert response.status_code == 200 and "far away" in response.content.decode()


@pytest.mark.parametrize(("path", "body", "where"), [
    ("/config/draft", with_capacity(LONG), "pools[0].capacity.gpu"),
    ("/config/draft", with_capacity("-" + "9" * 101), "pools[0].capacity.gpu"),
    ("/requests", f'{{"policy": "dev", "profile": "half", "max_retries": {LONG}}}', "max_retries"),
    ("/requests", f'{{"policy": "dev", "profile": "half", "labels": {{"a b": {LONG}}}}}', "labels"),
])
def test_the_api_refuses_a_number_of_too_many_digits_naming_the_field(provisioned, alice, path, body, where):
    response = client_for(alice).generic("PUT" if path == "/config/draft" else "POST", f"/api/v1{path}", body,
                                         content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"errors": [{"path": where, "code": "invalid_number",
                                           "message": "a number has at most 100 digits"}]}
    assert not Draft.objects.exists() and not Request.objects.exists()


def test_config_import_names_the_field_of_a_long_number(provisioned, tmp_path):
    file = tmp_path / "long.json"
    file.write_text(with_capacity(LONG))
    with pytest.raises(CommandError) as refused:
        call_command("config", "import", str(file), "--provision", stdout=io.StringIO(), stderr=io.StringIO())
    assert str(refused.value).endswith("not valid JSON: pools[0].capacity.gpu: a number has at most 100 digits")
    assert ConfigVersion.objects.count() == 1 and not Draft.objects.exists()
