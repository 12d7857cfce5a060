"""A pass alone and beside a busy process, interleaved: what another process's work (a scrape of
``/metrics``, a usage report) costs the pass loop's pass. bench/metrics.py and bench/usage.py
measure with it, in their child process (bench/runtime.py's way), on its database.

The pass is the one those benches time: ``reconcile_pass()`` in a transaction rolled back after
it, repeated. The busy process is ``python -m bench.<module> <part>`` with this process's
environment (the same database), which calls ``busy_until_killed``: it says once it is busy, then
repeats its work without pause; it is started before each pass beside it and killed after. One
pass alone first warms the caches and is not counted; then alone and beside alternate, the order
swapped every round (alone-beside, beside-alone), so a drift of the machine's load falls on both.

The machine has 2 cores: a busy process costs the pass wall time through CPU contention alone,
so beside each wall time is the pass's CPU time (this process's; on PostgreSQL the server's work
is not in it), the 1-minute load average as each pass began, and how much of the pass's wall
time the busy process spent on a CPU (its own process only: on PostgreSQL its queries' server
work is not in it), which says it was busy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from bench.slurm_bridge import cpu_seconds  # of processes by /proc


def pass_alone_and_beside(module: str, part: str, repeat: int) -> dict[str, float]:
    """Medians of ``repeat`` passes alone and ``repeat`` beside ``bench.<module> <part>``:
    ``alone_ms``, ``beside_ms``, their ``…_cpu_ms``, ``load`` (both kinds), ``busy_cpu_pct``."""
    from django.db import transaction

    from poolweb.services.reconciler import reconcile_pass

    found: dict[str, list[float]] = {"alone_ms": [], "beside_ms": [], "alone_cpu_ms": [], "beside_cpu_ms": [],
                                     "load": [], "busy_cpu_pct": []}
    _timed_pass(reconcile_pass, transaction)  # warms the caches; not counted
    for round_ in range(repeat):
        for beside in ((False, True) if round_ % 2 == 0 else (True, False)):
            busy = _start(module, part) if beside else None
            try:
                found["load"].append(os.getloadavg()[0])
                busy_cpu = cpu_seconds({busy.pid}) if busy else 0.0
                wall, cpu = _timed_pass(reconcile_pass, transaction)
                if busy is not None:
                    found["busy_cpu_pct"].append(100 * (cpu_seconds({busy.pid}) - busy_cpu) * 1000 / wall)
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            kind = "beside" if beside else "alone"
            found[f"{kind}_ms"].append(wall)
            found[f"{kind}_cpu_ms"].append(cpu)
    return {name: statistics.median(values) for name, values in found.items()}


def _timed_pass(reconcile_pass, transaction) -> tuple[float, float]:
    with transaction.atomic():
        started, cpu = time.perf_counter(), time.process_time()
        reconcile_pass()
        wall, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
        transaction.set_rollback(True)
    return wall, cpu


def _start(module: str, part: str) -> subprocess.Popen:
    busy = subprocess.Popen([sys.executable, "-m", f"bench.{module}", part], env=os.environ,
                            stdout=subprocess.PIPE, text=True)
    if busy.stdout.readline().strip() != "busy":
        busy.kill()
        raise SystemExit(f"bench.{module} {part} did not start")
    return busy


def busy_until_killed(work: Callable[[], object]) -> None:
    """Say "busy", then call ``work`` without pause until killed."""
    print("busy", flush=True)
    while True:
        work()
