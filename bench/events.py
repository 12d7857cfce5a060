"""Event stream latency: from a decision's commit to its event in a websocket client, through a
real web process (``serve``'s web server command: uvicorn) on the default SQLite setup
(``python -m bench.events``).

The bench process stands in for the worker: it commits events to the outbox as a decision does
(``services.events.publish`` in a transaction) and times until a client of the server receives
each one. The baseline, measured on the same connection in the same run, is a websocket ping's
round trip — what any message to this client costs; the rest is the relay's poll interval
(``POOLWEB_EVENT_POLL_MS``) and the read.

Figures: one client, one event at a time, at a random phase of the poll (``latency``); one
transaction of 1,000 events until the client has the last (``burst``); one event to 50 clients
until the last has it (``fanout``). The database is a temporary directory, not ./var.
Prints a table and merges ``{"runtime": {...}}`` into bench/results.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from bench.results import merge_runtime, percentile, sized
from tests.live_server import LiveServer

POLL_MS = int(os.environ.get("POOLWEB_EVENT_POLL_MS", "50"))
SAMPLES = sized(300, 5)
PINGS = sized(300, 5)
BURST = sized(1000, 20)
FANOUT_CLIENTS = sized(50, 3)
FANOUT_ROUNDS = sized(30, 2)
TARGET_P95_MS = 250.0
TIMEOUT = 10.0


def main() -> None:
    data_dir = tempfile.mkdtemp(prefix="poolweb-bench-events-")
    environment = {**os.environ, "POOLWEB_DATA_DIR": data_dir, "POOLWEB_EVENT_POLL_MS": str(POLL_MS),
                   "DJANGO_SETTINGS_MODULE": "poolweb.settings", "PYTHONUNBUFFERED": "1"}
    environment.pop("DATABASE_URL", None)  # the default setup: SQLite
    os.environ.pop("DATABASE_URL", None)
    os.environ.update(environment)  # this process too: the same temporary SQLite database
    token = prepare_database()
    try:
        with LiveServer(environment, Path(data_dir) / "server.log", web_only=True) as server:
            figures = measure(f"ws://127.0.0.1:{server.port}/ws/events/", token)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print_table(figures)
    merge_runtime(figures, "events_measured_at")


def prepare_database() -> str:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User

    from poolweb.services.tokens import token_issue

    return token_issue(user=User.objects.create_user("bench", is_staff=True))


def measure(url: str, token: str) -> dict[str, float]:
    from websockets.sync.client import connect

    with connect(url, open_timeout=TIMEOUT) as client:
        start(client, token)
        pings = [ping_ms(client) for _ in range(PINGS)]
        latencies = [event_ms(client, n) for n in range(SAMPLES)]
        burst = burst_ms(client)
    fanout = fanout_ms(url, token)
    return {
        "event_latency_p50_ms": percentile(latencies, 50), "event_latency_p95_ms": percentile(latencies, 95),
        "event_latency_max_ms": max(latencies), "ping_rtt_p50_ms": percentile(pings, 50),
        "ping_rtt_p95_ms": percentile(pings, 95), "poll_ms": POLL_MS, "burst_1000_ms": burst,
        "fanout_50_p50_ms": percentile(fanout, 50), "fanout_50_p95_ms": percentile(fanout, 95),
        "samples": SAMPLES,
    }


def start(client, token: str) -> None:
    from poolweb.realtime.outbox import newest_seq

    client.send(json.dumps({"token": token, "resume_from": newest_seq()}))
    commit(1)
    receive(client)  # signed in and streaming


def commit(count: int) -> None:
    """``count`` events in one committed transaction, as one decision writes them."""
    from django.db import transaction

    from poolweb.services.events import POOL_UPDATED, publish

    with transaction.atomic():
        for n in range(count):
            publish(POOL_UPDATED, {"name": "bench", "n": n})


def receive(client) -> dict:
    message = json.loads(client.recv(timeout=TIMEOUT))
    if "seq" not in message:
        raise RuntimeError(f"expected an event, got {message}")
    return message


def ping_ms(client) -> float:
    started = time.perf_counter()
    if not client.ping().wait(TIMEOUT):
        raise RuntimeError("no pong")
    return (time.perf_counter() - started) * 1000


def event_ms(client, n: int) -> float:
    time.sleep(random.uniform(0, POLL_MS / 1000))  # land anywhere in the poll's period
    commit(1)
    committed = time.perf_counter()
    receive(client)
    return (time.perf_counter() - committed) * 1000


def burst_ms(client) -> float:
    commit(BURST)
    committed = time.perf_counter()
    for _ in range(BURST):
        receive(client)
    return (time.perf_counter() - committed) * 1000


def fanout_ms(url: str, token: str) -> list[float]:
    from websockets.sync.client import connect

    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(connect(url, open_timeout=TIMEOUT)) for _ in range(FANOUT_CLIENTS)]
        for client in clients:
            start(client, token)
        drain(clients)
        rounds = []
        for _ in range(FANOUT_ROUNDS):
            time.sleep(random.uniform(0, POLL_MS / 1000))
            commit(1)
            committed = time.perf_counter()
            for client in clients:
                receive(client)
            rounds.append((time.perf_counter() - committed) * 1000)
        return rounds


def drain(clients) -> None:
    """Read what earlier clients' start events left in later ones' streams."""
    time.sleep(3 * POLL_MS / 1000)
    for client in clients:
        while True:
            try:
                client.recv(timeout=0.01)
            except TimeoutError:
                break


def print_table(figures: dict[str, float]) -> None:
    rows = [
        ("commit → event received, one client", figures["event_latency_p50_ms"], figures["event_latency_p95_ms"]),
        ("baseline: websocket ping round trip", figures["ping_rtt_p50_ms"], figures["ping_rtt_p95_ms"]),
        (f"commit → {FANOUT_CLIENTS} clients have it", figures["fanout_50_p50_ms"], figures["fanout_50_p95_ms"]),
    ]
    print(f"{'event stream (uvicorn, SQLite, poll ' + str(POLL_MS) + ' ms)':<44} {'p50 ms':>8} {'p95 ms':>8}")
    for name, p50, p95 in rows:
        print(f"{name:<44} {p50:>8.1f} {p95:>8.1f}")
    print(f"{'1,000 events in one commit → last received':<44} {figures['burst_1000_ms']:>17.1f}")
    verdict = "meets" if figures["event_latency_p95_ms"] <= TARGET_P95_MS else "MISSES"
    print(f"p95 {figures['event_latency_p95_ms']:.1f} ms {verdict} the target of {TARGET_P95_MS:.0f} ms"
          f" ({SAMPLES} events; max {figures['event_latency_max_ms']:.1f} ms)")


if __name__ == "__main__":
    main()
