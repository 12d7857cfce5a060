"""The load-and-fault run (issue 17): ``manage.py serve`` under load while its processes are killed,
its pass loop is stopped, its database restarts and its event outbox is pruned under readers
catching up; then what hung, what was lost and whether every invariant holds.

Load (for ``SECONDS``, 60 by default): four members submit, heartbeat, release and cancel; an
admin saves and provisions a draft every second and turns management off and on; a probe reads
``/api/v1/health`` every half second; a follower reads the event stream and resumes after every
drop; a slow reader resumes far behind and reads its catch-up slowly while the outbox is pruned
to its newest 300 events every second. Faults, at fixed moments: ``kill -9`` of the pass loop
(twice), the web server (twice) and the worker; ``SIGSTOP`` of the pass loop for longer than
the lock bound (every call that needs it answers 503 ``busy`` meanwhile); on PostgreSQL a
restart of the server.

Verdicts (each must be 0, or true):
- hung: calls with no answer within 30 s; the longest the probe went unanswered is a figure;
- errors: answers of 500 (a 503 during a fault is the contract, and counted beside it);
- lost: a submission answered 201 whose row is missing, a release answered 200 whose request is
  not finished, a provision answered 200 whose version is missing;
- stream: an event out of order or twice; a slow reader that skipped a kept event without
  ``resync``;
- invariants: ``manage.py check_state`` after the run.

Run: ``python -m bench.faults [SECONDS]`` (SQLite, then a throwaway PostgreSQL database when the
server answers; restarting PostgreSQL needs root). Prints a table and writes a "faults" section
into bench/results.json. Not part of ``make bench``: it restarts the machine's PostgreSQL.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.documents import two_teams
from bench.results import child_figures, merge_section
from bench.runtime import postgres_database

ROOT = Path(__file__).resolve().parent.parent
SECONDS = 60
CALL_TIMEOUT = 30.0  # a call not answered within this is hung
MEMBERS = 4
KEEP_EVENTS = 300
DOCUMENT = {
    "pools": [{"name": "h100", "capacity": {"gpu": 8}}, {"name": "a100", "capacity": {"gpu": 4}}],
    "profiles": [
        {"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "h100"}, {"pool": "a100"}],
         "policies": ["dev", "research"]},
        {"name": "two", "resources": {"gpu": 2}, "connections": [{"pool": "h100"}], "policies": ["dev", "research"]},
        {"name": "half", "resources": {"gpu": 0.5}, "connections": [{"pool": "a100"}], "policies": ["dev", "research"]},
    ],
    "policies": two_teams(),
}
# (second, fault); the pass loop's stop lasts past POOLWEB_LOCK_WAIT_SECONDS (set to 5 below).
FAULTS = ((6, "kill pass loop"), (12, "kill web server"), (18, "kill worker"), (24, "restart PostgreSQL"),
          (30, "kill pass loop"), (36, "stop pass loop 8 s"), (50, "kill web server"))
CHILDREN = {"pass loop": "reconcile", "web server": "uvicorn", "worker": "qcluster"}


# --- the parent: one child per database -----------------------------------------------------------

def main(seconds: int = SECONDS) -> None:
    figures = child(seconds)
    with postgres_database() as url:
        if url:
            figures.update({f"{key}_postgres": value for key, value in child(seconds, url).items()})
    report(figures)
    merge_section("faults", {k: v for k, v in figures.items() if isinstance(v, (int, float))}, "measured_at")


def child(seconds: int, database_url: str = "") -> dict:
    return child_figures("faults", "run", str(seconds), database_url=database_url, timeout=seconds + 600,
                         POOLWEB_LOG_LEVEL="INFO", POOLWEB_WEB_PROCESSES="2", POOLWEB_LOCK_WAIT_SECONDS="5")


VERDICTS = ("hung_calls", "server_errors", "lost_submissions", "lost_releases", "lost_provisions",
            "events_out_of_order", "events_skipped_without_resync", "invariant_violations", "stuck_in_a_lock")


def report(figures: dict) -> None:
    print(f"{'':<44}{'SQLite':>12}{'PostgreSQL':>12}")
    for key in sorted(k for k in figures if not k.endswith("_postgres")):
        mark = "  must be 0" if key in VERDICTS else ""
        print(f"{key:<44}{figures[key]!s:>12}{figures.get(key + '_postgres', '-')!s:>12}{mark}")


# --- the child: the server, the load, the faults, the verdicts -------------------------------------

@dataclass
class Record:
    """What the load saw, shared by its threads (appends and Counter updates under the GIL)."""

    answers: Counter = field(default_factory=Counter)  # (kind, status)
    hung: int = 0
    submitted: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    provisioned: list[int] = field(default_factory=list)
    probe_gap: float = 0.0  # the longest the health probe went unanswered (s)
    seen: list[int] = field(default_factory=list)  # the follower's seqs, in order
    follower_drops: int = 0  # connections tried, a refused one (the web server starting) too
    disorder: int = 0
    skipped: int = 0
    resyncs: int = 0
    slow_resynced: int = 0  # slow catch-ups told resync (their point was pruned before they got there)
    slow_checked: int = 0  # slow catch-ups that got every kept event: checked against the outbox


def run(seconds: int) -> dict:
    import django

    django.setup()
    from tests.live_server import LiveServer

    admin_token, tokens = prepare()
    log = Path(os.environ["POOLWEB_DATA_DIR"]) / "server.log"
    record, stop = Record(), threading.Event()
    with LiveServer(os.environ, log) as server:
        port = server.port
        threads = [threading.Thread(target=target, args=args, daemon=True) for target, args in (
            *((member, (port, token, policy, record, stop)) for token, policy in tokens),
            (admin, (port, admin_token, record, stop)), (probe, (port, admin_token, record, stop)),
            (follower, (port, admin_token, record, stop)), (slow_reader, (port, admin_token, record, stop)),
            (pruner, (stop,)))]
        for thread in threads:
            thread.start()
        inject_faults(server.process.pid, seconds)
        stop.set()
        for thread in threads:
            thread.join(CALL_TIMEOUT * 2)
        stuck = sum(thread.is_alive() for thread in threads)
        time.sleep(5)  # the last passes
        figures = {"seconds": seconds, **verdicts(record, stuck)}
    text = log.read_text()
    figures.update(restarts=text.count("starting it again in"), tracebacks_logged=text.count("Traceback"),
                   what_the_tracebacks_end_with=sorted(set(tracebacks(text))))
    return figures


def tracebacks(log: str) -> list[str]:
    """The last line of each traceback in ``log``: what was raised."""
    lines = log.splitlines()
    ends = []
    for n, line in enumerate(lines):
        if line.startswith("Traceback"):
            following = lines[n + 1:]
            ends.append(next((f for f in following if f and not f.startswith((" ", "Traceback", "The above", "During")))
                             , "?")[:160])
    return ends


def prepare() -> tuple[str, list[tuple[str, str]]]:
    """Migrate; the admin, and members of dev and research with their policy; the document."""
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from poolweb.services.config import config_provision_document
    from poolweb.services.tokens import token_issue

    call_command("migrate", verbosity=0)
    admin = User.objects.create_user("admin", is_staff=True, is_superuser=True)
    tokens = []
    for n in range(MEMBERS):
        team = ("dev", "research")[n % 2]
        user = User.objects.create_user(f"member{n}")
        user.groups.add(Group.objects.get_or_create(name=team)[0])
        tokens.append((token_issue(user=user), team))
    config_provision_document(document=DOCUMENT, author=admin)
    return token_issue(user=admin), tokens


def inject_faults(serve: int, seconds: int) -> None:
    started = time.monotonic()
    for at, fault in FAULTS:
        if at >= seconds:
            break
        time.sleep(max(0.0, started + at - time.monotonic()))
        print(f"{time.monotonic() - started:5.1f} s: {fault}", file=sys.stderr, flush=True)
        if fault.startswith("kill"):
            os.killpg(child_pid(serve, fault.removeprefix("kill ")), signal.SIGKILL)
        elif fault.startswith("stop"):
            stop_holding_the_pass_lock(child_pid(serve, "pass loop"), seconds=8)
        elif os.environ.get("DATABASE_URL"):
            version = sorted(os.listdir("/etc/postgresql"))[-1]
            subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"], check=True)
    time.sleep(max(0.0, started + seconds - time.monotonic()))


def stop_holding_the_pass_lock(pid: int, seconds: float) -> None:
    """SIGSTOP the pass loop in the middle of a pass (while the pass lock is held, and still after
    the stop), for ``seconds``: a holder that is stuck."""
    for _ in range(200):
        if pass_lock_held():
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.5)
            if pass_lock_held():
                break
            os.kill(pid, signal.SIGCONT)  # a provision held it, not the pass loop
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGSTOP)
        print("the pass lock was never seen held: stopped the pass loop anyway", file=sys.stderr)
    time.sleep(seconds)
    os.kill(pid, signal.SIGCONT)


def pass_lock_held() -> bool:
    from django.db import OperationalError, connection

    try:
        return _pass_lock_held(connection)
    except OperationalError:  # a connection from before the database restarted
        connection.close()
        return False


def _pass_lock_held(connection) -> bool:
    import fcntl

    from poolweb import sql
    from poolweb.sqlite.base import PASS_LOCK_FILE

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                           "AND classid = %s AND objid = %s", [sql.PASS_LOCK >> 32, sql.PASS_LOCK & 0xFFFFFFFF])
            return cursor.fetchone()[0] > 0
    with open(f"{connection.settings_dict['NAME']}{PASS_LOCK_FILE}", "a") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True


def child_pid(serve: int, name: str) -> int:
    """The pid of ``serve``'s child ``name`` (a process group leader), waiting for a restarted one."""
    for _ in range(600):
        for entry in Path("/proc").iterdir():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == serve and CHILDREN[name] in command:
                return int(entry.name)
        time.sleep(0.1)
    raise RuntimeError(f"serve has no {name}")


