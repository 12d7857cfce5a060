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
the burst (the Lua plugin in sbatch's path, the bridge's polls on the same 2 cores); the burst's
own rate is printed beside. Every job waits for a shared lock on a file (``flock -s``, no CPU)
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
Slurm command and HTTP call. The bridge runs as ``python -m bench.slurm_bridge bridge MAPPING
PROFILE``: ``poolweb-slurm run`` itself, with timers wrapped around its calls, writing them to
PROFILE when it stops; its polls' timeline goes to stderr. Idle cost: the CPU the bridge, the
server and slurmctld use while nothing is submitted, before the gated burst.

Needs root and Debian's Slurm; skips, saying why, without them. ``BENCH_SHORT=1``: 4 nodes, 40
jobs, nothing written. Prints a table and merges a "slurm_bridge" section into bench/results.json.
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
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.results import ROOT, SHORT, merge_section, percentile, sized

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
GOAL_FIRST_WAVE_S = 1.0
GOAL_ALL_STARTED = 0.20

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

    def figures(self) -> dict[str, float]:
        starts = sorted(self.started.values())
        first = [at - self.submitted[job] for job, at in self.started.items() if at <= self.freed]
        second = [at - self.freed for at in self.started.values() if at > self.freed]
        figures = {"submit_per_s": len(self.submitted) / (self.burst_end - self.t0), "burst_s": self.burst_end - self.t0,
                   "first_wave_s": starts[FIRST_WAVE - 1] - self.t0, "freed_s": self.freed - self.t0,
                   "second_wave_s": starts[-1] - self.freed, "all_started_s": starts[-1] - self.t0,
                   "wave1_latency_p50_s": statistics.median(first), "wave1_latency_p95_s": percentile(first, 95),
                   "started_by_backfill": self.by_backfill}
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
               sum(backfill for _, backfill in found.values()))


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
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench.slurm_bridge: stopped by SIGTERM"))
    directory = Path(tempfile.mkdtemp(prefix="poolweb-slurm-bench-"))
    try:
        figures = measured(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report(figures)
    merge_section("slurm_bridge", figures, "measured_at")


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
    figures: dict[str, float] = {"nodes": NODES, "gpus": GPUS, "jobs": JOBS,
                                 "poll_seconds": POLL_SECONDS, "load_1m_start": os.getloadavg()[0]}
    started = time.monotonic()
    with LiveServer(os.environ, data / "server.log") as server, \
            Cluster.started(directory / "cluster", layout) as cluster:
        print(f"cluster of {NODES} nodes and server up in {time.monotonic() - started:.0f} s; "
              f"load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        peer = measure(cluster, "peer", PEER)
        figures.update(peer.figures())
        figures["load_1m_between"] = os.getloadavg()[0]
        print(f"peer run done: {json.dumps(peer.figures())}", file=sys.stderr)
        with bridge_running(cluster, server, token, directory) as bridge:
            figures.update(idle_cost(bridge, server, cluster))
            gated = measure(cluster, "gated", GATED)
            figures.update(gated.figures())
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


# --- the bridge, timed -----------------------------------------------------------------------------

@dataclass
class BridgeProcess:
    process: subprocess.Popen
    log: Path
    profile_file: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def profile(self) -> dict:
        if not self.profile_file.exists():
            raise RuntimeError(f"the bridge left no profile:\n{self.output()}")
        return json.loads(self.profile_file.read_text())

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:] if self.log.exists() else ""


@contextlib.contextmanager
def bridge_running(cluster, server, token: str, directory: Path) -> Iterator[BridgeProcess]:
    """``poolweb-slurm run`` with timers, as a platform team runs it; stopped by SIGTERM (it then
    writes its profile), killed if it does not stop."""
    mapping = directory / "slurm-bridge.toml"
    mapping.write_text(MAPPING)
    environment = {**cluster.environment(), "POOLWEB_URL": server.url, "POOLWEB_TOKEN": token,
                   "PYTHONUNBUFFERED": "1"}
    log = directory / "bridge.log"
    with log.open("ab") as sink:
        process = subprocess.Popen([sys.executable, "-m", "bench.slurm_bridge", "bridge", str(mapping),
                                    str(directory / "bridge-profile.json")], cwd=ROOT, env=environment,
                                   stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    bridge = BridgeProcess(process, log, directory / "bridge-profile.json")
    try:
        wait_until(lambda: "bridge of cluster" in bridge.output() or process.poll() is not None,
                   "the bridge to start", bridge.output, seconds=60)
        if process.poll() is not None:
            raise RuntimeError(f"the bridge ended with {process.returncode}:\n{bridge.output()}")
        try:
            yield bridge
        except BaseException:
            print(f"the bridge's last output:\n{bridge.output()}", file=sys.stderr)
            raise
        if process.poll() is not None:
            raise RuntimeError(f"the bridge ended with {process.returncode} during the run:\n{bridge.output()}")
    finally:
        bridge.stop()
    if "Traceback" in bridge.output():
        raise RuntimeError(f"the bridge failed:\n{bridge.output()}")


def idle_cost(bridge: BridgeProcess, server, cluster) -> dict[str, float]:
    """CPU (% of one core) of the bridge, the server's processes and slurmctld over IDLE_SECONDS
    with nothing submitted: what polling every POLL_SECONDS costs when there is nothing to do."""
    from tests.live_server import descendants

    controller = next(process.pid for process in cluster.processes if process.args[0].endswith("slurmctld"))
    groups = {"bridge": lambda: {bridge.process.pid},
              "server": lambda: {server.process.pid} | descendants(server.process.pid),
              "slurmctld": lambda: {controller}}
    time.sleep(1.0)  # its first polls
    before = {name: cpu_seconds(pids()) for name, pids in groups.items()}
    time.sleep(IDLE_SECONDS)
    return {f"idle_cpu_pct_{name}": 100 * (cpu_seconds(pids()) - before[name]) / IDLE_SECONDS
            for name, pids in groups.items()}


def cpu_seconds(pids: set[int]) -> float:
    ticks = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


# --- where the gated run's time goes -----------------------------------------------------------------

def where_the_time_goes(gated: Run, profile: dict) -> dict[str, float]:
    """The gated run's milestones: the first wave's from t0 (each job registered, allocated by
    Poolweb, granted, started by Slurm: when its FIRST_WAVE-th got there), the second wave's from
    the moment the first was freed (the first wave's requests released, the second's allocated,
    granted and started: when the last got there); the bridge's polls (t0 to the last start) by part."""
    from poolweb.models import Request

    registered, allocated, released = {}, {}, {}
    for labels, submitted_at, allocated_at, finished_at in Request.objects.values_list(
            "labels", "submitted_at", "allocated_at", "finished_at"):
        job = labels.get("slurm_job")
        registered[job] = submitted_at.timestamp()
        if allocated_at is not None:
            allocated[job] = allocated_at.timestamp()
        if finished_at is not None:
            released[job] = finished_at.timestamp()
    granted = profile["granted"]
    first = {job for job, at in gated.started.items() if at <= gated.freed}
    second = set(gated.started) - first
    figures: dict[str, float] = {}
    for stage, times in (("registered", registered), ("pool_allocated", allocated), ("granted", granted),
                         ("started", gated.started)):
        mine = sorted(times[job] for job in first if job in times)
        if len(mine) == len(first):
            figures[f"gated_wave1_{stage}_s"] = mine[-1] - gated.t0
    for stage, jobs, times in (("released", first, released), ("pool_allocated", second, allocated),
                               ("granted", second, granted), ("started", second, gated.started)):
        mine = sorted(times[job] for job in jobs if job in times)
        if jobs and len(mine) == len(jobs):
            figures[f"gated_wave2_{stage}_s"] = mine[-1] - gated.freed
    end = max(gated.started.values())
    polls = [poll for poll in profile["polls"] if gated.t0 <= poll["start"] <= end]
    print_polls(polls, gated.t0)
    figures["bridge_polls"] = len(polls)
    if polls:
        spent = [poll["seconds"] for poll in polls]
        figures["bridge_poll_p50_ms"] = 1000 * statistics.median(spent)
        figures["bridge_poll_max_ms"] = 1000 * max(spent)
        figures["bridge_busy_s"] = sum(spent)
        for part in sorted({part for poll in polls for part in poll["parts"]}):
            figures[f"bridge_s_{slug(part)}"] = sum(poll["parts"].get(part, 0.0) for poll in polls)
        figures["bridge_s_other"] = sum(spent) - sum(sum(poll["parts"].values()) for poll in polls)
    calls: dict[str, list[float]] = {}
    for poll in polls:
        for kind, (count, seconds) in poll["calls"].items():
            calls.setdefault(kind, [0, 0.0])
            calls[kind][0] += count
            calls[kind][1] += seconds
    for kind, (count, seconds) in calls.items():
        figures[f"bridge_calls_{slug(kind)}"] = count
        figures[f"bridge_call_s_{slug(kind)}"] = seconds
    return figures


def print_polls(polls: list[dict], t0: float) -> None:
    """Each poll of the gated run, to stderr: when, how long, what it planned, its longest parts."""
    print("the bridge's polls in the gated run: start from t0, seconds, planned, parts over 0.1 s", file=sys.stderr)
    for poll in polls:
        planned = ", ".join(f"{count} {what}" for what, count in poll.get("planned", {}).items() if count)
        parts = ", ".join(f"{part} {seconds:.2f}" for part, seconds in
                          sorted(poll["parts"].items(), key=lambda item: -item[1]) if seconds >= 0.1)
        print(f"  +{poll['start'] - t0:6.2f} s {poll['seconds']:6.2f} s  {planned or '-'}  [{parts}]", file=sys.stderr)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def compared(figures: dict[str, float]) -> dict[str, float]:
    """Gated minus peer (``first_wave_extra_s`` …), and gated / peer on all started."""
    extra = {f"{key.removesuffix('_s')}_extra_s": figures[f"gated_{key}"] - figures[f"peer_{key}"] for key in
             ("first_wave_s", "second_wave_s", "all_started_s", "wave1_latency_p50_s", "wave1_latency_p95_s",
              "wave2_latency_p50_s", "wave2_latency_p95_s") if f"gated_{key}" in figures and f"peer_{key}" in figures}
    return {**extra, "all_started_ratio": figures["gated_all_started_s"] / figures["peer_all_started_s"]}


# --- the table ----------------------------------------------------------------------------------------

ROWS = (
    ("submit_per_s", "sbatch/s, 4 clients"),
    ("burst_s", f"the burst of {JOBS} (s)"),
    ("first_wave_s", f"first {FIRST_WAVE} started, from t0 (s)"),
    ("wave1_latency_p50_s", "  their submit → start, median (s)"),
    ("wave1_latency_p95_s", "  their submit → start, p95 (s)"),
    ("freed_s", "first wave freed, from t0 (s)"),
    ("second_wave_s", f"the other {JOBS - FIRST_WAVE} started, from then (s)"),
    ("wave2_latency_p50_s", "  their start, median from then (s)"),
    ("all_started_s", f"all {JOBS} started, from t0 (s)"),
)
STAGES = (("registered", "registered in Poolweb"), ("released", "the first wave's requests released"),
          ("pool_allocated", "allocated by Poolweb"), ("granted", "granted by the bridge (its scontrol returned)"),
          ("started", "started by Slurm"))


def report(figures: dict[str, float]) -> None:
    print(f"{'slurm bridge: ' + str(JOBS) + ' jobs, ' + str(GPUS) + ' GPUs':<44}{'peer':>8}{'gated':>8}{'gated-peer':>12}"
          "  goal")
    goals = {"first_wave_s": f"<= +{GOAL_FIRST_WAVE_S:g} s  " + verdict(figures["first_wave_extra_s"] <= GOAL_FIRST_WAVE_S),
             "all_started_s": f"<= +{GOAL_ALL_STARTED:.0%}  {figures['all_started_ratio'] - 1:+.0%} "
                              + verdict(figures["all_started_ratio"] <= 1 + GOAL_ALL_STARTED)}
    for key, label in ROWS:
        peer, gated = figures.get(f"peer_{key}", float("nan")), figures.get(f"gated_{key}", float("nan"))
        print(f"{label:<44}{peer:>8.3g}{gated:>8.3g}{gated - peer:>+12.3g}  {goals.get(key, '')}")
    print(f"\ngated run, when the last job of a wave got there (s): wave 1 from t0, wave 2 from its freeing")
    for stage, label in STAGES:
        print(f"  {label:<42}{figures.get(f'gated_wave1_{stage}_s', float('nan')):>8.3g}"
              f"{figures.get(f'gated_wave2_{stage}_s', float('nan')):>8.3g}")
    if figures.get("bridge_polls"):
        busy = figures["bridge_busy_s"]
        print(f"\nthe bridge's {figures['bridge_polls']:.0f} polls during the gated run (t0 → last start): "
              f"busy {busy:.2f} s, poll median {figures['bridge_poll_p50_ms']:.0f} ms, "
              f"longest {figures['bridge_poll_max_ms']:.0f} ms")
        for key in sorted((key for key in figures if key.startswith("bridge_s_")), key=lambda key: -figures[key]):
            print(f"  {key[len('bridge_s_'):]:<42}{figures[key]:>8.2f} s {figures[key] / busy:>5.0%}")
        print("  its calls (Slurm's run four at a time where they are many: their seconds overlap):")
        for key in sorted((key for key in figures if key.startswith("bridge_call_s_")), key=lambda key: -figures[key]):
            kind = key[len("bridge_call_s_"):]
            count = figures[f"bridge_calls_{kind}"]
            print(f"    {kind:<40}{count:>6.0f} calls{figures[key]:>8.2f} s{1000 * figures[key] / count:>8.0f} ms each")
    print(f"\nidle, polling every {POLL_SECONDS:g} s (% of a core): " + ", ".join(
        f"{name} {figures[f'idle_cpu_pct_{name}']:.1f}" for name in ("bridge", "server", "slurmctld")))
    print(f"load (1 min): {figures['load_1m_start']:.1f} at the start, {figures['load_1m_between']:.1f} between the "
          f"runs, {figures['load_1m_end']:.1f} at the end")


def ordinal(number: int) -> str:
    suffix = "th" if number % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def verdict(met: bool) -> str:
    return "ok" if met else "MISS"


# --- in the bridge's process: poolweb-slurm run, timed ----------------------------------------------

class Profile:
    """Timers around the bridge's calls. A poll's parts are the wall time of the calls it makes
    on its own thread, the outermost only (Slurm.cancel writes comments inside); the Slurm
    commands run four at a time under ``set_comments`` are counted, not added."""

    def __init__(self) -> None:
        self.polls: list[dict] = []
        self.current: dict | None = None
        self.granted: dict[str, float] = {}
        self.lock = threading.Lock()
        self.depth = threading.local()

    def part(self, name: str, function: Callable) -> Callable:
        def timed(*args, **kwargs):
            depth = getattr(self.depth, "value", 0)
            self.depth.value = depth + 1
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.depth.value = depth
                if depth == 0 and self.current is not None:
                    parts = self.current["parts"]
                    parts[name] = parts.get(name, 0.0) + time.perf_counter() - started
        return timed

    def poll(self, function: Callable) -> Callable:
        def timed(*args, **kwargs):
            self.current = {"start": time.time(), "parts": {}, "calls": {}}  # calls: kind → [count, seconds]
            started = time.perf_counter()
            try:
                steps = function(*args, **kwargs)
                self.current["planned"] = {"register": len(steps.register), "comments": len(steps.comments),
                                           "grants": sum(map(len, steps.grants.values())),
                                           "release": len(steps.release)}
                return steps
            finally:
                self.current["seconds"] = time.perf_counter() - started
                self.polls.append(self.current)
                self.current = None
        return timed

    def grant(self, function: Callable) -> Callable:
        def granted(slurm, jobs, **kwargs):
            function(slurm, jobs, **kwargs)
            self.granted.update(dict.fromkeys(jobs, time.time()))
        return granted

    def call(self, function: Callable) -> Callable:
        """Each HTTP call, by method and path (a request's id as ``{id}``)."""
        def timed(transport, method, path, *args, **kwargs):
            started = time.perf_counter()
            try:
                return function(transport, method, path, *args, **kwargs)
            finally:
                self.add(f"{method} {re.sub(r'/[0-9]+', '/{id}', path)}", time.perf_counter() - started)
        return timed

    def command(self, function: Callable) -> Callable:
        """Each Slurm command, by program and subcommand (``scontrol update`` by what it sets)."""
        def timed(slurm, command, *args, **kwargs):
            started = time.perf_counter()
            try:
                return function(slurm, command, *args, **kwargs)
            finally:
                sets = sorted(word.split("=", 1)[0] for word in command[2:] if "=" in word and
                              not word.startswith(("jobid=", "-")))
                kind = " ".join([*command[:2], *sets]) if command[0] == "scontrol" else command[0]
                self.add(f"{kind} ({jobs_in(command)})", time.perf_counter() - started)
        return timed

    def add(self, kind: str, seconds: float) -> None:
        """One call of a poll (none is made outside one, but the first ``me`` and squeue)."""
        with self.lock:
            if self.current is not None:
                count, total = self.current["calls"].get(kind, (0, 0.0))
                self.current["calls"][kind] = [count + 1, total + seconds]

    def dump(self) -> dict:
        return {"polls": self.polls, "granted": self.granted}


def jobs_in(command: list[str]) -> str:
    """How many jobs a Slurm command names, as a size class: 1, 2-10, 11-100, 101-1000, more."""
    listed = next((word[len("jobid="):] for word in command if word.startswith("jobid=")), None)
    count = len(listed.split(",")) if listed is not None else \
        max((len(word.split(",")) for word in command[1:] if re.fullmatch(r"[0-9_,]+", word)), default=0)
    if count <= 1:
        return "1 job" if count else "no job list"
    low = next(low for low in (1000, 100, 10, 1) if count > low)
    return f"{low + 1}-{low * 10} jobs" if low < 1000 else "over 1000 jobs"


def timed_bridge(mapping: str, out: str) -> int:
    from poolctl.api import Api
    from poolctl.transport import Transport
    from poolweb_slurm import bridge, cli
    from poolweb_slurm.slurm import Slurm

    profile = Profile()
    bridge.Bridge.poll = profile.poll(bridge.Bridge.poll)
    bridge.plan = profile.part("plan", bridge.plan)
    Slurm.grant = profile.grant(Slurm.grant)
    for name, part in (("jobs", "squeue"), ("set_comments", "scontrol comments"), ("grant", "scontrol grant"),
                       ("requeue_held", "scontrol requeuehold"), ("hold", "scontrol hold"), ("signal", "scancel signal"),
                       ("cancel", "scancel")):
        setattr(Slurm, name, profile.part(part, getattr(Slurm, name)))
    for name, part in (("me", "GET /me"), ("list", "GET /requests"), ("config", "GET /config"),
                       ("submit_batch", "POST /requests/batch"), ("act_many", "POST /requests/actions")):
        if hasattr(Api, name):
            setattr(Api, name, profile.part(part, getattr(Api, name)))
    Transport.call = profile.call(Transport.call)
    Slurm.run = profile.command(Slurm.run)
    try:
        return cli.main(["run", "--mapping", mapping])
    finally:
        Path(out).write_text(json.dumps(profile.dump()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["bridge"]:
        sys.exit(timed_bridge(*sys.argv[2:4]))
    main()
