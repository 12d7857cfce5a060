"""The command line against a live server: ``--json`` documents a script can parse, human tables,
and one line naming the fix for each mistake a person makes (the client issue, items 2, 4, 5)."""

from __future__ import annotations

import json
import time

import pytest

from poolctl import errors
from poolweb.ports import free_port

pytestmark = pytest.mark.slow


def test_json_output_is_one_document_a_script_can_parse(poolctl):
    submitted = poolctl("--json", "submit", "--policy", "dev", "--profile", "one", "--name", "train-1",
                        "--label", "team=nlp", "--wait", "--timeout", "30")
    assert submitted.returncode == 0, submitted.stderr
    request = json.loads(submitted.stdout)
    assert (request["state"], request["pool"], request["name"], request["labels"]) == (
        "allocated", "box", "train-1", {"team": "nlp"})

    status = json.loads(poolctl("status", str(request["id"]), "--json").stdout)  # --json after the command too
    assert status["id"] == request["id"] and status["lease_expires_at"]
    listed = json.loads(poolctl("--json", "list", "--state", "allocated").stdout)
    assert [r["id"] for r in listed] == [request["id"]]
    pools = json.loads(poolctl("--json", "pools").stdout)
    assert pools[0]["name"] == "box" and pools[0]["used"]["gpu"] == 1
    released = json.loads(poolctl("--json", "release", str(request["id"])).stdout)
    assert released["state"] == "released"


def test_the_queue_shows_who_waits_in_service_order(poolctl, live):
    blocker = json.loads(poolctl("--json", "submit", "--policy", "dev", "--profile", "two", "--wait").stdout)
    waiting = json.loads(poolctl("--json", "submit", "--policy", "dev", "--profile", "one").stdout)
    placed(poolctl, waiting["id"])
    queue = poolctl("--json", "queue", "box")
    entries = json.loads(queue.stdout)
    assert [(e["id"], e["position"], e["owner"]) for e in entries] == [(waiting["id"], 1, "bob")]
    table = poolctl("queue", "box")
    assert table.stdout.splitlines()[0].split()[:3] == ["POS", "ID", "QUEUE"] and "dev/one" in table.stdout
    summary = json.loads(poolctl("--json", "queue").stdout)  # no pool: every pool's queue in a row
    assert [(s["pool"], s["pending"], s["running"], s["next"]["id"]) for s in summary] == [("box", 1, 1, waiting["id"])]
    rows = poolctl("queue").stdout.splitlines()
    assert rows[0].split() == ["POOL", "PENDING", "RUNNING", "NEXT", "QUEUE", "WAITING", "WHY"]
    assert rows[1].split()[:5] == ["box", "1", "1", str(waiting["id"]), "dev/one"]
    timed_out = poolctl("wait", str(waiting["id"]), "--timeout", "1")
    assert timed_out.returncode == errors.TIMEOUT and "still pending after 1 s" in timed_out.stderr
    assert poolctl("cancel", str(waiting["id"])).returncode == 0
    assert poolctl("release", str(blocker["id"])).returncode == 0


def placed(poolctl, request_id: int, timeout: float = 30) -> None:
    """Until a pass has placed the request in its pool's queue: the queue lists what passes placed."""
    deadline = time.monotonic() + timeout
    while json.loads(poolctl("--json", "status", str(request_id)).stdout)["position"] is None:
        assert time.monotonic() < deadline, f"request {request_id} was never placed in a queue"
        time.sleep(0.1)


def test_human_output_is_a_table_with_a_hint_for_the_next_command(poolctl):
    submitted = poolctl("submit", "--policy", "dev", "--profile", "one")
    assert submitted.returncode == 0 and submitted.stdout.startswith("request ")
    assert "next: poolctl wait" in submitted.stderr
    listed = poolctl("list")
    assert listed.stdout.splitlines()[0].split() == ["ID", "QUEUE", "STATE", "POOL", "POS", "SUBMITTED", "WHY"]
    assert "\033" not in listed.stdout  # not a terminal, and NO_COLOR
    policies = poolctl("policies").stdout.splitlines()  # policies without quotas still have a row
    assert {tuple(line.split()[:2]) for line in policies[1:]} == {("dev", "0"), ("urgent", "10")}


def single_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_bad_token_is_one_line_naming_the_fix(poolctl, live):
    result = poolctl("pools", token="not-a-token")
    assert result.returncode == errors.REFUSED
    assert single_line(result) == (
        f"poolctl: the server at {live.server.url} refused the token (the token is not valid): make a token on the "
        f"console's Tokens page, {live.server.url}/account/tokens/ (or ask an admin: `manage.py create_api_token "
        "USERNAME`), then run `poolctl login`")


def test_an_unreachable_server_is_one_line_naming_the_fix_and_debug_shows_the_traceback(poolctl):
    url = f"http://127.0.0.1:{free_port()}"
    result = poolctl("pools", url=url)
    assert result.returncode == errors.UNREACHABLE
    assert single_line(result).startswith(f"poolctl: cannot reach the Poolweb server at {url} (connection refused): "
                                          "is it running? check POOLWEB_URL")
    debugged = poolctl("--debug", "pools", url=url)
    assert debugged.returncode == errors.UNREACHABLE and "Traceback" in debugged.stderr