# --- the load ----------------------------------------------------------------------------------------

class Client:
    """One keep-alive connection that opens again after a refusal or a drop; None when it could
    not get an answer in ``CALL_TIMEOUT`` (hung) — a refused connection is tried again."""

    def __init__(self, port: int, token: str, record: Record) -> None:
        from bench.clients import Connection

        self.port, self.token, self.record = port, token, record
        self.connection = Connection("127.0.0.1", port, token)
        self.connection.http.timeout = CALL_TIMEOUT

    def call(self, kind: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict] | None:
        import http.client
        import socket

        deadline = time.monotonic() + CALL_TIMEOUT
        while time.monotonic() < deadline:
            try:
                status, raw = self.connection.call(method, path, body)
            except (TimeoutError, socket.timeout):
                self.record.hung += 1
                self.reopen()
                return None
            except (ConnectionError, http.client.HTTPException, OSError):
                self.reopen()
                time.sleep(0.2)  # the web server is starting again
                continue
            self.record.answers[(kind, status)] += 1
            try:
                return status, json.loads(raw)
            except ValueError:
                return status, {}
        self.record.hung += 1
        return None

    def reopen(self) -> None:
        from bench.clients import Connection

        self.connection.http.close()
        self.connection = Connection("127.0.0.1", self.port, self.token)
        self.connection.http.timeout = CALL_TIMEOUT


