"""The client stands alone (style: "no import of Django or poolweb"): a laptop or a training
container installs it without the server. Parsed with ast, so a module that would fail to
import is still read; the typed results read the server's objects and nothing else."""

from __future__ import annotations

import ast
import graphlib
from dataclasses import fields
from pathlib import Path

import pytest

from poolctl.models import PolicyState, Request
from poolctl.stream import stream_url
from poolctl.submission import label, memory, quantity, resource
from tests.imports import third_party_imports

CLIENT = Path(__file__).resolve().parents[2] / "client" / "poolctl"
MODULES = sorted(CLIENT.glob("*.py"))
ALLOWED = {"poolctl", "websockets", "yaml"}  # itself, its dependency, its optional extra


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_the_client_module_imports_only_the_standard_library_and_websockets(path):
    assert third_party_imports(path, ALLOWED) == []


def test_the_check_sees_the_modules_and_would_catch_django(tmp_path):
    assert CLIENT / "api.py" in MODULES and CLIENT / "run.py" in MODULES
    bad = tmp_path / "bad.py"
    bad.write_text("from django.conf import settings\nimport poolweb.models\n")
    assert third_party_imports(bad, ALLOWED) == ["django", "poolweb"]


def poolctl_imports(path: Path) -> set[str]:
    """The poolctl modules ``path`` imports, wherever the import stands: at the top, under
    ``TYPE_CHECKING`` or inside a function (a circle hidden there is a circle all the same)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "poolctl"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "poolctl":
            modules = {f"poolctl.{alias.name}" for alias in node.names if (CLIENT / f"{alias.name}.py").exists()}
            found |= modules if node.module == "poolctl" and modules else {node.module}
    return found


def module_name(path: Path) -> str:
    return "poolctl" if path.stem == "__init__" else f"poolctl.{path.stem}"


def test_the_client_modules_import_one_another_without_a_circle():
    graph = {module_name(path): poolctl_imports(path) for path in MODULES}
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"an import circle: {' → '.join(error.args[1])}")
    assert order.index("poolctl.api") < order.index("poolctl.watch") < order.index("poolctl.allocation")


def test_a_request_object_is_read_with_its_times_and_unknown_fields_ignored():
    request = Request.from_json({"id": 17, "state": "allocated", "pool": "h100", "resources": {"gpu": 4, "step_run": 1},
                                 "submitted_at": "2026-01-01T10:00:00.123456Z", "a_field_from_a_newer_server": 1})
    assert request.live and not request.terminal and request.submitted_at.tzinfo is not None
    assert request.to_json()["submitted_at"] == "2026-01-01T10:00:00.123456Z"


def test_the_client_reads_every_field_of_the_servers_request_object():
    from poolweb.services.payloads import REQUEST_FIELDS

    # ``warnings`` the server adds to every request object (decision 107); the client reads it already,
    # and an older server's object without it reads as no warnings.
    assert {field.name for field in fields(Request)} == {*REQUEST_FIELDS, "warnings"}


def test_a_preempting_requests_grace_end_and_the_servers_warnings_are_read():
    request = Request.from_json({"id": 1, "state": "preempting", "grace_ends_at": "2026-01-01T10:00:30Z",
                                 "warnings": [{"code": "preemptible_without_retries", "message": "no retries"}]})
    assert request.grace_ends_at.isoformat() == "2026-01-01T10:00:30+00:00"
    assert [(w.code, w.message) for w in request.warnings] == [("preemptible_without_retries", "no retries")]
    assert request.to_json()["warnings"] == [{"code": "preemptible_without_retries", "message": "no retries"}]
    assert Request.from_json({"id": 1, "state": "pending"}).warnings == ()


def test_a_queue_entry_of_another_team_lacks_names_and_still_reads():
    request = Request.from_json({"id": 3, "state": "pending", "position": 1})
    assert request.owner is None and request.message is None and request.resources == {}


def test_a_policys_scopes_are_typed():
    policy = PolicyState.from_json({"name": "dev", "scopes": [{"scope": "*", "key": "gpu", "usage": 2, "limit": 8}]})
    assert policy.scopes[0].limit == 8 and policy.to_json()["scopes"][0]["key"] == "gpu"


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws/events/"),
    ("https://gpus.example.org/poolweb", "wss://gpus.example.org/poolweb/ws/events/"),
])
def test_the_stream_is_found_beside_the_api(url, expected):
    assert stream_url(url) == expected


def test_submission_options_are_checked_before_anything_is_sent():
    import argparse

    assert quantity("0.143") == "0.143" and memory("16GiB") == "16GiB"
    assert resource("tensorrt_sessions=1") == ("tensorrt_sessions", "1") and label("team=nlp") == ("team", "nlp")
    for check, text in ((quantity, "-1"), (quantity, "0.1234"), (memory, "16G"), (resource, "GPU=1"),
                        (label, "team")):
        with pytest.raises(argparse.ArgumentTypeError):
            check(text)
