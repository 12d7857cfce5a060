"""The configuration's pages at the limits of docs/api.md §1 (issue 17 item 17), on a fresh SQLite
database: the server time of ``/`` (the configuration page), the editor's board, ``/versions/``, ``/versions/2/``,
``/versions/1/diff/2/``, ``/queues/`` and ``/policies/``, as an admin, with the largest configuration
the limits allow (tests/poolweb/largest.py, provisioned twice: version 2 changes one pool) beside
the demo configuration. Per page: the first render (it also reads the version's rows), then the
median and the slowest of a few, in wall time and in the CPU time of the process (this machine is
shared: the CPU time moves less with the others' load), and the size of the page.

Run: ``python -m bench.config_pages`` (``make bench`` runs it). Prints a table and merges a
"config_pages" section into bench/results.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from bench.results import child_figures, merge_section, sized

RENDERS = int(os.environ.get("BENCH_CONFIG_PAGES_RENDERS", sized("5", "1")))
GOAL_MS = 1000  # each page at the limits (the goal on this machine)
PAGES = (("configuration", "GET", "/"), ("board", "POST", "/editor/board/"), ("versions", "GET", "/versions/"),
         ("version", "GET", "/versions/2/"),
         ("diff", "GET", "/versions/1/diff/2/"), ("queues", "GET", "/queues/"), ("policies", "GET", "/policies/"))


def main() -> None:
    figures = child_figures("config_pages", "run")
    report(figures)
    merge_section("config_pages", figures, "measured_at")


def report(figures: dict) -> None:
    print(f"{'page':<20}{'demo':>8}{'first':>9}{'median':>9}{'cpu':>9}{'slowest':>9}{'KB':>7}"
          "   (ms; the demo's median, then at the limits)")
    for name, _, path in PAGES:
        limits = [figures[f"{name}_limits_{figure}"] for figure in ("first_ms", "median_ms", "cpu_ms", "max_ms")]
        verdict = "ok" if max(limits) <= GOAL_MS else f"MISSES <= {GOAL_MS}"
        print(f"{path:<20}{figures[f'{name}_demo_median_ms']:>8.1f}" + "".join(f"{v:>9.1f}" for v in limits)
              + f"{figures[f'{name}_limits_kb']:>7.0f}  {verdict}")
    print(f"provisioning the configuration at the limits took {figures['provision_limits_ms']:.0f} ms")


# --- the child: a database, two configurations, the renders -----------------------------------------

def run() -> dict:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from poolweb.services.demo import demo_document
    from tests.poolweb.largest import largest_document

    call_command("migrate", verbosity=0)
    admin = User.objects.create_user("admin", is_staff=True)
    figures: dict[str, float] = {}
    # A short run renders the demo twice: the limits' document takes seconds to provision and render.
    for size, document in (("demo", demo_document()), ("limits", sized(largest_document, demo_document)())):
        figures.update(measure(size, document, admin))
    print(json.dumps(figures), flush=True)
    return figures


def measure(size: str, document: dict, admin) -> dict[str, float]:
    from django.test import Client

    from poolweb.models import ConfigVersion, SiteState
    from poolweb.services.config import config_provision_document

    SiteState.objects.filter(pk=1).update(live_version=None)
    ConfigVersion.objects.all().delete()  # the pages read versions 1 and 2
    started = time.perf_counter()
    config_provision_document(document=document, author=admin)
    figures = {f"provision_{size}_ms": (time.perf_counter() - started) * 1000}
    changed = json.loads(json.dumps(document))
    changed["pools"][0]["capacity"] = {**changed["pools"][0]["capacity"], "gpu": 16}
    config_provision_document(document=changed, author=admin)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(admin)
    board = json.dumps({"document": changed, "errors": [], "warnings": []})
    for name, method, path in PAGES:
        figures.update({f"{name}_{size}_{figure}": value
                        for figure, value in timed(lambda: fetch(client, method, path, board)).items()})
    return figures


def fetch(client, method: str, path: str, body: str):
    response = client.post(path, body, content_type="application/json") if method == "POST" else client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return response


def timed(render) -> dict[str, float]:
    """The first render (after a provision it also reads the version's rows), then ``RENDERS`` more."""
    started = time.perf_counter()
    response = render()
    first = (time.perf_counter() - started) * 1000
    wall, cpu = [], []
    for _ in range(RENDERS):
        started, used = time.perf_counter(), time.process_time()
        render()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return {"first_ms": first, "median_ms": statistics.median(wall), "max_ms": max(wall),
            "cpu_ms": statistics.median(cpu), "kb": len(response.content) / 1024}

if __name__ == "__main__":
    if sys.argv[1:] == ["run"]:
        run()
    else:
        main()
