"""Whatever text a server sends — a version stored before control characters were
refused, or a server that is not Poolweb at all — poolctl shows it, and never lets the terminal
act on it: no ESC, CSI, OSC, DEL or bidirectional control reaches stdout or stderr, in tables,
lines, messages, errors or JSON. The server is a fake transport; the commands are the real ones."""

from __future__ import annotations

import io
import json
import re

import pytest

from poolctl.cli import main
from poolctl.errors import InvalidInput
from poolctl.transport import Transport

TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
HOSTILE = f"x{TITLE}{CLIPBOARD}\x9b2J\x7f\u202egnp.exe\r"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # all but the newline

REQUEST = {"id": 7, "state": "pending", "policy": f"dev{HOSTILE}", "profile": HOSTILE, "name": HOSTILE,
           "owner": HOSTILE, "reason": f"Waiting{HOSTILE}", "message": HOSTILE, "pool": HOSTILE, "position": 1,
           "labels": {HOSTILE: HOSTILE}, "resources": {"gpu": 1}}
REJECTED = {**REQUEST, "state": "rejected"}
ISSUE = {"path": f"policies[0]{HOSTILE}", "code": HOSTILE, "message": HOSTILE}
ANSWERS = {
    ("GET", "/requests"): {"results": [REQUEST], "next": None},
    ("GET", "/requests/7"): REQUEST,
    ("POST", "/requests"): REJECTED,
    ("POST", "/requests/7/cancel"): REQUEST,
    ("GET", "/pools"): [{"name": HOSTILE, "description": HOSTILE, "capacity": {"gpu": 2}}],
    ("GET", "/pools/box/queue"): {"results": [{**REQUEST, "submitted_at": None}], "next": None},
    ("GET", "/policies"): [{"name": HOSTILE, "group": HOSTILE, "description": HOSTILE,
                            "scopes": [{"scope": HOSTILE, "key": HOSTILE, "usage": 1}]}, {"name": HOSTILE}],
    ("GET", "/config"): {"version": 1, "pools": [{"name": "p", "description": HOSTILE}]},
    ("GET", "/config/versions"): {"results": [{"version": 1, "author": HOSTILE, "comment": HOSTILE}], "next": None},
    ("POST", "/config/draft/validate"): {"valid": False, "errors": [ISSUE], "warnings": [ISSUE]},
    ("POST", "/config/draft/preview"): {"valid": True, "granted": [REQUEST], "refusals": [ISSUE],
                                        "usage": [{"policy": HOSTILE, "scope": "*", "key": "gpu",
                                                   "before": {"usage": 1}, "after": {"usage": 2}}]},
}


@pytest.fixture(autouse=True)
def hostile_server(monkeypatch):
    monkeypatch.setenv("POOLWEB_URL", "http://poolweb.invalid")
    monkeypatch.setenv("POOLWEB_TOKEN", "token")

    def call(self, method, path, body=None, **options):
        if path == "/config/draft/provision":
            raise InvalidInput(f"comment: {HOSTILE}", HOSTILE, [ISSUE])
        return ANSWERS[method, path]

    monkeypatch.setattr(Transport, "call", call)


COMMANDS = [["list"], ["status", "7"], ["cancel", "7"], ["submit", "--policy", "dev", "--profile", "one"],
            ["queue", "box"], ["queue"], ["pools"], ["policies"], ["config", "export"], ["config", "versions"],
            ["config", "validate"], ["config", "preview"], ["config", "provision"]]


@pytest.mark.parametrize("json_output", [False, True], ids=["human", "json"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_control_character_from_the_server_reaches_the_terminal(capsys, command, json_output):
    main(command + (["--json"] if json_output else []))
    out, err = capsys.readouterr()
    assert UNSAFE.search(out) is None and UNSAFE.search(err) is None
    assert "\\u001b]0;pwned\\u0007" in out + err  # shown, as an escape
    if json_output:
        first = json.JSONDecoder().raw_decode(out)[0]  # validate prints the validation, then the error
        assert json.dumps(HOSTILE)[1:-1] in json.dumps(first)  # the data is intact for a script


def test_printable_escapes_controls_and_keeps_newlines_only_in_a_text_of_several_lines():
    from poolctl.render import json_text, printable

    assert printable("a\x1b[2Jb\u2066c\x85") == "a\\u001b[2Jb\\u2066c\\u0085"
    assert printable("one\ntwo") == "one\\u000atwo"
    assert printable("one\ntwo", multiline=True) == "one\ntwo"
    assert printable("½ H100 · naïve") == "½ H100 · naïve"
    assert json.loads(json_text({"a": HOSTILE})) == {"a": HOSTILE}


def test_the_live_progress_line_shows_a_reason_and_a_message_as_escapes():
    from poolctl.models import Request
    from poolctl.render import Progress

    stream = io.StringIO()
    Progress(stream, animate=True).show(Request.from_json(REQUEST), 3.0, trouble=HOSTILE)
    line = stream.getvalue()
    assert line.startswith("\r\033[2K") and UNSAFE.search(line.removeprefix("\r\033[2K")) is None
