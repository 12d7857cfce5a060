"""Several hosts on one database (issue 24, decision 143). A "host" is a data directory of its own
(so its own wake-up socket) with its own processes, all on this machine and one database:

- ``submit``: N submissions (the switch off, so no pass runs) from 4 keep-alive clients through
  one web host, then through two (the clients split between them), each host one web process;
  the median of three batches each. The baseline is the one host.
- ``wake``: submit → allocated (the server's ``allocated_at``) for one client, on the web host
  whose pass loop is active (woken through its socket), beside the same on a host whose loop
  stands by (woken by NOTIFY); each request released after.
- ``takeover``: the active loop's host killed (SIGKILL to its process group) → the standby
  active (its socket bound), measured by polling every 10 ms; the killed one started again
  as the standby each round.

Run: ``python -m bench.hosts`` (PostgreSQL, where several hosts are meant to run; a short run
uses SQLite, one machine). ``make bench`` runs it; merges a "hosts" section into results.json.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from bench.front_door_scenarios import CLIENTS, median_batch, prepare_database
from bench.results import child_figures, merge_section, percentile, sized
from bench.runtime import postgres_database

N = sized(1000, 20)
REPEATS = sized(3, 1)
WAKES = sized(30, 3)
TAKEOVERS = sized(5, 1)
GPUS = 64


def main() -> None:
    with postgres_database() as url:
        figures = child_figures("hosts", "run", database_url=url or "", timeout=1200)
    report(figures, "PostgreSQL" if url else "SQLite")
    if url:
        merge_section("hosts", figures, "measured_at")


ROWS = (
    ("submit_one_host_per_s", "submissions/s, 4 clients, one web host"),
    ("submit_two_hosts_per_s", "  the same through two web hosts"),
    ("wake_here_p50_ms", "submit -> allocated p50, loop on the same host (ms)"),
    ("wake_here_p95_ms", "  p95 (ms)"),
    ("wake_elsewhere_p50_ms", "submit -> allocated p50, loop on another host (ms)"),
    ("wake_elsewhere_p95_ms", "  p95 (ms)"),
    ("takeover_median_s", "active loop's host killed -> standby active, median (s)"),
    ("takeover_max_s", "  slowest of the rounds (s); goal <= 10"),
)


def report(figures: dict, database: str) -> None:
    print(f"several hosts, on {database}")
    for key, label in ROWS:
        value = figures.get(key)
        print(f"{label:<60}{'-' if value is None else f'{value:.3g}':>10}")


# --- the child ---------------------------------------------------------------------------------------

class Loop:
    """A pass loop in a data directory of its own, its output in ``loop.log`` there."""

    def __init__(self, directory: Path) -> None:
        from tests.live_server import launch

        self.directory = directory
        self.log = directory / "loop.log"
        environment = {**os.environ, "POOLWEB_DATA_DIR": str(directory), "POOLWEB_LOG_LEVEL": "WARNING"}
        self.process = launch([sys.executable, "manage.py", "reconcile", "--follow"], environment, self.log)

    def active(self) -> bool:
        from django.test import override_settings

        from poolweb.services import wakeup

        with override_settings(DATA_DIR=self.directory):
            return wakeup.Waker()._wake_here()

    def standing_by(self) -> bool:
        text = self.log.read_text(errors="replace")
        return text.count("standing by") > text.count("is active now")

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        from tests.live_server import stop

        if self.process.poll() is None:
            stop(self.process)


def wait_for(condition, timeout: float = 60.0, step: float = 0.01) -> float:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("waited too long")
        time.sleep(step)
    return time.monotonic()


def run() -> dict:
    import django

    django.setup()
    from django.db import connection

    from tests.live_server import LiveServer

    tokens, admin_token = prepare_database(CLIENTS, GPUS)
    root = Path(os.environ["POOLWEB_DATA_DIR"])
    if connection.vendor == "sqlite":  # every host on this one file, not one in its own data directory
        os.environ["DATABASE_URL"] = f"sqlite:///{connection.settings_dict['NAME']}"
    figures: dict = {}
    with ExitStack() as stack:
        webs = []
        for name in ("a", "b"):
            (root / name).mkdir()
            environment = {**os.environ, "POOLWEB_DATA_DIR": str(root / name), "POOLWEB_WEB_PROCESSES": "1"}
            webs.append(stack.enter_context(LiveServer(environment, root / name / "server.log", web_only=True)))
        figures.update(submissions(webs, tokens, admin_token))
        loops = [Loop(root / "a")]
        stack.callback(lambda: [loop.stop() for loop in loops])
        wait_for(loops[0].active)
        loops.append(Loop(root / "b"))
        wait_for(loops[1].standing_by)
        figures.update(wakes(webs, tokens[0], admin_token))
        figures.update(takeovers(loops))
    return figures


def submissions(webs, tokens: list[str], admin_token: str) -> dict:
    """Batches through one host and through two, interleaved; every request cancelled after."""
    from django.utils import timezone

    from bench.clients import Clients, Connection, split
    from poolweb.models import Request as RequestRow
    from reconcile import Reason, State

    admin = Connection("127.0.0.1", webs[0].port, admin_token)
    answer = admin.call("PUT", "/api/v1/management", {"enabled": False})
    assert answer[0] == 200, answer
    calls = [("POST", "/api/v1/requests", {"policy": "low", "profile": "one"})] * N
    batches: dict[str, list] = {"one_host": [], "two_hosts": []}
    ports = {"one_host": [webs[0].port], "two_hosts": [web.port for web in webs]}
    for _ in range(REPEATS):
        for label in batches:
            clients = Clients("127.0.0.1", ports[label], tokens)
            try:
                batches[label].append(clients.calls(split(calls, len(clients))))
            finally:
                clients.close()
    # Cancelled directly: the switch is off, no pass runs, and the passes to come need an empty queue.
    RequestRow.objects.filter(state=State.PENDING.value).update(
        state=State.CANCELLED.value, reason=Reason.CANCELLED_BY_USER.value, finished_at=timezone.now())
    assert admin.call("PUT", "/api/v1/management", {"enabled": True})[0] == 200
    return {f"submit_{label}_per_s": median_batch("submit", found)["submit_per_s"] for label, found in batches.items()}


def wakes(webs, token: str, admin_token: str) -> dict:
    """One client, alternately on the active loop's host (a) and on the standby's (b)."""
    from django.db import connection

    from bench.clients import Connection
    from poolweb.models import Request as RequestRow

    figures = {}
    seconds: dict[str, list[float]] = {"here": [], "elsewhere": []}
    clients = {"here": Connection("127.0.0.1", webs[0].port, token)}
    if connection.vendor == "postgresql":  # SQLite runs on one machine, its hosts sharing a data directory
        clients["elsewhere"] = Connection("127.0.0.1", webs[1].port, token)
    for _ in range(WAKES):
        for where, client in clients.items():
            sent = time.time()
            status, raw = client.call("POST", "/api/v1/requests", {"policy": "low", "profile": "one"})
            assert status == 201, (status, raw[:200])
            pk = json.loads(raw)["id"]
            wait_for(lambda: RequestRow.objects.filter(pk=pk, state="allocated").exists(), step=0.002)
            allocated = RequestRow.objects.values_list("allocated_at", flat=True).get(pk=pk)
            seconds[where].append(allocated.timestamp() - sent)
            assert client.call("POST", f"/api/v1/requests/{pk}/release")[0] == 200
    for where, values in seconds.items():
        if not values:
            continue
        figures[f"wake_{where}_p50_ms"] = statistics.median(values) * 1000
        figures[f"wake_{where}_p95_ms"] = percentile(values, 95) * 1000 if len(values) > 1 else values[0] * 1000
    return figures


def takeovers(loops: list[Loop]) -> dict:
    times = []
    for _ in range(TAKEOVERS):
        active, standby = (loops[0], loops[1]) if loops[0].active() else (loops[1], loops[0])
        killed = time.monotonic()
        active.kill()
        times.append(wait_for(standby.active) - killed)
        loops[loops.index(active)] = again = Loop(active.directory)
        wait_for(again.standing_by)
    return {"takeover_median_s": statistics.median(times), "takeover_max_s": max(times)}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        print(json.dumps(run()))
    else:
        main()
