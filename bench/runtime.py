"""How fast is the running service? Submission → allocated through the real pass loop, and one
reconcile pass over 10,000 pending requests with snapshot and apply, on SQLite and PostgreSQL.
Prints a table and merges figures into the "runtime" section of results.json.

Each part runs in a child process of its own with its own throwaway database (Django is set up
once per process, for one database):

- ``latency``: a temporary SQLite database, the pass loop (``manage.py reconcile --follow``)
  started as ``make run`` starts it, 200 submissions one after another with free capacity, each
  timed from the submit call to seeing it allocated. Baseline, same run: the same with the pass
  run inline by the submitter (no hop), which is the floor the loop's latency adds to.
- ``pass``: scenario A of bench/engine.py (100 pools, 50 policies, 2,000 live, 10,000 pending)
  stored as rows, then ``reconcile_pass()`` timed, snapshot to commit. ``pass_10k_ms``: a pass
  over that queue after five releases (it grants into the freed room and rewrites the waits that
  changed), the pass a busy site runs all day. ``pass_10k_cold_ms``: the first pass after all
  10,000 arrived at once, which writes and announces a new reason for every one of them. Each
  timed pass is rolled back and repeated. Baselines: the engine's plan alone on the same
  snapshot, and the snapshot load alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from bench.results import SHORT, child_figures, merge_runtime, percentile, sized

POSTGRES = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432")
SUBMISSIONS = sized(200, 5)
PASS_REPEAT = sized(3, 1)


# --- the parent: one child per part --------------------------------------------------------------

def main() -> None:
    figures: dict[str, float | None] = {}
    figures.update(child("latency"))
    figures.update({f"{k}_sqlite": v for k, v in child("pass").items()})
    with postgres_database() as url:
        found = child("pass", database_url=url) if url else {}
        figures.update({f"{k}_postgres": v for k, v in found.items()})
    report(figures)
    merge_runtime(figures, "service_measured_at")


def child(part: str, *, database_url: str = "") -> dict[str, float]:
    return child_figures("runtime", part, database_url=database_url, timeout=900)


@contextmanager
def postgres_database():
    """A throwaway PostgreSQL database, or None when the server does not answer or in a short run
    (the same code on the other database, twice the time)."""
    import psycopg

    if SHORT:
        print("A short run: PostgreSQL's figures are left out.")
        yield None
        return
    name = f"poolweb_bench_{os.getpid()}"
    try:
        admin = psycopg.connect(f"{POSTGRES}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as error:
        print(f"PostgreSQL at {POSTGRES} does not answer ({error}); its figure is left out")
        yield None
        return
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES}/{name}"
    finally:  # over a new connection: a bench may have restarted the server (bench/faults.py)
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True, connect_timeout=10) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def figures_on_both(module: str, *args: str) -> dict[str, float | None]:
    """``python -m bench.<module> <args>``'s figures on SQLite, then on PostgreSQL when it answers,
    each key suffixed ``_sqlite`` or ``_postgres``."""
    figures = {f"{key}_sqlite": value for key, value in child_figures(module, *args).items()}
    with postgres_database() as url:
        found = child_figures(module, *args, database_url=url) if url else {}
    figures.update({f"{key}_postgres": value for key, value in found.items()})
    return figures


def print_both(rows, figures: dict[str, float | None], *, width: int = 52, digits: int = 1) -> None:
    """A table of ``figures_on_both``'s figures, a row per (key, label[, target]) of ``rows``, a
    column per database; a target, where a row gives one, after them."""
    targets = any(len(row) > 2 for row in rows)
    print(f"{'figure':<{width}}{'SQLite':>10}{'PostgreSQL':>12}" + (f"{'target':>10}" if targets else ""))
    for key, label, *target in rows:
        shown = ["-" if figures.get(f"{key}_{db}") is None else f"{figures[f'{key}_{db}']:.{digits}f}"
                 for db in ("sqlite", "postgres")]
        goal = f"<= {target[0]}" if target and target[0] is not None else ""
        print(f"{label:<{width}}{shown[0]:>10}{shown[1]:>12}" + (f"{goal:>10}" if targets else ""))


ROWS = (  # key, label, target
    ("submit_to_allocated_p50_ms", "submit -> allocated p50, pass loop (ms)", None),
    ("submit_to_allocated_p95_ms", "submit -> allocated p95, pass loop (ms)", 1000),
    ("submit_inline_p95_ms", "  baseline: pass inline, p95 (ms)", None),
    ("pass_10k_ms_sqlite", "pass, 10k pending, SQLite (ms)", 500),
    ("pass_10k_cold_ms_sqlite", "  first pass after 10k arrived (ms)", 500),
    ("plan_only_ms_sqlite", "  baseline: plan alone (ms)", None),
    ("load_only_ms_sqlite", "  baseline: snapshot load alone (ms)", None),
    ("pass_10k_ms_postgres", "pass, 10k pending, PostgreSQL (ms)", 500),
    ("pass_10k_cold_ms_postgres", "  first pass after 10k arrived (ms)", 500),
    ("plan_only_ms_postgres", "  baseline: plan alone (ms)", None),
    ("load_only_ms_postgres", "  baseline: snapshot load alone (ms)", None),
)


def report(figures: dict[str, float | None]) -> None:
    print(f"{'figure':<40}{'measured':>10}{'target':>10}  verdict")
    for key, label, target in ROWS:
        value = figures.get(key)
        shown = "-" if value is None else f"{value:.1f}"
        verdict = "-" if target is None or value is None else ("ok" if value <= target else "OVER")
        print(f"{label:<40}{shown:>10}{'' if target is None else f'<= {target}':>10}  {verdict}")


# --- the children ---------------------------------------------------------------------------------

def setup_database():
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User

    return User.objects.create_user("bench", is_staff=True)


def latency_part() -> dict[str, float]:
    from django.conf import settings

    from poolweb.models import Request as RequestRow
    from poolweb.services.config import config_provision_document
    from poolweb.services.requests import Submission, request_submit
    from reconcile import Vector
    from tests.live_server import launch, stop

    user = setup_database()
    config_provision_document(document={
        "pools": [{"name": "big", "capacity": {"gpu": 100000}}],
        "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "big"}], "policies": ["t"]}],
        "policies": [{"name": "t"}]}, author=user)

    def submit_and_wait() -> float:
        started = time.perf_counter()
        row, _ = request_submit(user=user, submission=Submission("t", "one", Vector.of(gpu=1, step_run=1)))
        while not RequestRow.objects.filter(pk=row.pk, state="allocated").exists():
            time.sleep(0.002)
        return (time.perf_counter() - started) * 1000

    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "inline"}
    inline = [submit_and_wait() for _ in range(SUBMISSIONS)]
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    loop = launch([sys.executable, "manage.py", "reconcile", "--follow"], os.environ,
                  Path(os.environ["POOLWEB_DATA_DIR"]) / "loop.log")
    try:
        submit_and_wait()  # the loop is up: its first pass, once it listens, grants this one
        queued = [submit_and_wait() for _ in range(SUBMISSIONS)]
    finally:
        stop(loop)
    return {"submit_to_allocated_p50_ms": percentile(queued, 50),
            "submit_to_allocated_p95_ms": percentile(queued, 95),
            "submit_inline_p50_ms": percentile(inline, 50), "submit_inline_p95_ms": percentile(inline, 95),
            "submissions": SUBMISSIONS}


def pass_part() -> dict[str, float]:
    from django.db import transaction
    from django.utils import timezone as django_timezone

    from bench.engine import A, make_snapshot
    from poolweb.collector import collector_paused
    from poolweb.models import Request as RequestRow
    from poolweb.services.reconciler import reconcile_pass
    from poolweb.selectors.snapshot import load_pass_input
    from reconcile import plan
    from reconcile.document_writer import to_document

    user = setup_database()
    scenario = make_snapshot(A)
    provision(_json_ready(to_document(scenario.config)), user)
    shift = django_timezone.now() - scenario.now  # the scenario's times, moved to now
    RequestRow.objects.bulk_create([_row(r, user, shift) for r in scenario.requests], batch_size=2000)

    def timed_pass() -> float:
        with transaction.atomic():
            started = time.perf_counter()
            reconcile_pass()
            elapsed = (time.perf_counter() - started) * 1000
            transaction.set_rollback(True)
        return elapsed

    cold = statistics.median(timed_pass() for _ in range(PASS_REPEAT))
    snapshot = load_pass_input(django_timezone.now()).snapshot
    loads = []
    for _ in range(PASS_REPEAT):
        started = time.perf_counter()
        load_pass_input(django_timezone.now())
        loads.append((time.perf_counter() - started) * 1000)
    plans = []
    for _ in range(PASS_REPEAT):
        started = time.perf_counter()
        with collector_paused():  # as the pass plans
            plan(snapshot)
        plans.append((time.perf_counter() - started) * 1000)
    reconcile_pass()  # for real: the steady passes start from its outcome
    for row in RequestRow.objects.filter(state="allocated").order_by("id")[:5]:
        RequestRow.objects.filter(pk=row.pk).update(state="released", reason="Released")
    steady = statistics.median(timed_pass() for _ in range(PASS_REPEAT))
    return {"pass_10k_ms": steady, "pass_10k_cold_ms": cold, "plan_only_ms": statistics.median(plans),
            "load_only_ms": statistics.median(loads)}


def provision(document: dict, user) -> None:
    """The engine bench's configuration oversubscribes a few reservations, which the engine takes
    but a provision refuses (R-55): those reservations are dropped, the rest is as benchmarked."""
    import re

    from poolweb.services.config import ConfigInvalid, config_provision_document

    try:
        config_provision_document(document=document, author=user)
        return
    except ConfigInvalid as invalid:
        for error in invalid.errors:
            found = re.fullmatch(r"policies\[(\d+)\]\.quotas\[(\d+)\]\.reserved", error.path)
            if not found:
                raise
            del document["policies"][int(found[1])]["quotas"][int(found[2])]["reserved"]
    config_provision_document(document=document, author=user)


def _row(request, owner, shift):
    from poolweb.models import Request as RequestRow

    def moved(moment):
        return None if moment is None else moment + shift

    return RequestRow(policy=request.policy, profile=request.profile, owner=owner, resources=dict(request.resources),
                      preemptible=request.preemptible, state=request.state.value, pool=request.pool,
                      reason="Granted" if request.state.live else "Submitted", lease_seconds=request.lease_seconds,
                      submitted_at=moved(request.submitted_at), allocated_at=moved(request.allocated_at),
                      lease_expires_at=moved(request.lease_expires_at))


def _json_ready(document):
    from poolweb.services.payloads import json_ready

    return json_ready(document)


PARTS = {"latency": latency_part, "pass": pass_part}

if __name__ == "__main__":
    if len(sys.argv) > 1:
        import django

        django.setup()
        print(json.dumps(PARTS[sys.argv[1]]()))
    else:
        main()
