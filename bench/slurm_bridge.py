"""What the Slurm bridge's gate costs (issue 19, decision 146): N one-GPU jobs into the 512 GPUs of
one throwaway cluster (tests/slurm/cluster.py: 64 nodes × 8 fake GPUs), twice in the same run, over
the same nodes, with the same job script:

- ``peer``: partition ``open``, plain Slurm tuned as the shared note says (tests/slurm/config.py);
- ``gated``: partition ``gpu``, held by Poolweb's job_submit.lua, with ``poolweb-slurm run``
  (poll_seconds 0.3, ``BENCH_POLL_SECONDS``) and a live Poolweb (``manage.py serve`` on a throwaway
  SQLite database: one pool of 512 GPUs, the fixed 1-GPU profile ``one``, one policy without quotas)
  between them. The bridge starts after the peer's run, so the peer runs on plain Slurm alone.

Each run is a burst of N ``sbatch --parsable`` from 4 concurrent clients; t0 is the first sbatch
sent, for both: the peer starts jobs during the burst, and the gate's cost includes what it does to
the burst (the Lua plugin in sbatch's path); the burst's own rate is printed beside. Every job
waits for a shared lock on a file (``flock -s``, no CPU)
that the bench holds until the burst is over and the first 512 have started, then releases: the
first wave ends at once and the other N - 512 wait for capacity in both runs, however slow the
burst (on this machine, 25-50 sbatch/s while 512 jobs launch: with ``sleep 5`` jobs the peer
never filled its GPUs). A job's start is slurmctld's own time stamp at ms (``sched: Allocate
JobId=…``, or backfill's ``Started JobId=…``), its submission the bench's clock when its sbatch
returned. Figures per run: the first 512 started (from t0), the others started (from the
freeing), all started (from t0), latencies per job. Goals: the gated run at most 1 s behind the
peer on the first 512, and at most 20 % on all started.

Where the gated run's time goes: per job, Poolweb's ``submitted_at`` (registered), ``allocated_at``
and ``finished_at`` (released), read from the database, and when the bridge's grant (``scontrol
update`` and ``release``) returned; per poll of the bridge, the wall time of each part and of each
Slurm command and HTTP call (bench/slurm_bridge_report.py). The bridge runs as ``python -m
bench.slurm_bridge_timing MAPPING PROFILE``: ``poolweb-slurm run`` itself, with timers wrapped
around its calls, writing them to PROFILE when it stops; its polls' timeline goes to stderr. Idle
cost: the CPU the bridge, the server and slurmctld use while nothing is submitted, before the
gated burst.

The machine's CPUs are split as a real cluster's hosts are (decision 194, ``BENCH_CPUS``): half
for the controller host's slurmctld, Poolweb and the bridge; half for what runs on other hosts, the
nodes' slurmd and job steps and the users' sbatch; ``BENCH_CPUS=shared`` runs everything on every
CPU. Beside the times, the CPU seconds slurmctld, munged, the server and the bridge used during each
run.

Needs root and Debian's Slurm; skips, saying why, without them. ``BENCH_SHORT=1``: 4 nodes, 40
jobs, nothing written; ``BENCH_KEEP_LOGS=DIR``: slurmctld's and the bridge's logs copied there.
Prints a table and writes the "slurm_bridge" section of bench/results.json.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.results import now, percentile, sized, update_results
from bench.slurm_bridge_report import compared, report, where_the_time_goes
from bench.slurm_bridge_timing import BridgeProcess, bridge_running

NODES = sized(64, 4)
GPUS = NODES * 8
JOBS = sized(1000, 40)
FIRST_WAVE = min(GPUS, JOBS)
CLIENTS = 4
POLL_SECONDS = float(os.environ.get("BENCH_POLL_SECONDS", "0.3"))
IDLE_SECONDS = sized(5.0, 1.0)
WAIT_SECONDS = sized(300, 120)  # for every job to start, or to end
ACCOUNT = "bench"  # Slurm's -A, and Poolweb's policy of the same name
CLUSTER = "bench"
PEER, GATED = "open", "gpu"  # the two partitions, each over every node
# Which CPUs run what (BENCH_CPUS, decision 194). "split": on a real cluster the controller host runs
# slurmctld, Poolweb and the bridge, and the job steps run on other hosts, as the users' sbatch does;
# so half the CPUs run the first (and the Slurm commands the bridge starts), the other half the nodes'
# slurmd, their jobs, the bursts' sbatch and the bench itself; munged, on every host, may use all.
# "shared": every process on every CPU, as the bench ran before.
LAYOUTS = ("split", "shared")
LAYOUT = os.environ.get("BENCH_CPUS", "split")
EVERY_CPU = frozenset(os.sched_getaffinity(0))
CONTROLLER_CPUS = frozenset(sorted(EVERY_CPU)[:max(1, len(EVERY_CPU) // 2)])
ELSEWHERE_CPUS = EVERY_CPU - CONTROLLER_CPUS or EVERY_CPU

DOCUMENT = {
    "pools": [{"name": GATED, "capacity": {"gpu": GPUS}}],
    "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": GATED}], "policies": [ACCOUNT]}],
    "policies": [{"name": ACCOUNT, "group": ACCOUNT}],
}
MAPPING = f"""\
cluster = "{CLUSTER}"

