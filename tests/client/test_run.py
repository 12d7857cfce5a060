"""``poolctl run`` against a live server: the command runs with its allocation in the
environment, its exit code comes back, Ctrl-C reaches it, and a preempted command is signalled,
re-queued (R-46) and run again — or killed at the end of the grace (R-44) when it does not stop.

The command is a small Python script that writes what happens to it into a journal file.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from poolctl import Client
from poolctl import errors
from tests.poolweb.processes import wait_until

from .conftest import People, poolctl_environment

pytestmark = pytest.mark.slow

TRAIN = textwrap.dedent("""
    import json, os, signal, sys, time
    journal, behaviour = sys.argv[1], sys.argv[2]
    attempt = os.environ["POOLWEB_ATTEMPT"]

    def note(line):
        with open(journal, "a") as out:
            out.write(line + "\\n")

    def stop(signum, frame):
        note(f"attempt {attempt} got {signal.Signals(signum).name}")
        if behaviour != "stubborn":
            sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    note(f"attempt {attempt} started " + json.dumps({k: v for k, v in os.environ.items() if k.startswith("POOLWEB_")}))
    if behaviour == "exit-42":
        sys.exit(42)
    if attempt == "1" or behaviour == "stubborn":
        while True:  # until preempted, interrupted or killed
            time.sleep(0.05)
