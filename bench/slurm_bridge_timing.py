"""The Slurm bridge's bench (bench/slurm_bridge.py, decision 146): the bridge it runs, timed.

``bridge_running`` starts ``python -m bench.slurm_bridge_timing MAPPING PROFILE``, which is
``poolweb-slurm run --mapping MAPPING`` itself with timers wrapped around the bridge's calls (its
poll, the plan, each ``Slurm`` action and command, each ``Api`` method and HTTP call); when it stops
(SIGTERM) it writes to PROFILE each poll's start, wall time, parts and calls, when each job's
grant returned and when the event of its allocation arrived. The wrappers cost microseconds a call; nothing of the bridge is changed.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.results import ROOT

START_SECONDS = 60


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
def bridge_running(cluster, server, token: str, mapping: Path) -> Iterator[BridgeProcess]:
    """``poolweb-slurm run`` with timers, as a platform team runs it, beside its ``mapping`` file;
    stopped by SIGTERM (it then writes its profile), killed if it does not stop."""
    directory = mapping.parent
    environment = {**cluster.environment(), "POOLWEB_URL": server.url, "POOLWEB_TOKEN": token,
                   "PYTHONUNBUFFERED": "1"}
    log = directory / "bridge.log"
    with log.open("ab") as sink:
        process = subprocess.Popen([sys.executable, "-m", "bench.slurm_bridge_timing", str(mapping),
                                    str(directory / "bridge-profile.json")], cwd=ROOT, env=environment,
                                   stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    bridge = BridgeProcess(process, log, directory / "bridge-profile.json")
    try:
        deadline = time.monotonic() + START_SECONDS
        while "bridge of cluster" not in bridge.output() and process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the bridge did not start within {START_SECONDS} s:\n{bridge.output()}")
            time.sleep(0.2)
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



# --- in the bridge's process ----------------------------------------------------------------------

class Profile:
    """Timers around the bridge's calls. A poll's parts are the wall time of the calls it makes
    on its own thread, the outermost only (Slurm.cancel writes comments inside); the Slurm
    commands run four at a time under ``set_comments`` are counted, not added. What the bridge's
    other threads (registration, comments, events) and its grants between two polls (decision 193)
    do is kept apart, each part and call with when it started (``background``)."""

    def __init__(self) -> None:
        self.polls: list[dict] = []
        self.current: dict | None = None
        self.poller: int | None = None  # the thread polling
        self.background: list[tuple[float, str, str, float]] = []  # start, thread, part or call, seconds
        self.granted: dict[str, float] = {}
        self.heard: dict[str, float] = {}  # job → when the event of its allocation was kept
        self.lock = threading.Lock()
        self.depth = threading.local()

    def part(self, name: str, function: Callable) -> Callable:
        def timed(*args, **kwargs):
            depth = getattr(self.depth, "value", 0)
            self.depth.value = depth + 1
            started, at = time.perf_counter(), time.time()
            try:
                return function(*args, **kwargs)
            finally:
                self.depth.value = depth
                seconds = time.perf_counter() - started
                if depth == 0 and self.outside_a_poll():
                    with self.lock:
                        self.background.append((at, self.thread_name(), f"part {name}", seconds))
                elif depth == 0 and self.current is not None:
                    parts = self.current["parts"]
                    parts[name] = parts.get(name, 0.0) + seconds
        return timed

    def poll(self, function: Callable) -> Callable:
        def timed(*args, **kwargs):
            self.current = {"start": time.time(), "parts": {}, "calls": {}}  # calls: kind → [count, seconds]
            self.poller = threading.get_ident()
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

    def hear(self, function: Callable) -> Callable:
        def kept(allocations, request):
            function(allocations, request)
            if request.state == "allocated" and (job := request.labels.get("slurm_job")):
                self.heard.setdefault(job, time.time())
        return kept

    def call(self, function: Callable) -> Callable:
        """Each HTTP call, by method and path (a request's id as ``{id}``)."""
        def timed(transport, method, path, *args, **kwargs):
            started = time.perf_counter()
            try:
                return function(transport, method, path, *args, **kwargs)
            finally:
                self.add(f"{method} {re.sub(r'/[0-9]+', '/{id}', path)}", started)
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
                self.add(f"{kind} ({jobs_in(command)})", started)
        return timed

    def add(self, kind: str, started: float) -> None:
        """One call of a poll (none is made outside one, but the first ``me`` and squeue), or of
        another thread."""
        seconds = time.perf_counter() - started
        with self.lock:
            if self.outside_a_poll() and self.poller is not None:
                self.background.append((time.time() - seconds, self.thread_name(), kind, seconds))
            elif self.current is not None:
                count, total = self.current["calls"].get(kind, (0, 0.0))
                self.current["calls"][kind] = [count + 1, total + seconds]

    def outside_a_poll(self) -> bool:
        return threading.get_ident() != self.poller or self.current is None

    def thread_name(self) -> str:
        return "between polls" if threading.get_ident() == self.poller else threading.current_thread().name

    def dump(self) -> dict:
        return {"polls": self.polls, "granted": self.granted, "heard": self.heard, "background": self.background}


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
    """``poolweb-slurm run --mapping MAPPING``, its calls timed; the profile written to ``out``
    when it stops."""
    from poolctl.api import Api
    from poolctl.transport import Transport
    from poolweb_slurm import bridge, cli
    from poolweb_slurm.allocations import Allocations
    from poolweb_slurm.slurm import Slurm

    profile = Profile()
    bridge.Bridge.poll = profile.poll(bridge.Bridge.poll)
    bridge.plan = profile.part("plan", bridge.plan)
    Slurm.grant = profile.grant(Slurm.grant)
    Allocations.keep = profile.hear(Allocations.keep)
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
    sys.exit(timed_bridge(*sys.argv[1:3]))
