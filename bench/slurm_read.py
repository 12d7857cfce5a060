"""How fast the Slurm bridge reads the gated partitions (decision 129): ``Slurm.jobs()`` — one
``squeue -O`` and its parsing — beside ``scontrol show job -o`` for the same jobs, unparsed, on
a throwaway 4-node cluster (tests/slurm/cluster.py) holding N held jobs submitted one ``sbatch``
at a time by 4 clients. Prints best and median of 9 reads of each, in ms. Needs root and Debian's
Slurm; not in ``make bench``::

    python -m bench.slurm_read            # 1,000 jobs
    BENCH_SHORT=1 python -m bench.slurm_read   # 50
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from poolweb_slurm.slurm import Slurm

from tests.slurm.cluster import Cluster, Layout

JOBS = 50 if os.environ.get("BENCH_SHORT") else 1000
ROUNDS = 9
CLIENTS = 4


def timed(action: Callable[[], object]) -> tuple[float, float]:
    """Best and median of ROUNDS runs, in ms."""
    seconds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return min(seconds) * 1000, statistics.median(seconds) * 1000


def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="poolweb-slurm-bench-"))
    try:
        with Cluster.started(directory, Layout(nodes=4)) as cluster:
            started = time.perf_counter()
            with ThreadPoolExecutor(CLIENTS) as clients:
                list(clients.map(lambda _: cluster.submit("-p", "h100", "--gres=gpu:1", "-A", "dev", "--wrap", "true"),
                                 range(JOBS)))
            print(f"{JOBS} held jobs submitted in {time.perf_counter() - started:.1f} s by {CLIENTS} clients")
            slurm = Slurm(("bare-metal", "h100"), environment=cluster.environment())
            assert len(slurm.jobs()) == JOBS
            print("Slurm.jobs() (squeue -O and parsing): best %.0f ms, median %.0f ms" % timed(slurm.jobs))
            print("scontrol show job -o, unparsed:        best %.0f ms, median %.0f ms"
                  % timed(lambda: cluster.run("scontrol", "show", "job", "-o")))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
