"""How fast is a scrape of ``/metrics``, and what do its totals cost a pass? On SQLite and
PostgreSQL, each in a child process with a throwaway database (bench/runtime.py's way).

- ``scrape_ms``: ``GET /metrics`` through Django's whole stack (test client, no socket) with
  10,000 pending and 1,000 running requests of scenario A's configuration (bench/engine.py: 100
  pools, 50 policies), two counters and a grant-wait histogram per policy; wall and CPU time (the
  process's: the test client serves in it). Baselines, same data, same run:
  ``GET /api/v1/policies`` (whose selector the scrape reuses) and ``GET /api/v1/pools``.
- ``pass_totals_ms``: the first pass after the 10,000 arrived (grants and waits for every one),
  with the cumulative totals of decisions 150–151 written, beside ``pass_no_totals_ms``, the same
  pass with the totals left out. Each timed pass is rolled back and repeated.
- ``pass_beside_scrapes_ms``: the same pass (totals written) while another process scrapes
  ``/metrics`` without pause — a web process answering Prometheus, at its worst (a real one asks
  every 15 s) — beside ``pass_alone_scrapes_ms``, the same pass alone, alternately
  (bench/beside.py: also the pass's CPU time, the load average, the scraper's CPU share, the rest
  of the machine's, and the rounds in which the rest of the machine was quiet).
Merges figures into the "metrics" section of results.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace

from bench.beside import print_beside
from bench.engine import A
from bench.results import merge_section, sized
from bench.runtime import figures_on_both

SCENARIO = replace(A, live=sized(1_000, 20))
REPEAT = sized(20, 1)
PASS_REPEAT = sized(7, 1)
TOKEN = "bench-scrape-token-0123456789"

ROWS = (  # key, label, target
    ("scrape_ms_sqlite", "scrape /metrics, 10k pending, SQLite (ms)", 50),
    ("scrape_cpu_ms_sqlite", "  its CPU time (ms)", None),
    ("policies_ms_sqlite", "  baseline: GET /policies (ms)", None),
    ("policies_cpu_ms_sqlite", "  baseline: its CPU time (ms)", None),
    ("pools_ms_sqlite", "  baseline: GET /pools (ms)", None),
    ("pass_totals_ms_sqlite", "first pass after 10k, with totals (ms)", None),
    ("pass_no_totals_ms_sqlite", "  baseline: without totals (ms)", None),
    ("pass_beside_scrapes_ms_sqlite", "the pass while another process scrapes (ms)", None),
    ("pass_alone_scrapes_ms_sqlite", "  baseline: the same pass alone (ms)", None),
    ("pass_beside_scrapes_cpu_ms_sqlite", "  its CPU time beside (ms)", None),
    ("pass_alone_scrapes_cpu_ms_sqlite", "  baseline: its CPU time alone (ms)", None),
    ("scrapes_cpu_pct_sqlite", "  the scraper's CPU, % of the pass's wall time", None),
    ("others_cpu_pct_beside_scrapes_sqlite", "  the rest of the machine's CPU, % of it", None),
    ("others_cpu_pct_alone_scrapes_sqlite", "  the same, the pass alone", None),
    ("pass_load_scrapes_sqlite", "  load average (1 min) as the passes began", None),
    ("scrape_ms_postgres", "scrape /metrics, 10k pending, PostgreSQL (ms)", 50),
    ("scrape_cpu_ms_postgres", "  its CPU time (ms)", None),
    ("policies_ms_postgres", "  baseline: GET /policies (ms)", None),
    ("policies_cpu_ms_postgres", "  baseline: its CPU time (ms)", None),
    ("pools_ms_postgres", "  baseline: GET /pools (ms)", None),
    ("pass_totals_ms_postgres", "first pass after 10k, with totals (ms)", None),
    ("pass_no_totals_ms_postgres", "  baseline: without totals (ms)", None),
    ("pass_beside_scrapes_ms_postgres", "the pass while another process scrapes (ms)", None),
    ("pass_alone_scrapes_ms_postgres", "  baseline: the same pass alone (ms)", None),
    ("pass_beside_scrapes_cpu_ms_postgres", "  its CPU time beside (ms)", None),
    ("pass_alone_scrapes_cpu_ms_postgres", "  baseline: its CPU time alone (ms)", None),
    ("scrapes_cpu_pct_postgres", "  the scraper's CPU, % of the pass's wall time", None),
    ("others_cpu_pct_beside_scrapes_postgres", "  the rest of the machine's CPU, % of it", None),
    ("others_cpu_pct_alone_scrapes_postgres", "  the same, the pass alone", None),
    ("pass_load_scrapes_postgres", "  load average (1 min) as the passes began", None),
)


def main() -> None:
    figures = figures_on_both("metrics", "measure")
    print(f"{'figure':<48}{'measured':>10}{'target':>10}  verdict")
    for key, label, target in ROWS:
        value = figures.get(key)
        shown = "-" if value is None else f"{value:.1f}"
        verdict = "-" if target is None or value is None else ("ok" if value <= target else "OVER")
        print(f"{label:<48}{shown:>10}{'' if target is None else f'<= {target}':>10}  {verdict}")
    print_beside(figures, "scrapes", "a process scraping /metrics without pause")
    merge_section("metrics", figures, "measured_at")


def measure() -> dict[str, float]:
    from django.conf import settings
    from django.test import Client

    from bench.engine import make_snapshot
    from bench.runtime import _json_ready, _row, provision, setup_database
    from poolweb.models import DecisionTotal, HistogramTotal, Request as RequestRow
    from poolweb.services.totals import BOUNDS, GRANT_WAIT
    from reconcile.document_writer import to_document

    user = setup_database()
    scenario = make_snapshot(SCENARIO)
    provision(_json_ready(to_document(scenario.config)), user)
    from django.utils import timezone

    shift = timezone.now() - scenario.now
    RequestRow.objects.bulk_create([_row(r, user, shift) for r in scenario.requests], batch_size=2000)
    policies = [policy.name for policy in scenario.config.policies]
    DecisionTotal.objects.bulk_create([DecisionTotal(decision=kind, policy=policy, reason=reason, count=7)
                                       for policy in policies
                                       for kind, reason in (("grant", "Granted"), ("expiry", "LeaseExpired"))])
    HistogramTotal.objects.bulk_create(  # every policy has had grants
        [HistogramTotal(family=GRANT_WAIT, label=policy, buckets=[1] * (len(BOUNDS[GRANT_WAIT]) + 1), count=13,
                        total=99.5) for policy in policies])
    settings.POOLWEB = {**settings.POOLWEB, "METRICS_TOKEN": TOKEN, "METRICS_ALLOW": ()}
    scraper = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="localhost")
    reader = Client(HTTP_HOST="localhost")
    reader.force_login(user)
    figures = {"pending": RequestRow.objects.filter(state="pending").count(),
               "running": RequestRow.objects.filter(state="allocated").count()}
    for name, client, path in (("scrape", scraper, "/metrics"), ("policies", reader, "/api/v1/policies"),
                               ("pools", reader, "/api/v1/pools")):
        figures[f"{name}_ms"], figures[f"{name}_cpu_ms"] = _timed_get(client, path)
    figures.update(_passes())
    figures.update(_passes_beside_scrapes())
    return figures


def _timed_get(client, path: str) -> tuple[float, float]:
    """The median wall and CPU milliseconds of a GET: the CPU's too, as a loaded machine (others'
    tests on the same two cores) stretches the wall time of whatever runs."""
    client.get(path)  # warm: the live configuration's cache, the connection
    walls, cpus = [], []
    for _ in range(REPEAT):
        started, cpu = time.perf_counter(), time.process_time()
        response = client.get(path)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    return statistics.median(walls), statistics.median(cpus)


def _passes() -> dict[str, float]:
    """The same cold pass, rolled back each time, with and without the totals (alternating)."""
    from django.db import transaction

    from poolweb.services import reconciler
    from poolweb.services.reconciler import reconcile_pass

    real = (reconciler.totals_add_pass, reconciler.histogram_observe)
    found: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(PASS_REPEAT):
        for with_totals in (True, False):
            if not with_totals:
                reconciler.totals_add_pass = reconciler.histogram_observe = lambda *a, **k: None
            with transaction.atomic():
                started = time.perf_counter()
                reconcile_pass()
                found[with_totals].append((time.perf_counter() - started) * 1000)
                transaction.set_rollback(True)
            reconciler.totals_add_pass, reconciler.histogram_observe = real
    return {"pass_totals_ms": statistics.median(found[True]), "pass_no_totals_ms": statistics.median(found[False])}


def _passes_beside_scrapes() -> dict[str, float]:
    """The cold pass alone and while a scraper process runs (bench/beside.py)."""
    from bench.beside import pass_alone_and_beside

    return pass_alone_and_beside("metrics", "scrape_forever", PASS_REPEAT, "scrapes")


def scrape_forever() -> None:
    """Scrape ``/metrics`` until killed, saying once that the first scrape is done."""
    from django.conf import settings
    from django.test import Client

    from bench.beside import busy_until_killed

    settings.POOLWEB = {**settings.POOLWEB, "METRICS_TOKEN": TOKEN, "METRICS_ALLOW": ()}
    scraper = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="localhost")
    assert scraper.get("/metrics").status_code == 200
    busy_until_killed(lambda: scraper.get("/metrics"))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        import django

        django.setup()
        if sys.argv[1] == "scrape_forever":
            scrape_forever()
        print(json.dumps({"measure": measure}[sys.argv[1]]()))
    else:
        main()
