"""The front door at scheduler speed (issue 12): submissions, releases and preemption round trips
through the real server (``manage.py serve``: the web processes and the worker) on a fresh
database, with 4 concurrent keep-alive clients holding bearer tokens (bench/clients.py).

Scenarios (N = 1000 one-GPU jobs, one pool of 512 GPUs, the fixed 1-GPU profile ``one``):

- ``baseline``: N posts to a bare Django view under the same server that authenticates the same
  token and inserts one row (bench/urls.py): the floor a submission is compared with.
- ``submit``: N submissions with the switch off: rate, p50/p99 latency, errors.
  Both are the batch of median rate of three, each from new connections (``REPEATS``), with the
  slowest and fastest beside it: where the four connections land among the web processes moves
  a batch's rate by a third.
- ``waves``: the switch on at t0: the first 512 admitted (the server's ``allocated_at``, and as a
  client polling ``GET /pools`` every 50 ms sees them); then the 512 released at once by the
  clients, and the remaining 488 admitted; all 1,000 started.
- ``preempt``: 512 low-priority jobs fill the pool; their holders follow ``/ws/events/`` and
  release on ``preempting``; 32 high-priority submissions → all 32 allocated.
- ``single``: one client on a quiet server: ``GET /management``, ``POST /requests``, release.
- ``actions``: one client keeps 500 live requests alive: 500 ``POST …/heartbeat`` calls, beside
  one ``POST /requests/actions`` call with the 500 (decision 141).
- ``flat``: with the switch off, three batches of N into one queue (0→1k→2k→3k), then N into a
  queue of 20,000 (the rest stored directly): each batch's rate beside the first's.

Admission times are the server's ``allocated_at`` (the pass's clock, read when it holds the pass
lock) and, beside them, when a polling client saw them. Run: ``python -m bench.front_door``
(SQLite, then PostgreSQL when the server answers; ``BENCH_WEB_PROCESSES`` web processes, 2); ``make bench``
runs it. Prints a table and merges a "front_door" section into bench/results.json.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from bench import front_door_scenarios as scenarios
from bench.front_door_scenarios import CLIENTS, GPUS, HEARTBEATS, POLL_SECONDS
from bench.results import child_figures, merge_section
from bench.runtime import postgres_database

WEB_PROCESSES = int(os.environ.get("BENCH_WEB_PROCESSES", "2"))  # one per core, on both databases
PHASES = ("baseline", "submit", "waves", "preempt", "single", "actions", "flat")


# --- the parent: one child per database -----------------------------------------------------------

def main(phases: tuple[str, ...] = PHASES) -> None:
    figures = child(phases)
    with postgres_database() as url:
        if url:
            found = child(phases, database_url=url)
            figures.update({f"{key}_postgres": value for key, value in found.items()})
    report(figures)
    if phases == PHASES:
        merge_section("front_door", figures, "measured_at")


def child(phases: tuple[str, ...], *, database_url: str = "") -> dict:
    return child_figures("front_door", "run", ",".join(phases), database_url=database_url, timeout=2400,
                         DJANGO_SETTINGS_MODULE="bench.settings", POOLWEB_WEB_PROCESSES=str(WEB_PROCESSES))


# Figure, label, goal (at least / at most, on SQLite; PostgreSQL's where it differs).
ROWS = (
    ("submit_per_s", "submissions/s, 4 clients (N = 1000)", (">=", 700, 1000)),
    ("baseline_per_s", "  baseline: bare view, same server (/s)", None),
    ("submit_per_s_min", "  slowest of 3 batches (/s)", None),
    ("submit_per_s_max", "  fastest of 3 batches (/s)", None),
    ("submit_p99_ms", "  p99 latency (ms)", ("<=", 100, 100)),
    ("baseline_p99_ms", "  baseline p99 (ms)", None),
    ("baseline_ratio", "  baseline / submissions", ("<=", 2, 2)),
    ("database_locked", "'database is locked' seen", ("<=", 0, 0)),
    ("submit_first_1000_per_s", "first 1,000 into the queue (/s)", None),
    ("submit_third_1000_per_s", "third 1,000 (queue 2k→3k) (/s)", None),
    ("third_vs_first", "  third / first", (">=", 0.8, 0.8)),
    ("submit_per_s_at_20k", "1,000 into a queue of 20,000 (/s)", None),
    ("at_20k_vs_first", "  at 20k / first", (">=", 0.8, 0.8)),
    ("first_wave_seen_s", "switch on → 512 admitted, seen (s)", ("<=", 0.25, 0.25)),
    ("first_wave_s", "  by the server's allocated_at (s)", None),
    ("release_wave_s", "releases of 512 → next admitted (s)", ("<=", 3, 3)),
    ("release_per_s", "  releases/s, 4 clients", None),
    ("all_started_s", "all 1,000 started (s)", ("<=", 6, 6)),
    ("preempt_32_s", "32 preemptions → all allocated (s)", ("<=", 1, 1)),
    ("management_p50_ms", "GET /management p50, one client (ms)", ("<=", 3, 3)),
    ("single_submit_p50_ms", "POST /requests p50, one client (ms)", None),
    ("single_release_p50_ms", "POST …/release p50, one client (ms)", None),
    ("heartbeats_each_s", f"{HEARTBEATS} heartbeats, one call each (s)", None),
    ("heartbeats_batch_s", "  in one /requests/actions call (s)", None),
    ("heartbeats_each_vs_batch", "  one call each / one call", None),
)


def report(figures: dict) -> None:
    for suffix in ("", "_postgres"):
        if f"baseline_per_s{suffix}" in figures and f"submit_per_s{suffix}" in figures:
            figures[f"baseline_ratio{suffix}"] = figures[f"baseline_per_s{suffix}"] / figures[f"submit_per_s{suffix}"]
    print(f"{'front door':<42}{'SQLite':>10}{'PostgreSQL':>12}  goal")
    for key, label, goal in ROWS:
        cells = [figures.get(key), figures.get(f"{key}_postgres")]
        shown = ["-" if value is None else f"{value:.3g}" if abs(value) < 10 else f"{value:.0f}" for value in cells]
        verdicts = ""
        if goal is not None:
            sign, *targets = goal
            verdicts = " ".join("-" if value is None else "ok" if (value >= target if sign == ">=" else value <= target)
                                else "MISS" for value, target in zip(cells, targets))
            verdicts = f"{sign} {targets[0]:g}" + (f" / {targets[1]:g}" if targets[1] != targets[0] else "") \
                + f"  {verdicts}"
        print(f"{label:<42}{shown[0]:>10}{shown[1]:>12}  {verdicts}")


# --- the child: the server, the clients and the scenarios ------------------------------------------

class Site:
    """What the scenarios share: the server's address, the clients, the admin's connection."""

    def __init__(self, port: int, tokens: list[str], admin_token: str, log: Path) -> None:
        from bench.clients import Clients, Connection

        self.port, self.tokens, self.log = port, tokens, log
        self.clients = Clients("127.0.0.1", port, tokens)
        self.admin = Connection("127.0.0.1", port, admin_token)
        self.admin_token = admin_token

    def switch(self, enabled: bool) -> float:
        """Turn management on or off; when the call was sent (t0)."""
        sent = time.time()
        status, _ = self.admin.call("PUT", "/api/v1/management", {"enabled": enabled})
        assert status == 200, status
        return sent

    def submit(self, count: int, policy: str = "low") -> list:
        from bench.clients import split

        body = {"policy": policy, "profile": "one"}
        return self.clients.calls(split([("POST", "/api/v1/requests", body)] * count, len(self.clients)))

    def pool(self) -> dict:
        status, raw = self.admin.call("GET", "/api/v1/pools")
        assert status == 200, (status, raw[:200])
        return json.loads(raw)[0]

    def poll(self, done, timeout: float = 120.0) -> float:
        """When a client polling ``GET /pools`` every 50 ms first saw ``done(pool)``."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if done(self.pool()):
                return time.time()
            time.sleep(POLL_SECONDS)
        raise TimeoutError("the pool never reached the state waited for")


def run(phases: tuple[str, ...]) -> dict:
    import django

    django.setup()
    from tests.live_server import LiveServer

    tokens, admin_token = scenarios.prepare_database(CLIENTS, GPUS)
    log = Path(os.environ["POOLWEB_DATA_DIR"]) / "server.log"
    figures: dict = {}
    with LiveServer(os.environ, log) as server:
        time.sleep(1.0)  # the worker is up too
        site = Site(server.port, tokens, admin_token, log)
        try:
            for phase in phases:
                figures.update(getattr(scenarios, phase)(site))
                print(json.dumps(figures), file=sys.stderr, flush=True)  # so far, should a later phase fail
        finally:
            site.clients.close()
    figures["database_locked"] = figures.get("database_locked", 0) + log.read_text().count("database is locked")
    figures["server_errors_logged"] = log.read_text().count("Traceback")
    return figures


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        print(json.dumps(run(tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else PHASES)))
    else:
        main(tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else PHASES)
