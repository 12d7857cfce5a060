"""What the benches share: the short run, the child process a bench measures in, percentiles, and
merging figures into results.json."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results.json")
# BENCH_SHORT=1 (``make bench-smoke``, which CI runs): each module runs all its code at tiny sizes,
# once, and writes nothing to results.json, so that ``make bench`` cannot break unnoticed. Its
# figures mean nothing.
SHORT = os.environ.get("BENCH_SHORT") == "1"


def sized(full, short):
    """``full``, or ``short`` in a short run."""
    return short if SHORT else full


def child_figures(module: str, *args: str, database_url: str = "", timeout: float = 1800,
                  **environment: str) -> dict:
    """``python -m bench.<module> <args>`` in a process of its own (Django is set up once per
    process, for one database) on a throwaway database: SQLite in a temporary data directory, or
    ``database_url``; ``environment`` adds to its environment. Its figures are the last line it
    prints, as JSON; what it writes to stderr (its progress) passes through."""
    data_dir = tempfile.mkdtemp(prefix=f"poolweb-bench-{module}-")
    environment = {**os.environ, "POOLWEB_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "poolweb.settings",
                   "PYTHONUNBUFFERED": "1", "POOLWEB_LOG_LEVEL": "WARNING", **environment}
    environment.pop("DATABASE_URL", None)
    if database_url:
        environment["DATABASE_URL"] = database_url
    try:
        done = subprocess.run([sys.executable, "-m", f"bench.{module}", *args], cwd=ROOT, env=environment,
                              stdout=subprocess.PIPE, text=True, timeout=timeout)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"bench.{module} {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if p < 100 else max(values)


def merge_runtime(figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into the "runtime" section; other sections and keys are kept."""
    merge_section("runtime", figures, stamp)


def merge_section(name: str, figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into section ``name``, stamped; other sections and keys are kept."""

    def merge(results: dict) -> None:
        section = results.setdefault(name, {})
        section.update({key: None if value is None else round(value, 3) for key, value in figures.items()})
        section[stamp] = now()

    update_results(merge)


def update_results(change: Callable[[dict], None]) -> None:
    """results.json as ``change`` leaves it; not in a short run."""
    if SHORT:
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    change(results)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RESULTS}", file=sys.stderr)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
