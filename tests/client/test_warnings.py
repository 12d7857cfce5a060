"""``poolctl submit`` says what the server warns about a request (a preemptible
one without retries, say) — the server's words, made safe to print, never worked out by the
client — and says nothing against a server that sends no ``warnings``. The server is a fake
transport; the command is the real one."""

from __future__ import annotations

import json

import pytest

from poolctl.cli import main
from poolctl.transport import Transport

PENDING = {"id": 7, "state": "pending", "policy": "dev", "profile": "one", "preemptible": True, "max_retries": 0}
WARNED = {**PENDING, "warnings": [{"code": "preemptible_without_retries",
                                   "message": "a preemption ends this request\x1b[2J: set max_retries to re-queue it"}]}


@pytest.fixture
def server(monkeypatch):
    """``server(answer)``: the fake server answers a submission with ``answer``."""
    monkeypatch.setenv("POOLWEB_URL", "http://poolweb.invalid")
    monkeypatch.setenv("POOLWEB_TOKEN", "token")

    def answering(answer: dict) -> None:
        monkeypatch.setattr(Transport, "call", lambda self, method, path, body=None, **options: answer)

    return answering


@pytest.mark.parametrize("json_output", [False, True], ids=["human", "json"])
def test_submit_prints_each_warning_of_the_server_on_stderr(capsys, server, json_output):
    server(WARNED)
    assert main(["submit", "--policy", "dev", "--profile", "one", *(["--json"] if json_output else [])]) == 0
    out, err = capsys.readouterr()
    assert ("poolctl: warning: a preemption ends this request\\u001b[2J: set max_retries to re-queue it"
            in err.splitlines())
    if json_output:
        assert json.loads(out)["warnings"][0]["code"] == "preemptible_without_retries"


def test_a_server_without_warnings_prints_none(capsys, server):
    server(PENDING)
    assert main(["submit", "--policy", "dev", "--profile", "one"]) == 0
    assert "warning" not in capsys.readouterr().err