def member(port: int, token: str, policy: str, record: Record, stop: threading.Event) -> None:
    client, rng = Client(port, token, record), random.Random(token)
    while not stop.is_set():
        answer = client.call("submit", "POST", "/api/v1/requests", {
            "policy": policy, "profile": rng.choice(["one", "two", "half"]),
            "max_retries": 1, "lease_seconds": 60})
        if answer is None or answer[0] != 201:
            continue
        request_id = answer[1]["id"]
        record.submitted.append(request_id)
        time.sleep(rng.uniform(0, 0.4))
        read = client.call("read", "GET", f"/api/v1/requests/{request_id}")
        if read and read[0] == 200 and read[1].get("state") in ("allocated", "preempting"):
            client.call("heartbeat", "POST", f"/api/v1/requests/{request_id}/heartbeat")
            answer = client.call("release", "POST", f"/api/v1/requests/{request_id}/release")
            if answer and answer[0] == 200 and answer[1].get("state") == "released":
                record.released.append(request_id)  # (a request preempted and queued again meanwhile is not)
        else:
            client.call("cancel", "POST", f"/api/v1/requests/{request_id}/cancel")


def admin(port: int, token: str, record: Record, stop: threading.Event) -> None:
    client, n = Client(port, token, record), 0
    while not stop.wait(1.0):
        n += 1
        document = json.loads(json.dumps(DOCUMENT))
        document["pools"][0]["capacity"]["gpu"] = 8 + n % 3
        saved = client.call("draft", "PUT", "/api/v1/config/draft", document)
        if saved and saved[0] == 200:
            answer = client.call("provision", "POST", "/api/v1/config/draft/provision", {"comment": f"fault run {n}"})
            if answer and answer[0] == 200:
                record.provisioned.append(answer[1]["version"])
        if n % 7 == 0:
            client.call("switch", "PUT", "/api/v1/management", {"enabled": False})
            client.call("switch", "PUT", "/api/v1/management", {"enabled": True})


def probe(port: int, token: str, record: Record, stop: threading.Event) -> None:
    client, answered = Client(port, token, record), time.monotonic()
    while not stop.wait(0.5):
        if client.call("health", "GET", "/api/v1/health") is not None:
            answered = time.monotonic()
        record.probe_gap = max(record.probe_gap, time.monotonic() - answered)