[pools]
{GATED} = "{GATED}"

[bridge]
poll_seconds = {POLL_SECONDS}
"""
# slurmctld's line when it allocates a job's nodes: the main scheduler's, or backfill's.
STARTED = re.compile(r"^\[([0-9T:.-]+)\] sched(?:: Allocate JobId=(\d+)|/backfill: _start_job: Started JobId=(\d+))")
ENDED = re.compile(r"^\[([0-9T:.-]+)\] _job_complete: JobId=(\d+) done")  # ... when it learns a job ended


def reason_to_skip() -> str | None:
    """As the Slurm tests skip (tests/slurm/conftest.py)."""
    from tests.slurm.cluster import missing_binaries

    if missing := missing_binaries():
        return f"Slurm is not installed ({', '.join(missing)} missing): apt-get install slurmctld slurmd slurm-client munge"
    if os.geteuid() != 0:
        return "the Slurm bench runs slurmd as root (it starts jobs as their users)"
    return None


# --- a run: a burst, and when each job started ---------------------------------------------------

@dataclass
class Run:
    name: str
    t0: float  # the first sbatch sent
    submitted: dict[str, float]  # job → when its sbatch returned
    burst_end: float
    freed: float  # when the first wave was let end
    started: dict[str, float]  # job → slurmctld's allocation
    by_backfill: int  # jobs that backfill started, not the main scheduler
    ended: dict[str, float]  # job → when slurmctld learnt it ended

    def figures(self) -> dict[str, float]:
        starts = sorted(self.started.values())
        first = [at - self.submitted[job] for job, at in self.started.items() if at <= self.freed]
        second = [at - self.freed for at in self.started.values() if at > self.freed]
        figures = {"submit_per_s": len(self.submitted) / (self.burst_end - self.t0), "burst_s": self.burst_end - self.t0,
                   "first_wave_s": starts[FIRST_WAVE - 1] - self.t0, "freed_s": self.freed - self.t0,
                   "second_wave_s": starts[-1] - self.freed, "all_started_s": starts[-1] - self.t0,
                   "wave1_latency_p50_s": statistics.median(first), "wave1_latency_p95_s": percentile(first, 95),
                   "started_by_backfill": self.by_backfill}
        wave1_ended = [self.ended[job] for job, at in self.started.items() if at <= self.freed and job in self.ended]
        if wave1_ended:  # the freed first wave's last end in Slurm: what the second wave waits for, in both runs
            figures["wave1_ended_s"] = max(wave1_ended) - self.freed
        if second:
            figures.update(wave2_latency_p50_s=statistics.median(second), wave2_latency_p95_s=percentile(second, 95))
        return {f"{self.name}_{key}": value for key, value in figures.items()}


def burst(cluster, partition: str, gate: Path) -> tuple[float, dict[str, float], float]:
    """JOBS sbatch calls from CLIENTS threads: t0, each job's submission, the burst's end. Each
    job runs until it gets a shared lock on ``gate``, which the bench holds until it frees the
    first wave: it waits in flock(2), using no CPU, and the second wave waits for capacity
    however slow the burst is."""
    command = ["sbatch", "--parsable", "--output=/dev/null", "-p", partition, "-A", ACCOUNT, "--gres=gpu:1",
               "--wrap", f"flock -s {gate} true"]
    environment = cluster.environment()

    def client(count: int) -> dict[str, float]:
        mine = {}
        for _ in range(count):
            done = subprocess.run(command, env=environment, cwd=cluster.directory / "jobs", capture_output=True,
                                  text=True, timeout=60, check=True, stdin=subprocess.DEVNULL)
            mine[done.stdout.strip().split(";")[0]] = time.time()
        return mine

    shares = [JOBS // CLIENTS + (n < JOBS % CLIENTS) for n in range(CLIENTS)]
    t0 = time.time()
    with ThreadPoolExecutor(CLIENTS) as pool:
        parts = list(pool.map(client, shares))
    return t0, {job: at for part in parts for job, at in part.items()}, time.time()


def completions(log: Path) -> dict[str, float]:
    """Each job's end in slurmctld's log (local time)."""
    return {match.group(2): datetime.fromisoformat(match.group(1)).timestamp()
            for line in log.read_text(errors="replace").splitlines() if (match := ENDED.match(line))}


def allocations(log: Path) -> dict[str, tuple[float, bool]]:
    """Each job's first allocation in slurmctld's log (local time, as slurmctld writes it), and
    whether backfill made it."""
    found: dict[str, tuple[float, bool]] = {}
    for line in log.read_text(errors="replace").splitlines():
        if match := STARTED.match(line):
            found.setdefault(match.group(2) or match.group(3),
                             (datetime.fromisoformat(match.group(1)).timestamp(), match.group(3) is not None))
    return found


def measure(cluster, name: str, partition: str) -> Run:
    """The burst; once it is over and the first wave has started, the first wave let end (the
    lock its jobs wait for released); every job started, then ended."""
    gate = cluster.directory / "jobs" / f"{name}.lock"
    log = cluster.directory / "log" / "slurmctld.log"
    found: dict[str, tuple[float, bool]] = {}
    with gate.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        t0, submitted, burst_end = burst(cluster, partition, gate)

        def started(count: int) -> Callable[[], bool]:
            def enough() -> bool:
                found.update({job: start for job, start in allocations(log).items() if job in submitted})
                return len(found) >= count
            return enough

        wait_until(started(FIRST_WAVE), f"the {name} run's first {FIRST_WAVE} jobs to start",
                   lambda: f"{len(found)} started; squeue: {job_states(cluster, partition)}")
        freed = time.time()
    wait_until(started(len(submitted)), f"the {name} run's {len(submitted)} jobs to start",
               lambda: f"{len(found)} started; squeue: {job_states(cluster, partition)}")
    wait_until(lambda: not job_states(cluster, partition), f"the {name} run's jobs to end",
               lambda: f"squeue: {job_states(cluster, partition)}")
    return Run(name, t0, submitted, burst_end, freed, {job: at for job, (at, _) in found.items()},
               sum(backfill for _, backfill in found.values()),
               {job: at for job, at in completions(log).items() if job in submitted})


def job_states(cluster, partition: str) -> dict[str, int]:
    """How many of the partition's jobs are in each state, ended ones aside."""
    lines = cluster.run("squeue", "-h", "-p", partition, "-t", "PD,CF,R,CG", "-o", "%T", check=False).stdout.split()
    return {state: lines.count(state) for state in sorted(set(lines))}


