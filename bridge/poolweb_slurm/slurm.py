"""What the bridge reads from Slurm and does to it, through Slurm's own commands (decision 129).

Slurm 22.05's commands have no ``--json``; one ``squeue`` reads every job of the gated
partitions per poll, its fields and jobs separated by marks made afresh for each read, which no
value can hold: a user may put any character in a job's name and comment, but cannot guess the
marks to forge another job. The actions go in batches where the command takes a job list::

    slurm = Slurm(partitions=("bare-metal", "h100"))
    jobs = slurm.jobs()                                   # [Job(id="12", user="ann", gpus=4, ...)]
    slurm.set_comments({"12": "poolweb: waiting: #3 in dev's queue"})
    slurm.grant(["12"], partition="h100", moving=["12"])  # point it at h100, then release it

Every call is bounded by ``timeout`` seconds; a failure is a ``SlurmError`` naming each job and
what Slurm said about it.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

# squeue -O fields, in the order parsed.
COLUMNS = ("JobID", "ArrayJobID", "ArrayTaskID", "UserName", "Account", "Partition", "State", "Reason",
           "PriorityLong", "tres-per-job", "tres-per-node", "tres-per-task", "NumNodes", "NumTasks",
           "tres-alloc", "SubmitTime", "EligibleTime", "TimeLimit", "Name", "Comment")
COMMENT_LENGTH = 200  # squeue shows it whole; a reason and a position fit in much less
RELEASED_APART = 100  # jobs a release splits over the workers from
# A job in one of these states has ended; squeue -t all shows it for MinJobAge (300 s by default).
ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                          "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
MEMORY_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


class SlurmError(Exception):
    """A Slurm command failed: ``failures`` maps each job it names to Slurm's message about it
    (``"*"`` when Slurm named none)."""

    def __init__(self, command: str, failures: Mapping[str, str]):
        self.command = command
        self.failures = dict(failures)
        listed = "; ".join(f"job {job}: {message}" if job != "*" else message for job, message in failures.items())
        super().__init__(f"{command}: {listed}")


@dataclass(frozen=True)
class Job:
    """One job (one task of an array) as squeue shows it. ``id`` addresses it in every Slurm
    command and stays the same when a pending array splits: ``12`` or ``12_3``."""
    id: str
    array_task: int | None
    user: str
    account: str
    partitions: tuple[str, ...]
    state: str  # PENDING, RUNNING, COMPLETING, ...
    reason: str
    comment: str
    gpus: int  # the whole job's: per job, or per node × nodes, or per task × tasks
    cpus: int
    memory_mib: int  # the whole job's, in Slurm's MB (MiB); 0 when it asked for none
    # gpus, cpus and memory are what a pending job asks for; a running one's are what Slurm
    # allocated (memory only where it allocates memory: SelectTypeParameters=CR_*_Memory).
    submitted: datetime
    eligible: datetime | None  # when a pending job may start at the earliest (sbatch --begin); None: now
    name: str
    held: bool  # pending with priority 0: the gate's hold (JobHeldUser), requeuehold's, an operator's
    time_limit_seconds: int | None = None  # sbatch --time, passed on as the request's run limit; None: none

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def running(self) -> bool:
        """On nodes: started, or ending there."""
        return self.state in {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED"}

    @property
    def partition(self) -> str:
        """The one partition of a job placed or granted (the first of a list otherwise)."""
        return self.partitions[0]


class Slurm:
    """The Slurm commands of one cluster. ``environment`` is the commands' (``SLURM_CONF`` for a
    cluster other than the host's); every command ends within ``timeout`` seconds or fails;
    ``workers`` commands at most run at once."""

    def __init__(self, partitions: Sequence[str], *, timeout: float = 30, environment: Mapping[str, str] | None = None,
                 workers: int = 4):
        self.partitions = tuple(partitions)
        self.timeout = timeout
        self.workers = workers
        self.environment = dict(environment) if environment is not None else None

    # --- reading --------------------------------------------------------------------------------

    def jobs(self) -> list[Job]:
        """Every job of the gated partitions, one per array task, in one squeue call; the ended ones
        too while Slurm keeps them (a preempted job that exited in its grace is requeued)."""
        marks = Marks.fresh()
        output = self.run(["squeue", "-h", "-r", "-t", "all", "-p", ",".join(self.partitions), "-O", marks.format()])
        records = output.split(marks.record + "\n")
        return [parse_job(record, marks) for record in records if record.strip()]

    # --- acting ---------------------------------------------------------------------------------

    def set_comments(self, comments: Mapping[str, str]) -> None:
        """The comment squeue shows, per job; jobs given the same text share one call."""
        by_text: dict[str, list[str]] = {}
        for job, text in comments.items():
            by_text.setdefault(printable(text), []).append(job)
        self.each(["scontrol", "update", f"jobid={','.join(jobs)}", f"comment={text}"] for text, jobs in by_text.items())

    def grant(self, jobs: Sequence[str], *, partition: str, moving: Collection[str] = ()) -> None:
        """Releases held jobs: Slurm places them on its nodes. Those ``moving`` are first pointed at
        ``partition``; a job that could not be moved is not released. A job that asked for this
        partition alone, and whose begin time has come, needs no update: one RPC a job, not two."""
        if not jobs:
            return
        if moving:
            # starttime=now: a requeued job waits out a BeginTime Slurm set (two minutes), which would
            # leave Poolweb's grant idle; the bridge registers no job before its own --begin time.
            try:
                self.run(["scontrol", "update", f"jobid={','.join(moving)}", f"partition={partition}",
                          "starttime=now"])
            except SlurmError as moved_not_all:
                # Release only the jobs surely moved: when Slurm named no job, none is released.
                if "*" not in moved_not_all.failures:
                    self.release([job for job in jobs if job not in moved_not_all.failures])
                raise
        self.release(jobs)

    def release(self, jobs: Sequence[str]) -> None:
        """scontrol sends one RPC a job; a long list goes as ``workers`` calls at once, each every
        ``workers``-th job (still oldest first), so that while slurmctld starts a wave, one job's
        RPC waiting for its locks does not hold up the others' (decision 149)."""
        if not jobs:
            return
        if len(jobs) < RELEASED_APART:
            self.run(["scontrol", "release", ",".join(jobs)])
            return
        self.each((["scontrol", "release", ",".join(jobs[start::self.workers])] for start in range(self.workers)),
                  "scontrol release")

    def requeue_held(self, jobs: Sequence[str]) -> None:
        """Running or ended batch jobs back to the queue, held (priority 0) until the bridge grants
        them again: Slurm stops a running one (SIGTERM, KillWait, SIGKILL) first."""
        if not jobs:
            return
        self.run(["scontrol", "requeuehold", ",".join(jobs)])

    def hold(self, jobs: Sequence[str]) -> None:
        """Pending jobs held (priority 0) again: released, but not started yet."""
        if not jobs:
            return
        self.run(["scontrol", "hold", ",".join(jobs)])

    def signal(self, jobs: Sequence[str], signal: str) -> None:
        """``signal`` (``TERM``, ``USR1``, ...) to the batch script and every step: ``--full``, or a
        batch job's own script, which is what traps a signal to checkpoint, would not get it."""
        if not jobs:
            return
        self.run(["scancel", f"--signal={signal}", "--full", *jobs])

    def cancel(self, jobs: Sequence[str], reason: str) -> None:
        """Ends the jobs, even those whose comment could not be written; the reason stays in the
        comment squeue shows while Slurm keeps the job."""
        if not jobs:
            return
        failures: dict[str, str] = {}
        try:
            self.set_comments({job: reason for job in jobs})
        except SlurmError as not_commented:
            failures.update(not_commented.failures)
        try:
            self.run(["scancel", *jobs])
        except SlurmError as not_cancelled:
            failures.update(not_cancelled.failures)
        if failures:
            raise SlurmError("scancel", failures)

    # --- running commands -----------------------------------------------------------------------

    def each(self, commands: Iterable[list[str]], name: str = "scontrol update") -> None:
        """Runs every command, ``workers`` at a time; raises one error for all the jobs that failed.
        1,000 comments of distinct texts took 4.4 s one after another, 2.3 s four at a time
        (decision 129): slurmctld answers several clients at once."""
        with ThreadPoolExecutor(self.workers) as pool:
            outcomes = list(pool.map(self.failures_of, commands))
        failures = {job: message for outcome in outcomes for job, message in outcome.items()}
        if failures:
            raise SlurmError(name, failures)

    def failures_of(self, command: list[str]) -> dict[str, str]:
        try:
            self.run(command)
        except SlurmError as failed:
            return failed.failures
        return {}

    def run(self, command: list[str]) -> str:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout, env=self.environment,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise SlurmError(command[0], {"*": f"no answer within {self.timeout:g} s"}) from None
        except OSError as failed:
            raise SlurmError(command[0], {"*": str(failed)}) from None
        if done.returncode != 0:
            raise SlurmError(" ".join(command[:2]), job_failures(done.stderr or done.stdout))
        return done.stdout