""")


@pytest.fixture
def train(tmp_path) -> Path:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    return script


def start_run(live: People, tmp_path: Path, train: Path, behaviour: str, *options: str,
              arguments: tuple[str, ...] = ()) -> subprocess.Popen:
    command = [sys.executable, "-m", "poolctl", "run", "--policy", "dev", "--profile", "two",
               "--result-file", str(tmp_path / "result.json"), *options,
               "--", sys.executable, str(train), str(tmp_path / "journal"), behaviour, *arguments]
    return subprocess.Popen(command, env=poolctl_environment(live.server.url, live.bob, tmp_path / "config"),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def journal(tmp_path: Path) -> list[str]:
    path = tmp_path / "journal"
    return path.read_text().splitlines() if path.exists() else []


def finish(run: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    try:
        _, stderr = run.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        run.kill()
        _, stderr = run.communicate()
        pytest.fail(f"poolctl run did not end; it said:\n{stderr}")
    return run.returncode, stderr


def result(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "result.json").read_text())


def test_the_command_gets_its_allocation_and_its_exit_code_is_passed_through(live, tmp_path, train):
    code, stderr = finish(start_run(live, tmp_path, train, "exit-42", arguments=("--note", "two words")))
    assert code == 42, stderr
    started = json.loads(journal(tmp_path)[0].removeprefix("attempt 1 started "))
    assert started["POOLWEB_POOL"] == "box" and started["POOLWEB_ATTEMPT"] == "1"
    assert json.loads(started["POOLWEB_RESOURCES"]) == {"gpu": 2}  # not the step_run every request has
    assert f"; running {sys.executable} {train} {tmp_path / 'journal'} exit-42 --note 'two words' (attempt 1)" in stderr
    summary = result(tmp_path)
    assert summary["request_id"] == int(started["POOLWEB_REQUEST_ID"])
    assert (summary["exit_code"], summary["command_exit_code"], summary["state"]) == (42, 42, "released")
    assert Client(live.server.url, live.bob).get(summary["request_id"]).state == "released"


def test_a_preempted_command_is_signalled_requeued_and_succeeds_on_its_second_attempt(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "checkpoints")  # no --max-retries: a run is re-queued by default
    wait_until(lambda: any("attempt 1 started" in line for line in journal(tmp_path)), 30, "the first attempt")
    alice = Client(live.server.url, live.alice)
    urgent = alice.wait(alice.submit(policy="urgent", profile="two"), timeout=30)  # evicts bob's first attempt
    alice.release(urgent)  # then bob's second attempt gets the box
    code, stderr = finish(run)
    assert code == 0, stderr
    lines = journal(tmp_path)
    assert [line.split(" {")[0] for line in lines] == ["attempt 1 started", "attempt 1 got SIGTERM", "attempt 2 started"]
    summary = result(tmp_path)
    assert [(a["attempt"], a["ended"], a["exit_code"]) for a in summary["attempts"]] == [
        (1, "preempted", 128 + signal.SIGTERM), (2, "exited", 0)]
    assert (summary["state"], summary["exit_code"]) == ("released", 0)
    assert "queued again for attempt 2" in stderr
    assert Client(live.server.url, live.bob).get(summary["request_id"]).max_retries == 3


def test_a_command_that_ignores_the_signal_is_killed_when_the_servers_grace_ends(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "stubborn", "--max-retries", "0")  # opted out: preemption ends it
    wait_until(lambda: journal(tmp_path), 30, "the command to start")
    alice = Client(live.server.url, live.alice)
    urgent = alice.submit(policy="urgent", profile="two")
    code, stderr = finish(run)
    assert code == errors.PREEMPTED, stderr
    assert journal(tmp_path)[1:] == ["attempt 1 got SIGTERM"]
    summary = result(tmp_path)
    assert summary["attempts"][0]["exit_code"] == 128 + signal.SIGKILL and summary["state"] == "preempted"
    assert "grace period" in summary["message"]  # the server evicted it: the client waited the whole grace
    assert summary["error"]["type"] == "preempted" and "SIGKILL when the server ends the grace at " in stderr
    assert alice.wait(urgent, timeout=30).state == "allocated"


def test_with_grace_the_command_is_killed_after_that_long_and_the_preemption_acknowledged(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "stubborn", "--grace", "0.5", "--signal", "INT", "--max-retries", "0")
    wait_until(lambda: journal(tmp_path), 30, "the command to start")
    Client(live.server.url, live.alice).submit(policy="urgent", profile="two")
    code, stderr = finish(run)
    assert code == errors.PREEMPTED, stderr
    assert journal(tmp_path)[1:] == ["attempt 1 got SIGINT"]
    summary = result(tmp_path)
    assert "released by bob while being preempted" in summary["message"]  # before the server's 2 s grace


def test_ctrl_c_is_forwarded_to_the_command_and_the_allocation_released(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "checkpoints")
    wait_until(lambda: journal(tmp_path), 30, "the command to start")
    run.send_signal(signal.SIGINT)
    code, stderr = finish(run)
    assert code == 128 + signal.SIGINT, stderr
    assert journal(tmp_path)[1:] == ["attempt 1 got SIGINT"]
    assert result(tmp_path)["state"] == "released"


def test_interrupted_while_waiting_cancels_the_request_and_exits_130(live, tmp_path, train):
    bob = Client(live.server.url, live.bob)
    bob.wait(bob.submit(policy="dev", profile="two"), timeout=30)  # the box is full: the run waits
    run = start_run(live, tmp_path, train, "exit-42")
    wait_until(lambda: bob.list(state="pending"), 30, "the run to submit")
    run.send_signal(signal.SIGTERM)
    code, stderr = finish(run)
    # 130, or death by SIGINT, which a shell reports as the same 130 (128 + 2): CPython ends so when
    # the KeyboardInterrupt the signal raised surfaces while the interpreter is already exiting.
    assert code in (errors.INTERRUPTED, -signal.SIGINT), stderr
    assert "interrupted; request" in stderr
    assert journal(tmp_path) == [] and result(tmp_path)["state"] == "cancelled"


def test_a_wait_timeout_cancels_the_request_and_exits_8(live, tmp_path, train):
    bob = Client(live.server.url, live.bob)
    bob.wait(bob.submit(policy="dev", profile="two"), timeout=30)
    code, stderr = finish(start_run(live, tmp_path, train, "exit-42", "--timeout", "1"))
    assert code == errors.TIMEOUT, stderr
    assert result(tmp_path)["state"] == "cancelled" and "still pending after 1 s" in stderr


def test_an_allocation_cancelled_by_an_admin_stops_the_command_and_exits_6(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "stubborn")
    wait_until(lambda: journal(tmp_path), 30, "the command to start")
    started = json.loads(journal(tmp_path)[0].removeprefix("attempt 1 started "))
    Client(live.server.url, live.alice).cancel(int(started["POOLWEB_REQUEST_ID"]))
    code, stderr = finish(run)
    assert code == errors.ENDED, stderr
    summary = result(tmp_path)
    assert summary["attempts"][0]["ended"] == "lost" and summary["attempts"][0]["exit_code"] == 128 + signal.SIGKILL
    assert summary["error"]["type"] == "cancelled" and "stopping the command" in stderr


def test_a_run_limit_is_passed_on_a_grace_before_and_the_run_ends_at_it(live, tmp_path, train):
    run = start_run(live, tmp_path, train, "stubborn", "--max-runtime", "4", "--max-retries", "0")
    code, stderr = finish(run)
    assert journal(tmp_path)[1:] == ["attempt 1 got SIGTERM"], stderr  # once, the grace (2 s) before the limit
    summary = result(tmp_path)
    assert (summary["state"], summary["reason"]) == ("expired", "TimeLimit"), stderr
    assert "'s run limit comes at " in stderr and code != 0
    request = Client(live.server.url, live.bob).get(summary["request_id"])
    assert request.max_runtime_seconds == 4 and request.time_limit_at == request.allocated_at + timedelta(seconds=4)