def follower(port: int, token: str, record: Record, stop: threading.Event) -> None:
    """Follows the stream from the start, resuming from its last seq after every drop."""
    last = 0
    while not stop.is_set():
        for message in stream(port, token, last, stop):
            if message.get("type") == "resync":
                record.resyncs += 1
                continue
            seq = message.get("seq")
            if seq is None:
                continue
            record.disorder += seq <= last
            last = max(last, seq)
            record.seen.append(seq)
        record.follower_drops += 1
        stop.wait(0.2)


def slow_reader(port: int, token: str, record: Record, stop: threading.Event) -> None:
    """Resumes far behind, reads its catch-up slowly while the outbox is pruned, then checks that
    every event still kept in what it read came to it (or that it was told ``resync``)."""
    from django.db import OperationalError, connection

    from poolweb.models import Event

    rng = random.Random(7)
    while not stop.wait(2.0):
        newest = max(record.seen, default=0)  # about 100 events a second come, and 300 are kept:
        start, got, told = max(0, newest - rng.randint(50, 2 * KEEP_EVENTS)), [], False  # some in time
        for message in stream(port, token, start, stop, limit=400):
            if message.get("type") == "resync":
                told = True
                break
            if message.get("seq") is not None:
                got.append(message["seq"])
                time.sleep(0.002)
        if told:
            record.slow_resynced += 1
        if told or not got:
            continue
        record.slow_checked += 1
        try:
            kept = set(Event.objects.filter(seq__gt=start, seq__lte=got[-1]).values_list("seq", flat=True))
        except OperationalError:  # the database restarting: this session goes unchecked
            connection.close()
            continue
        record.skipped += len(kept - set(got))
        record.disorder += sum(b <= a for a, b in zip(got, got[1:]))


def stream(port: int, token: str, resume_from: int, stop: threading.Event, limit: int | None = None):
    """The messages of one connection to the event stream, until it drops, ``stop`` or ``limit``."""
    from websockets.exceptions import WebSocketException
    from websockets.sync.client import connect

    try:
        with connect(f"ws://127.0.0.1:{port}/ws/events/", open_timeout=10) as socket:
            socket.send(json.dumps({"token": token, "resume_from": resume_from}))
            count = 0
            while not stop.is_set() and (limit is None or count < limit):
                try:
                    yield json.loads(socket.recv(timeout=1.0))
                except TimeoutError:
                    continue
                count += 1
    except (OSError, WebSocketException):
        return


def pruner(stop: threading.Event) -> None:
    from django.db import OperationalError, connection
    from django.utils import timezone

    from poolweb.services.events import prune

    while not stop.wait(1.0):
        try:
            prune(older_than=timezone.now(), keep=KEEP_EVENTS)
        except OperationalError:  # the database restarting
            connection.close()


# --- the verdicts ----------------------------------------------------------------------------------

def verdicts(record: Record, stuck: int) -> dict:
    from django.db import connection

    from poolweb.models import ConfigVersion, Request

    connection.close()  # the pruner's thread had its own; this one may predate a restart
    finished = ("released", "cancelled", "expired", "preempted")
    checked = subprocess.run([sys.executable, "manage.py", "check_state"], cwd=ROOT, capture_output=True, text=True)
    answers = record.answers
    return {
        "calls": sum(answers.values()),
        "submissions_201": answers[("submit", 201)], "releases_200": answers[("release", 200)],
        "provisions_200": answers[("provision", 200)],
        "busy_503": sum(n for (kind, status), n in answers.items() if status == 503),
        "503_by_call": {kind: n for (kind, status), n in sorted(answers.items()) if status == 503},
        "server_errors": sum(n for (kind, status), n in answers.items() if status >= 500 and status != 503),
        "hung_calls": record.hung, "stuck_in_a_lock": stuck,
        "probe_longest_gap_s": round(record.probe_gap, 2),
        "lost_submissions": len(record.submitted) - Request.objects.filter(id__in=record.submitted).count(),
        "lost_releases": Request.objects.filter(id__in=record.released).exclude(state__in=finished).count(),
        "lost_provisions": len(record.provisioned) - ConfigVersion.objects.filter(number__in=record.provisioned).count(),
        "events_followed": len(record.seen), "follower_connections": record.follower_drops,
        "follower_resyncs": record.resyncs, "slow_catch_ups_resynced": record.slow_resynced,
        "slow_catch_ups_checked": record.slow_checked,
        "events_out_of_order": record.disorder, "events_skipped_without_resync": record.skipped,
        "invariant_violations": 0 if checked.returncode == 0 else (checked.stderr.count("\n") or 1),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        print(json.dumps(run(int(sys.argv[2]))))
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else SECONDS)