# --- parsing ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Marks:
    """What squeue writes after each field and after each job: squeue's suffixes (``-O
    Field:<suffix>``), an ASCII separator and a random token, so that no name or comment matches."""
    field: str
    record: str

    @classmethod
    def fresh(cls) -> Marks:
        token = secrets.token_hex(8)
        return cls(field=f"\x1f{token}", record=f"\x1e{token}")

    def format(self) -> str:
        return ",".join(f"{column}:{self.field}" for column in COLUMNS[:-1]) + f",{COLUMNS[-1]}:{self.record}"


# Slurm's messages name the job at the end ("... for job 12", "Kill job error on job id 12: ...").
JOB_IN_MESSAGE = re.compile(r"(?:for job|on job id|job id|JobId=)\s*(\d+(?:_\d+)?)")


def job_failures(stderr: str) -> dict[str, str]:
    failures: dict[str, str] = {}
    for line in filter(None, (line.strip() for line in stderr.splitlines())):
        match = JOB_IN_MESSAGE.search(line)
        failures.setdefault(match.group(1) if match else "*", line)
    return failures or {"*": "failed without a message"}


def parse_job(record: str, marks: Marks) -> Job:
    values = record.lstrip("\n").split(marks.field)
    if len(values) != len(COLUMNS):
        raise SlurmError("squeue", {"*": f"cannot read the line {record[:200]!r}"})
    row = dict(zip(COLUMNS, values, strict=True))
    array_task = row["ArrayTaskID"]
    job_id = f"{row['ArrayJobID']}_{array_task}" if array_task.isdigit() else row["JobID"]
    tres = trackable_resources(row["tres-alloc"])
    priority = int(row["PriorityLong"]) if row["PriorityLong"].isdigit() else 1
    return Job(id=job_id, array_task=int(array_task) if array_task.isdigit() else None, user=row["UserName"],
               account=absent(row["Account"]), partitions=tuple(row["Partition"].split(",")), state=row["State"],
               reason=row["Reason"], comment=absent(row["Comment"]), gpus=requested_gpus(row),
               cpus=int(tres.get("cpu", "0")), memory_mib=memory_mib(tres.get("mem", "0")),
               submitted=datetime.fromisoformat(row["SubmitTime"]), eligible=local_time(row["EligibleTime"]),
               name=row["Name"],
               held=row["State"] == "PENDING" and priority == 0, time_limit_seconds=time_limit(row["TimeLimit"]))