def wait_until(condition: Callable[[], object], what: str, state: Callable[[], str],
               seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {seconds} s for {what}: {state()}")
        time.sleep(0.2)


# --- the whole bench ---------------------------------------------------------------------------

def main() -> None:
    if reason := reason_to_skip():
        print(f"bench.slurm_bridge skipped: {reason}")
        return
    if LAYOUT not in LAYOUTS:
        sys.exit(f"bench.slurm_bridge: BENCH_CPUS={LAYOUT!r}: use one of {', '.join(LAYOUTS)}")
    if LAYOUT == "split":
        os.sched_setaffinity(0, ELSEWHERE_CPUS)  # what the bench starts inherits it: munged, slurmd, the jobs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench.slurm_bridge: stopped by SIGTERM"))
    directory = Path(tempfile.mkdtemp(prefix="poolweb-slurm-bench-"))
    try:
        figures = measured(directory)
    finally:
        if keep := os.environ.get("BENCH_KEEP_LOGS"):  # slurmctld's and the bridge's logs, to read a run again
            for log in (directory / "cluster" / "log" / "slurmctld.log", directory / "bridge.log"):
                with contextlib.suppress(OSError):
                    shutil.copy(log, Path(keep) / log.name)
        shutil.rmtree(directory, ignore_errors=True)
    report(figures)
    # The section is replaced, not merged: which kinds of calls the bridge made varies from run to run.
    update_results(lambda results: results.update(slurm_bridge={
        **{key: round(value, 3) for key, value in figures.items()}, "measured_at": now()}))


def measured(directory: Path) -> dict[str, float]:
    """Poolweb's throwaway database (Django set up here, on SQLite under ``directory``), the
    server, the cluster; the peer's run, then the bridge and the gated run; everything stopped."""
    from tests.live_server import LiveServer
    from tests.slurm.cluster import Cluster, Layout, Partition

    data = directory / "poolweb"
    data.mkdir()
    os.environ.pop("DATABASE_URL", None)
    os.environ.update(POOLWEB_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="poolweb.settings",
                      POOLWEB_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    token = prepare_database()
    everyone = tuple(range(1, NODES + 1))
    layout = Layout(nodes=NODES, partitions=(Partition(PEER, everyone, gated=False, default=True),
                                             Partition(GATED, everyone, gated=True)))
    figures: dict[str, float] = {"nodes": NODES, "gpus": GPUS, "jobs": JOBS, "poll_seconds": POLL_SECONDS,
                                 "cpus_split": LAYOUT == "split", "cpus_controller": len(CONTROLLER_CPUS),
                                 "cpus_elsewhere": len(ELSEWHERE_CPUS), "cpus": len(EVERY_CPU),
                                 "load_1m_start": os.getloadavg()[0]}
    started = time.monotonic()
    with LiveServer(os.environ, data / "server.log") as server, \
            Cluster.started(directory / "cluster", layout) as cluster:
        print(f"cluster of {NODES} nodes and server up in {time.monotonic() - started:.0f} s; "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        plane = control_plane(None, server, cluster)
        place(plane)
        before = cpu_by_group(plane)
        peer = measure(cluster, "peer", PEER)
        figures.update(peer.figures(), **cpu_spent("peer", before, plane))
        figures["load_1m_between"] = os.getloadavg()[0]
        print(f"peer run done: {json.dumps(peer.figures())}", file=sys.stderr)
        mapping = directory / "slurm-bridge.toml"
        mapping.write_text(MAPPING)
        with bridge_running(cluster, server, token, mapping) as bridge:
            figures.update(idle_cost(bridge, server, cluster))
            plane = control_plane(bridge, server, cluster)
            place(plane)
            before = cpu_by_group(plane)
            gated = measure(cluster, "gated", GATED)
            figures.update(gated.figures(), **cpu_spent("gated", before, plane))
            figures["load_1m_end"] = os.getloadavg()[0]
        figures.update(where_the_time_goes(gated, bridge.profile()))
    figures.update(compared(figures))
    return figures


def prepare_database() -> str:
    """Migrate; the bridge's account (may submit for others) and ``root`` (whose jobs the bench
    submits) in team ``bench``; the pool, profile and policy. The bridge's token."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from poolweb.services.config import config_provision_document
    from poolweb.services.submit_for_others import submit_for_others_grant
    from poolweb.services.tokens import token_issue

    call_command("migrate", verbosity=0)
    bridge = User.objects.create_user("slurm-bridge", is_staff=True, is_superuser=True)
    submit_for_others_grant(username="slurm-bridge", granted=True)
    User.objects.create_user("root").groups.add(Group.objects.create(name=ACCOUNT))
    config_provision_document(document=DOCUMENT, author=bridge, comment="the Slurm bridge's bench")
    return token_issue(user=bridge)


def control_plane(bridge: BridgeProcess | None, server, cluster) -> dict[str, Callable[[], set[int]]]:
    """The processes of the bridge (None: not started), the server and slurmctld, by group."""
    from tests.live_server import descendants

    def daemon(name: str) -> int:
        return next(process.pid for process in cluster.processes if process.args[0].endswith(name))

    controller, munged = daemon("slurmctld"), daemon("munged")
    return {"bridge": lambda: {bridge.process.pid} if bridge else set(),
            "server": lambda: {server.process.pid} | descendants(server.process.pid),
            "slurmctld": lambda: {controller}, "munged": lambda: {munged}}


def place(groups: dict[str, Callable[[], set[int]]]) -> None:
    """With ``BENCH_CPUS=split``, every thread of the controller host's processes on its CPUs,
    munged's on all; their children (the bridge's squeue and scontrol) inherit it."""
    if LAYOUT != "split":
        return
    for name, pids in groups.items():
        cpus = EVERY_CPU if name == "munged" else CONTROLLER_CPUS
        for pid in pids():
            for thread in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):  # ended meanwhile
                    os.sched_setaffinity(int(thread.name), cpus)


def cpu_by_group(groups: dict[str, Callable[[], set[int]]]) -> dict[str, float]:
    return {name: cpu_seconds(pids()) for name, pids in groups.items()}


def cpu_spent(run: str, before: dict[str, float], groups: dict[str, Callable[[], set[int]]]) -> dict[str, float]:
    """CPU seconds each group used during a run (the whole run: burst, both waves, the ends)."""
    after = cpu_by_group(groups)
    return {f"{run}_cpu_s_{name}": after[name] - before[name] for name in groups}


def idle_cost(bridge: BridgeProcess, server, cluster) -> dict[str, float]:
    """CPU (% of one core) of the bridge, the server's processes and slurmctld over IDLE_SECONDS
    with nothing submitted: what polling every POLL_SECONDS costs when there is nothing to do."""
    groups = control_plane(bridge, server, cluster)
    time.sleep(1.0)  # its first polls
    before = cpu_by_group(groups)
    time.sleep(IDLE_SECONDS)
    return {f"idle_cpu_pct_{name}": 100 * (seconds - before[name]) / IDLE_SECONDS
            for name, seconds in cpu_by_group(groups).items()}


def cpu_seconds(pids: set[int]) -> float:
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
