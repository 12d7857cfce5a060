"""A throwaway Slurm cluster on this machine, for the tests and the bench of the Slurm bridge:
munged with its own key and socket, slurmctld, and one ``slurmd -N gpuNNN`` per simulated GPU
node, all on 127.0.0.1 and all state under one directory (decision 128). The traps it avoids are
in the shared note "A real Slurm on one machine"; the ones that bite are commented where handled.

    with Cluster.started(directory, Layout(nodes=4)) as cluster:
        job = cluster.submit("-p", "h100", "--wrap", "sleep 1")

Every process it starts, and every job submitted through it, carries ``POOLWEB_SLURM_CLUSTER=<its
token>`` in its environment; ``stop`` ends those processes and no others.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from poolweb_slurm import gate_script

from tests.slurm.config import gate_conf, gres_conf, slurm_conf

TAG = "POOLWEB_SLURM_CLUSTER"
SBIN = Path("/usr/sbin")
DAEMONS = ("slurmctld", "slurmd")  # started here through links of these names
# slurmd starts /usr/sbin/slurmstepd itself (the path is compiled in): Debian's link of that name.
PROGRAMS = (*DAEMONS, "slurmstepd", "munged")
COMMANDS = ("sbatch", "squeue", "scontrol", "sinfo", "scancel")
START_SECONDS = 30


def missing_binaries() -> list[str]:
    """The Slurm and MUNGE programs this machine lacks (empty when a cluster can start)."""
    wanted = [str(SBIN / name) for name in PROGRAMS]
    return [path for path in wanted if not os.access(path, os.X_OK)] + \
        [name for name in COMMANDS if shutil.which(name) is None]


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[int, ...]  # node numbers, 1-based: (1, 2) is gpu[001-002]
    gated: bool
    default: bool = False


@dataclass(frozen=True)
class Layout:
    """What the cluster looks like: N nodes of ``gpus`` fake GPUs, ``cpus`` and ``memory_mb``
    (declared, not real: SlurmdParameters=config_overrides), and its partitions. By default half
    the nodes are ``bare-metal`` (gated, the default partition, as a cluster's main GPU partition
    often is), half ``h100`` (gated), and ``open`` (ungated) spans them all."""
    nodes: int = 4
    gpus: int = 8
    cpus: int = 64
    memory_mb: int = 512_000
    partitions: tuple[Partition, ...] = ()

    def node_names(self) -> list[str]:
        return [node_name(number) for number in range(1, self.nodes + 1)]

    def all_partitions(self) -> tuple[Partition, ...]:
        if self.partitions:
            return self.partitions
        half = max(1, self.nodes // 2)
        everyone = tuple(range(1, self.nodes + 1))
        return (Partition("open", everyone, gated=False),
                Partition("bare-metal", everyone[:half], gated=True, default=True),
                Partition("h100", everyone[half:] or everyone, gated=True))


def node_name(number: int) -> str:
    return f"gpu{number:03d}"


def free_ports(count: int) -> list[int]:
    """Ports free now on 127.0.0.1, held open together so they differ."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for each in sockets:
            each.bind(("127.0.0.1", 0))
        return [each.getsockname()[1] for each in sockets]


