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
work is not in it), which says it was busy, and how much the rest of the machine did meanwhile
(``others_cpu_pct``: every core's busy time less the pass's and the busy process's, as a share of
the pass's wall time; 200 % is both cores; on PostgreSQL the server's work, for the pass too, is
in it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from bench.slurm_bridge import cpu_seconds  # of processes by /proc

TICK = os.sysconf("SC_CLK_TCK")  # /proc/stat's unit


def pass_alone_and_beside(module: str, part: str, repeat: int, name: str) -> dict[str, float]:
    """Medians of ``repeat`` passes alone and ``repeat`` beside ``bench.<module> <part>``, named
    after what the busy process does (``name``): ``pass_beside_<name>_ms``, ``pass_alone_<name>_ms``,
    their ``…_cpu_ms``, ``others_cpu_pct_beside_<name>`` and ``…_alone_<name>``, ``<name>_cpu_pct``
    (the busy process's) and ``pass_load_<name>`` (as each pass began, alone or beside)."""
    from django.db import transaction

    from poolweb.services.reconciler import reconcile_pass

    found: dict[str, list[float]] = {key: [] for key in (
        "alone_ms", "beside_ms", "alone_cpu_ms", "beside_cpu_ms", "load", "busy_cpu_pct",
        "alone_others_cpu_pct", "beside_others_cpu_pct")}
    _timed_pass(reconcile_pass, transaction)  # warms the caches; not counted
    for round_ in range(repeat):
        for beside in ((False, True) if round_ % 2 == 0 else (True, False)):
            busy = _start(module, part) if beside else None
            try:
                found["load"].append(os.getloadavg()[0])
                busy_cpu, machine = _busy_cpu(busy), _machine_cpu_seconds()
                wall, cpu = _timed_pass(reconcile_pass, transaction)
                busy_cpu, machine = _busy_cpu(busy) - busy_cpu, _machine_cpu_seconds() - machine
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
            kind = "beside" if beside else "alone"
            found[f"{kind}_ms"].append(wall)
            found[f"{kind}_cpu_ms"].append(cpu)
            found[f"{kind}_others_cpu_pct"].append(100 * (machine - busy_cpu) * 1000 / wall - 100 * cpu / wall)
            if busy is not None:
                found["busy_cpu_pct"].append(100 * busy_cpu * 1000 / wall)
    keys = {"alone_ms": f"pass_alone_{name}_ms", "beside_ms": f"pass_beside_{name}_ms",
            "alone_cpu_ms": f"pass_alone_{name}_cpu_ms", "beside_cpu_ms": f"pass_beside_{name}_cpu_ms",
            "load": f"pass_load_{name}", "busy_cpu_pct": f"{name}_cpu_pct",
            "alone_others_cpu_pct": f"others_cpu_pct_alone_{name}",
            "beside_others_cpu_pct": f"others_cpu_pct_beside_{name}"}
    return {keys[key]: statistics.median(values) for key, values in found.items()}


def _busy_cpu(busy: subprocess.Popen | None) -> float:
    return cpu_seconds({busy.pid}) if busy is not None else 0.0


def _machine_cpu_seconds() -> float:
    """CPU time all processes spent so far, on every core (/proc/stat: user, nice, system, irq,
    softirq)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / TICK


def print_beside(figures: dict[str, float | None], name: str, busy: str) -> None:
    """A line per database and unit: the pass beside ``busy`` (what the busy process does) against
    the pass alone, from ``figures_on_both``'s figures of ``pass_alone_and_beside(…, name)``."""
    for db in ("sqlite", "postgres"):
        for unit, suffix in (("wall", "ms"), ("CPU", "cpu_ms")):
            beside = figures.get(f"pass_beside_{name}_{suffix}_{db}")
            alone = figures.get(f"pass_alone_{name}_{suffix}_{db}")
            if beside and alone:
                print(f"{db}: a pass beside {busy} is {100 * (beside / alone - 1):+.1f} % of one alone, {unit} "
                      "(goal: <= +5 %)")


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
