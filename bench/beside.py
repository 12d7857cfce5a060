"""A pass alone and beside a busy process, interleaved: what another process's work (a scrape of
``/metrics``, a usage report) costs the pass loop's pass. bench/metrics.py and bench/usage.py
measure with it, in their child process (bench/runtime.py's way), on its database.

The pass is the one those benches time: ``reconcile_pass()`` in a transaction rolled back after
it, repeated. The busy process is ``python -m bench.<module> <part>`` with this process's
environment (the same database), which calls ``busy_until_killed``: it says once it is busy, then
repeats its work without pause; it is started before each pass beside it and killed after. One
pass alone first warms the caches and is not counted; then alone and beside alternate, the order
swapped every round (alone-beside, beside-alone), so a drift of the machine's load falls on both;
with ``BENCH_WAIT_QUIET`` each pass waits a while for a quiet machine first.

The machine has 2 cores, shared: a busy process costs the pass wall time through CPU
contention alone, and more when a third process (another session's tests) takes a core. So
beside each wall time: the pass's CPU time (this process's; on PostgreSQL the server's work for
it is not in it), the 1-minute load average, how much of the pass's wall time the busy process
and its PostgreSQL session spent on a CPU (it was busy), and the rest of the machine meanwhile
(``others``: every core's busy time less the pass's, its PostgreSQL session's and the busy
process's, as a share of the pass's wall time; 200 % is both cores). A round whose two passes
both saw the rest of the machine under ``QUIET`` % of a core is a quiet one: a busy process
then had a core of its own, and the pass the other.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

from bench.slurm_bridge import cpu_seconds  # of processes by /proc

TICK = os.sysconf("SC_CLK_TCK")  # /proc/stat's unit
QUIET = 25  # a round counts as quiet when the rest of the machine used less than this % of a core
# BENCH_WAIT_QUIET=s: before each pass, wait up to s seconds for a second in which the machine
# used less than QUIET % of a core (others' tests come and go); 0, the default, waits for nothing.
WAIT_QUIET = float(os.environ.get("BENCH_WAIT_QUIET", "0"))


class Timed(NamedTuple):
    wall: float  # ms
    cpu: float  # ms, this process's
    load: float  # 1-minute load average as the pass began
    busy: float  # % of ``wall`` the busy process and its database session spent on a CPU
    others: float  # % of ``wall`` the rest of the machine spent on a CPU (200: both cores)


def pass_alone_and_beside(module: str, part: str, repeat: int, name: str) -> dict[str, float]:
    """Medians of ``repeat`` passes alone and ``repeat`` beside ``bench.<module> <part>``, named
    after what the busy process does (``name``): ``pass_beside_<name>_ms``, ``pass_alone_<name>_ms``,
    their ``…_cpu_ms``, ``others_cpu_pct_beside_<name>`` and ``…_alone_<name>``, ``<name>_cpu_pct``
    (the busy process's) and ``pass_load_<name>``; and over the rounds where the rest of the
    machine was quiet in both passes (``<name>_quiet_rounds`` of them), the median of the pass
    beside against the pass alone in per cent, ``pass_beside_<name>_quiet_pct`` and
    ``…_quiet_cpu_pct``."""
    own = _session_pids()
    _timed_pass()  # warms the caches; not counted
    rounds: list[tuple[Timed, Timed]] = []
    for round_ in range(repeat):
        found: dict[bool, Timed] = {}
        for beside in (False, True) if round_ % 2 == 0 else (True, False):
            _wait_quiet()
            found[beside] = _pass_beside(module, part, own) if beside else _pass_alone(own)
        rounds.append((found[False], found[True]))
    quiet = [(alone, beside) for alone, beside in rounds if max(alone.others, beside.others) < QUIET]

    def median(values) -> float | None:
        values = list(values)
        return statistics.median(values) if values else None

    return {f"pass_alone_{name}_ms": median(a.wall for a, _ in rounds),
            f"pass_beside_{name}_ms": median(b.wall for _, b in rounds),
            f"pass_alone_{name}_cpu_ms": median(a.cpu for a, _ in rounds),
            f"pass_beside_{name}_cpu_ms": median(b.cpu for _, b in rounds),
            f"{name}_cpu_pct": median(b.busy for _, b in rounds),
            f"others_cpu_pct_alone_{name}": median(a.others for a, _ in rounds),
            f"others_cpu_pct_beside_{name}": median(b.others for _, b in rounds),
            f"pass_load_{name}": median(t.load for pair in rounds for t in pair),
            f"{name}_quiet_rounds": len(quiet),
            f"pass_beside_{name}_quiet_pct": median(100 * (b.wall / a.wall - 1) for a, b in quiet),
            f"pass_beside_{name}_quiet_cpu_pct": median(100 * (b.cpu / a.cpu - 1) for a, b in quiet)}


def _pass_alone(own: set[int]) -> Timed:
    return _timed(own, set())


def _pass_beside(module: str, part: str, own: set[int]) -> Timed:
    busy, pids = _start(module, part)
    try:
        return _timed(own, pids)
    finally:
        busy.kill()
        busy.wait()


def _timed(own: set[int], busy: set[int]) -> Timed:
    """One pass, rolled back, and what the busy processes ``busy`` and the rest of the machine did
    meanwhile; ``own`` is this process's database session (its CPU is the pass's, not others')."""
    load = os.getloadavg()[0]
    before = cpu_seconds(busy), cpu_seconds(own), _machine_cpu_seconds()
    wall, cpu = _timed_pass()
    busy_cpu, own_cpu, machine = (b - a for a, b in zip(before, (cpu_seconds(busy), cpu_seconds(own),
                                                                   _machine_cpu_seconds())))
    return Timed(wall, cpu, load, 100 * busy_cpu * 1000 / wall,
                 100 * (machine - busy_cpu - own_cpu) * 1000 / wall - 100 * cpu / wall)


def print_beside(figures: dict[str, float | None], name: str, busy: str) -> None:
    """A line per database and unit: the pass beside ``busy`` (what the busy process does) against
    the pass alone, from ``figures_on_both``'s figures of ``pass_alone_and_beside(…, name)``; then
    the same over the quiet rounds."""
    for db in ("sqlite", "postgres"):
        for unit, suffix in (("wall", "ms"), ("CPU", "cpu_ms")):
            beside = figures.get(f"pass_beside_{name}_{suffix}_{db}")
            alone = figures.get(f"pass_alone_{name}_{suffix}_{db}")
            if beside and alone:
                print(f"{db}: a pass beside {busy} is {100 * (beside / alone - 1):+.1f} % of one alone, {unit} "
                      "(goal: <= +5 %)")
        wall = figures.get(f"pass_beside_{name}_quiet_pct_{db}")
        if wall is not None:
            print(f"{db}:   in the {figures[f'{name}_quiet_rounds_{db}']:.0f} rounds where the rest of the machine "
                  f"used under {QUIET} % of a core: {wall:+.1f} % wall, "
                  f"{figures[f'pass_beside_{name}_quiet_cpu_pct_{db}']:+.1f} % CPU")


def _timed_pass() -> tuple[float, float]:
    """A pass's wall and CPU milliseconds, the pass rolled back."""
    from django.db import transaction

    from poolweb.services.reconciler import reconcile_pass

    with transaction.atomic():
        started, cpu = time.perf_counter(), time.process_time()
        reconcile_pass()
        wall, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
        transaction.set_rollback(True)
    return wall, cpu


def _start(module: str, part: str) -> tuple[subprocess.Popen, set[int]]:
    """The busy process, once busy, and its pids: its own and its database session's."""
    busy = subprocess.Popen([sys.executable, "-m", f"bench.{module}", part], env=os.environ,
                            stdout=subprocess.PIPE, text=True)
    said = busy.stdout.readline().split()
    if said[:1] != ["busy"]:
        busy.kill()
        raise SystemExit(f"bench.{module} {part} did not start")
    return busy, {busy.pid, *map(int, said[1:])}


def _session_pids() -> set[int]:
    """The PostgreSQL server process of this process's connection (none on SQLite: in process)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return {cursor.fetchone()[0]}


def _wait_quiet() -> None:
    """Until the machine was quiet for a second, or ``WAIT_QUIET`` seconds went by."""
    deadline = time.monotonic() + WAIT_QUIET
    while time.monotonic() < deadline:
        before = _machine_cpu_seconds()
        time.sleep(1)
        if 100 * (_machine_cpu_seconds() - before) < QUIET:
            return


def _machine_cpu_seconds() -> float:
    """CPU time all processes spent so far, on every core (/proc/stat: user, nice, system, irq,
    softirq)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6)) / TICK


def busy_until_killed(work: Callable[[], object]) -> None:
    """Say "busy" (and the pid of this process's PostgreSQL session), then call ``work`` without
    pause until killed."""
    print("busy", *_session_pids(), flush=True)
    while True:
        work()