def test_a_url_with_the_api_path_is_refused_before_anything_is_sent(poolctl, live):
    result = poolctl("pools", url=live.server.url + "/api/v1/")
    assert result.returncode == errors.USAGE and "give the server's root URL" in single_line(result)


@pytest.mark.parametrize("who, arguments, code, says", [
    ("carol", ["--policy", "dev", "--profile", "one"], errors.REFUSED,
     "you may not submit to policy dev: you are not in its group dev: ask an admin to add you to that group"),
    ("bob", ["--policy", "nope", "--profile", "one"], errors.USAGE,
     "policy: there is no policy named"),
    ("bob", ["--policy", "dev", "--profile", "one", "--gpu", "1"], errors.USAGE,
     "this profile's amounts are fixed"),
    ("bob", ["--policy", "dev", "--profile", "flex", "--gpu", "5"], errors.REJECTED,
     "ExceedsPoolCapacity"),
    ("bob", ["--policy", "dev", "--profile", "flex", "--memory", "16G"], errors.USAGE,
     "is not an amount of memory"),
])
def test_each_refused_submission_is_one_line_with_its_exit_code(poolctl, live, who, arguments, code, says):
    result = poolctl("submit", *arguments, token=getattr(live, who))
    assert result.returncode == code, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr


def test_a_rejection_in_json_is_an_error_document_with_the_request(poolctl):
    result = poolctl("--json", "submit", "--policy", "dev", "--profile", "flex", "--gpu", "5")
    document = json.loads(result.stdout)
    assert result.returncode == errors.REJECTED
    assert document["error"]["type"] == "rejected" and document["error"]["request"]["state"] == "rejected"
    assert single_line(result).startswith("poolctl: request ")  # the message stays on stderr


def test_a_missing_request_and_an_admin_command_for_a_member_say_why(poolctl):
    missing = poolctl("status", "999999")
    assert missing.returncode == errors.USAGE and single_line(missing) == "poolctl: there is no request 999999"
    refused = poolctl("config", "export")
    assert refused.returncode == errors.REFUSED and "this needs an admin account" in single_line(refused)


def test_an_admin_exports_imports_and_provisions_the_configuration(poolctl, live, tmp_path):
    exported = tmp_path / "config.json"
    assert poolctl("config", "export", str(exported), token=live.alice).returncode == 0
    document = json.loads(exported.read_text())
    document["pools"][0]["capacity"]["gpu"] = 4
    exported.write_text(json.dumps(document))
    imported = poolctl("--json", "config", "import", str(exported), "--provision", "--comment", "bigger box",
                       token=live.alice)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["version"] == 2
    versions = json.loads(poolctl("--json", "config", "versions", token=live.alice).stdout)
    assert [(v["version"], v["comment"]) for v in versions] == [(2, "bigger box"), (1, "client tests")]
    document["profiles"][0]["connections"] = [{"pool": "nowhere"}]
    exported.write_text(json.dumps(document))
    invalid = poolctl("config", "import", str(exported), token=live.alice)
    assert invalid.returncode == errors.USAGE and "nowhere" in invalid.stdout + invalid.stderr


def test_an_admin_switches_management_off_and_on(poolctl, live):
    off = poolctl("--json", "management", "off", token=live.alice)
    assert json.loads(off.stdout) == {"enabled": False}
    assert "is on" in poolctl("management", "on", token=live.alice).stdout


def test_login_checks_the_token_and_saves_it_for_the_next_commands(live, tmp_path):
    import os
    import subprocess
    import sys

    from .conftest import poolctl_environment

    environment = poolctl_environment(live.server.url, "", tmp_path / "home")
    del environment["POOLWEB_URL"], environment["POOLWEB_TOKEN"]
    login = [sys.executable, "-m", "poolctl", "login", "--url", live.server.url, "--token-stdin"]
    bad = subprocess.run(login, input="wrong\n", env=environment, capture_output=True, text=True)
    assert bad.returncode == errors.REFUSED and not (tmp_path / "home" / "poolctl").exists()
    empty = subprocess.run(login, input="\n", env=environment, capture_output=True, text=True)
    assert empty.returncode == errors.USAGE and f"{live.server.url}/account/tokens/" in empty.stderr
    good = subprocess.run(login, input=live.bob + "\n", env=environment, capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith(f"Signed in to {live.server.url} as bob (teams dev);"), good.stdout
    saved = tmp_path / "home" / "poolctl" / "config.json"
    assert oct(os.stat(saved).st_mode & 0o777) == "0o600"
    pools = subprocess.run([sys.executable, "-m", "poolctl", "pools"], env=environment, capture_output=True, text=True)
    assert pools.returncode == 0 and "box" in pools.stdout
    admin = subprocess.run([*login, "--json"], input=live.alice + "\n", env=environment, capture_output=True, text=True)
    assert {k: v for k, v in json.loads(admin.stdout).items() if k in ("admin", "username")} == {
        "admin": True, "username": "alice"}