def time_limit(text: str) -> int | None:
    """squeue's TimeLimit (``[days-]hours:minutes:seconds``, ``minutes:seconds``) in seconds;
    None for ``UNLIMITED``, ``NOT_SET``, ``Partition_Limit`` or anything else not a duration.

    >>> time_limit("1-02:03:04"), time_limit("1:00:00"), time_limit("30:00"), time_limit("UNLIMITED")
    (93784, 3600, 1800, None)
    """
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not (days == "" or days.isdigit()) or not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + int(part)
    return int(days or 0) * 86400 + seconds or None


def local_time(text: str) -> datetime | None:
    """squeue's local time without a zone (``2026-12-04T15:45:48``), made aware; None for ``N/A``."""
    try:
        return datetime.fromisoformat(text).astimezone()
    except ValueError:
        return None


def absent(value: str) -> str:
    """squeue writes a missing text as ``(null)``."""
    return "" if value == "(null)" else value


def trackable_resources(text: str) -> dict[str, str]:
    """``cpu=8,mem=16G,node=1`` → ``{"cpu": "8", "mem": "16G", "node": "1"}``."""
    return dict(pair.split("=", 1) for pair in text.split(",") if "=" in pair)


def gpu_count(tres: str) -> int:
    """``gres:gpu:4``, ``gres:gpu:a100:2``, ``gres/gpu=2`` (22.05 writes the first) → the GPUs;
    0 for ``N/A`` or a request of other GRES only."""
    total = 0
    for item in tres.split(","):
        parts = re.split(r"[:/=]", item)
        if "gpu" in parts and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def requested_gpus(row: Mapping[str, str]) -> int:
    per_job = gpu_count(row["tres-per-job"])
    per_node = gpu_count(row["tres-per-node"]) * int(row["NumNodes"] if row["NumNodes"].isdigit() else 1)
    per_task = gpu_count(row["tres-per-task"]) * int(row["NumTasks"] if row["NumTasks"].isdigit() else 1)
    return per_job or per_node or per_task


def memory_mib(text: str) -> int:
    """Slurm's ``16G``, ``2000M``, ``2000`` (MB; Slurm's MB are MiB) → MiB, rounded up."""
    if not text or text == "0":
        return 0
    unit = text[-1].upper() if text[-1].isalpha() else "M"
    number = float(text[:-1] if text[-1].isalpha() else text)
    return int(-(-number * MEMORY_UNITS[unit] // 1))


def printable(text: str, limit: int = COMMENT_LENGTH) -> str:
    """Text the bridge may write into a comment (or Poolweb into a name): no control characters (a
    terminal running squeue would act on them; a newline would break squeue's one line a job),
    whitespace runs as one space, at most ``limit`` characters."""
    shown = " ".join("".join(" " if unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"} else char
                             for char in text).split())
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"