@dataclass
class Cluster:
    directory: Path
    layout: Layout
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def slurm_conf(self) -> Path:
        return self.directory / "etc" / "slurm.conf"

    def environment(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.slurm_conf), TAG: self.token}

    @classmethod
    @contextlib.contextmanager
    def started(cls, directory: Path, layout: Layout) -> Iterator[Cluster]:
        cluster = cls(directory, layout)
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()

    # --- writing the configuration ---------------------------------------------------------

    def write(self) -> None:
        for folder in ("etc", "state", "spool", "log", "run", "munge", "dev", "bin", "jobs"):
            (self.directory / folder).mkdir(parents=True, exist_ok=True)
        for shared in (self.directory, self.directory / "etc", self.directory / "munge"):
            shared.chmod(0o755)  # other users' sbatch reads slurm.conf and reaches munged's socket
        for number in range(self.layout.gpus):
            (self.directory / "dev" / f"nvidia{number}").touch()  # slurmd drops a GPU without File=
        controller_port, *node_ports = free_ports(1 + self.layout.nodes)
        self.slurm_conf.write_text(slurm_conf(self.directory, self.layout, controller_port, node_ports))
        (self.directory / "etc" / "gres.conf").write_text(gres_conf(self.directory, self.layout))
        (self.directory / "etc" / "poolweb_gate.conf").write_text(gate_conf(self.layout))
        shutil.copyfile(gate_script(), self.directory / "etc" / "job_submit.lua")
        key = self.directory / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        for daemon in DAEMONS:
            # Slurm knows what it is from argv[0]: started as slurmctld-wlm, no GRES plugin loads.
            (self.directory / "bin" / daemon).symlink_to((SBIN / daemon).resolve())

    # --- starting and stopping ---------------------------------------------------------------

    def start(self) -> None:
        self.write()
        self.boot()

    def boot(self) -> None:
        """munged, slurmctld and the nodes' slurmd, on the configuration ``write`` left."""
        munge = self.directory / "munge"
        self.launch("munged", [str(SBIN / "munged"), "--foreground", "--force",
                               f"--socket={munge / 'munge.socket'}", f"--key-file={munge / 'munge.key'}",
                               f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'munge.seed'}",
                               f"--log-file={munge / 'munged.log'}"])
        self.wait_for(lambda: (munge / "munge.socket").exists(), "munged to open its socket")
        self.launch("slurmctld", self.controller_command())
        self.wait_for(self.controller_answers, "slurmctld to answer")
        for name in self.layout.node_names():
            self.launch(f"slurmd-{name}", [str(self.directory / "bin" / "slurmd"), "-D", "-N", name])
        self.wait_for(self.all_nodes_idle, "every node to be idle")

    def controller_command(self) -> list[str]:
        return [str(self.directory / "bin" / "slurmctld"), "-D", "-i"]

    def restart_controller(self) -> None:
        """slurmctld stopped (SIGTERM: it saves its state) and started again on the same state."""
        controller = next(process for process in self.processes if process.args == self.controller_command())
        controller.send_signal(signal.SIGTERM)
        controller.wait(timeout=20)
        self.processes.remove(controller)
        self.launch("slurmctld", self.controller_command())
        self.wait_for(self.all_nodes_idle_or_busy, "slurmctld to answer again with every node up")

    def launch(self, name: str, command: list[str]) -> None:
        with (self.directory / "log" / f"{name}.out").open("ab") as log:
            self.processes.append(subprocess.Popen(command, env=self.environment(), stdout=log,
                                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                   start_new_session=True))

    def wait_for(self, condition: Callable[[], object], what: str, seconds: float = START_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {seconds} s for {what}; logs in {self.directory / 'log'}")
            if any(process.poll() is not None for process in self.processes):
                ended = [process.args[0] for process in self.processes if process.poll() is not None]
                raise RuntimeError(f"{ended} ended while waiting for {what}; logs in {self.directory / 'log'}")
            time.sleep(0.2)

    def controller_answers(self) -> bool:
        return "is UP" in self.run("scontrol", "ping", check=False).stdout

    def node_states(self) -> dict[str, str]:
        lines = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False).stdout.splitlines()
        return dict(line.split() for line in lines if len(line.split()) == 2)

    def all_nodes_idle(self) -> bool:
        states = self.node_states()
        return all(states.get(name) == "idle" for name in self.layout.node_names())

    def all_nodes_idle_or_busy(self) -> bool:
        states = self.node_states()
        return all(states.get(name) in {"idle", "mixed", "allocated"} for name in self.layout.node_names())

    def stop(self) -> None:
        """SIGTERM to what it started, then SIGKILL to every process still tagged with its token
        (a job's leftovers too: proctrack/linuxproc can leave one behind); nothing else."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        self.kill_tagged()
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def kill_tagged(self, seconds: float = 5) -> None:
        """SIGKILL to the tagged processes until none is left: one killed as it forks leaves a child."""
        deadline = time.monotonic() + seconds
        while (tagged := self.tagged_processes()) and time.monotonic() < deadline:
            for pid in tagged:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def tagged_processes(self) -> list[int]:
        marker = f"{TAG}={self.token}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        return found

    # --- talking to it -------------------------------------------------------------------------

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.environment(), capture_output=True, text=True, check=check,
                              timeout=30, cwd=self.directory / "jobs")

    def run_as(self, user: str, *command: str) -> subprocess.CompletedProcess:
        """A command as another user of this machine (``nobody``): the gate treats root as the bridge."""
        return subprocess.run(["runuser", "-u", user, "--", *command], env=self.environment(), capture_output=True,
                              text=True, timeout=30, cwd="/tmp")

    def submit(self, *arguments: str) -> str:
        """``sbatch --parsable``: the job id; raises CalledProcessError (its stderr Slurm's refusal)."""
        return self.run("sbatch", "--parsable", "--output=/dev/null", *arguments).stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o``, as its Key=Value pairs (a value with spaces kept whole)."""
        line = self.run("scontrol", "show", "job", "-o", job_id).stdout.strip()
        return {key: value.strip() for key, value in (pair.split("=", 1) for pair in split_fields(line))}

    def wait_for_job(self, job_id: str, states: set[str], seconds: float = 20) -> dict[str, str]:
        deadline = time.monotonic() + seconds
        while (job := self.job(job_id))["JobState"] not in states:
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} is {job['JobState']} ({job['Reason']}) after {seconds} s, "
                                   f"not {sorted(states)}")
            time.sleep(0.2)
        return job


def split_fields(line: str) -> list[str]:
    """``A=1 Comment=two words B=3`` → ``["A=1", "Comment=two words", "B=3"]``: a word without ``=``
    belongs to the value before it."""
    fields: list[str] = []
    for word in line.split(" "):
        if "=" in word or not fields:
            fields.append(word)
        else:
            fields[-1] += " " + word
    return fields
