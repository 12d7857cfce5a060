"""``poolctl run --policy P --profile R [...] -- CMD ARGS``: run a command under an allocation.

1. Submit, then wait with one live progress line (state, position, estimated start, reason, time waited).
2. Run CMD in its own process group with ``POOLWEB_REQUEST_ID``, ``POOLWEB_POOL``,
   ``POOLWEB_ATTEMPT`` and ``POOLWEB_RESOURCES`` (JSON, without the ``step_run: 1`` every
   request has) in its environment, heartbeating meanwhile; the command is echoed shell-quoted.
3. Ctrl-C or SIGTERM is forwarded to CMD's group (a second one kills the group); once CMD has
   exited, the allocation is released.
4. When its run limit comes within the grace (``TimeLimitNear``, R-52), CMD's group gets
   ``--signal`` (TERM) once: time to checkpoint; at the limit the server ends the run, or
   queues it again where the policy says so, and CMD runs again as after a preemption.
   When the request turns ``preempting`` (R-44), CMD's group gets ``--signal`` (TERM), then
   SIGKILL at the end of the grace: ``--grace`` seconds, or else when the server ends the
   grace by evicting the request (at ``grace_ends_at``, by the server's clock: the request is
   read every second meanwhile, and a read past the deadline makes the server evict at once).
   The allocation is released (acknowledged) and, while retries remain (``--max-retries``: 3
   unless given, 0 opts out; R-46), the request waits again and CMD runs again with
   ``POOLWEB_ATTEMPT`` one higher.
5. At the end: release, and exit with CMD's exit code (128 + N when a signal N ended it); the
   codes of ``poolctl --help`` otherwise. ``--result-file`` gets a JSON summary either way.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from poolctl.allocation import LeaseKeeper, give_back
from poolctl.client import Client
from poolctl.commands import Commands, Output, client_for, wait_with_progress, warn
from poolctl.errors import Interrupted, PoolctlError, UsageError, lost
from poolctl.models import PENDING, PREEMPTING, Request
from poolctl.render import local_time, quantities
from poolctl.submission import add_submission_arguments, seconds, submission_from

STEP = 0.2  # seconds between looks at the command and the request while it runs
TIME_LIMIT_NEAR = "TimeLimitNear"  # the reason an allocated request gets a grace before its limit
RETRIES = 3  # a preempted command runs again by default, as Slurm requeues a preempted job
FORWARDED = (signal.SIGINT, signal.SIGTERM)


def exit_code(returncode: int) -> int:
    """A shell's way: a command ended by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class Attempt:
    """One run of CMD: on which pool, how it ended and with which code."""

    attempt: int
    pool: str | None
    started_at: str
    ended_at: str | None = None
    exit_code: int | None = None
    ended: str = "exited"  # exited | preempted | interrupted | lost


@dataclass
class Summary:
    """What ``--result-file`` gets."""

    command: list[str]
    request_id: int | None = None
    state: str | None = None
    reason: str | None = None
    message: str | None = None
    pool: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    command_exit_code: int | None = None
    exit_code: int = 0
    error: dict[str, Any] | None = None

    def note(self, request: Request) -> None:
        self.request_id, self.state, self.reason, self.message = request.id, request.state, request.reason, \
            request.message
        self.pool = request.pool or self.pool


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Runner:
    def __init__(self, client: Client, args: argparse.Namespace, out: Output) -> None:
        self.client, self.args, self.out = client, args, out
        self.summary = Summary(command=list(args.cmd))
        self.request: Request | None = None  # the newest state known
        self.process: subprocess.Popen | None = None
        self.signals: list[int] = []  # received while CMD runs: forwarded; the attempt ends "interrupted"
        self.submission = {**submission_from(args), "idempotency_key": str(uuid.uuid4())}

    def on_signal(self, signum: int, frame: Any) -> None:
        if self.process is None or self.process.poll() is not None:
            raise KeyboardInterrupt  # not running CMD: stop what poolctl is doing
        self.signals.append(signum)
        self._signal_command(signal.SIGKILL if len(self.signals) > 1 else signum)

    def run(self) -> int:
        """Submit, then wait and run until CMD ends by itself, is interrupted or runs out of retries."""
        try:
            self._note(self.client.submit(**self.submission))
            self.out.say(f"poolctl: submitted request {self.request.id} ({self.request.policy}/{self.request.profile})")
            warn(self.out, self.request)
            while True:
                self._wait()
                attempt = self._attempt()
                if attempt.ended in ("exited", "interrupted"):
                    return self._finish(attempt)
                self._acknowledge()
        except BaseException as error:  # interrupted, timed out, failed: nothing held or queued is left
            if self.request is not None or isinstance(error, KeyboardInterrupt):
                self._abandon()
            if isinstance(error, KeyboardInterrupt):
                raise Interrupted(f"interrupted; request {self.request.id if self.request else '?'} "
                                  f"is {self.summary.state}") from None
            raise

    def _note(self, request: Request) -> None:
        self.request = request
        self.summary.note(request)

    def _wait(self) -> None:
        self._note(wait_with_progress(self.client, self.request, self.args.timeout, self.out))

    def _abandon(self) -> None:
        """Interrupted, timed out or failed outside CMD: give back what the request holds or waits
        for. Interrupted before the submission's answer came, the same ``Idempotency-Key`` finds
        the request the server may have created (or creates it, only to cancel it)."""
        try:
            if self.request is None:
                self._note(self.client.submit(**self.submission))
            if not self.request.terminal:
                self._note(give_back(self.client, self.request) if self.request.live
                           else self.client.cancel(self.request))
        except PoolctlError as error:
            self.out.say(f"poolctl: could not give the request back: {error.line()}")

    def _attempt(self) -> Attempt:
        """Run CMD once under the request's allocation; how it ended."""
        request = self.request
        attempt = Attempt(attempt=request.attempt, pool=request.pool, started_at=now())
        self.summary.attempts.append(attempt)
        self.out.say(f"poolctl: request {request.id} allocated on pool {request.pool} "
                     f"({quantities(request.resources)}); running {shlex.join(self.args.cmd)} "
                     f"(attempt {request.attempt})")
        keeper = LeaseKeeper(self.client, request)
        self.signals = []
        self.process = self._start(request)
        keeper.start()
        try:
            attempt.ended = self._supervise(keeper)
        finally:
            keeper.stop()
            if self.process.poll() is None:  # an error of ours: never leave CMD behind
                self._signal_command(signal.SIGKILL)
            attempt.exit_code = self.summary.command_exit_code = exit_code(self.process.wait())
            attempt.ended_at = now()
            keeper.join(timeout=1)
            self._note(keeper.request)
        return attempt

    def _start(self, request: Request) -> subprocess.Popen:
        environment = {**os.environ, "POOLWEB_REQUEST_ID": str(request.id), "POOLWEB_POOL": request.pool or "",
                       "POOLWEB_ATTEMPT": str(request.attempt), "POOLWEB_RESOURCES": json.dumps(request.job_resources)}
        try:
            return subprocess.Popen(self.args.cmd, env=environment, process_group=0)
        except OSError as error:
            raise UsageError(f"cannot run {self.args.cmd[0]!r} ({error.strerror or error})",
                             "check the command after --") from None

    def _supervise(self, keeper: LeaseKeeper) -> str:
        """Until CMD exits: step aside when preempted, stop it when the allocation is gone."""
        assert self.process is not None
        kill_at, ended, gone, warned = float("inf"), "exited", False, False
        while self.process.poll() is None:
            time.sleep(STEP)
            if keeper.failure is not None:
                raise keeper.failure
            request = keeper.request
            if not warned and request.state != PREEMPTING and request.reason == TIME_LIMIT_NEAR:
                warned = self._warn(request, keeper)
            if ended == "exited" and request.state == PREEMPTING:
                ended, kill_at = "preempted", self._step_aside(request, keeper)
            if not gone and not request.live:  # the server ended the allocation: no grace is left
                gone, kill_at = True, time.monotonic()
                if ended == "exited":
                    ended = "lost"
                    self.out.say(f"poolctl: request {request.id} is {request.state} ({request.reason}: "
                                 f"{request.message}); stopping the command")
            if time.monotonic() >= kill_at:
                self._signal_command(signal.SIGKILL)
                kill_at = float("inf")
        return "interrupted" if self.signals else ended

    def _warn(self, request: Request, keeper: LeaseKeeper) -> bool:
        """R-52: the run limit comes within the grace: pass the signal on once, and read the
        request every second, so the end is seen when it comes."""
        name = self.args.signal
        self._signal_command(getattr(signal, f"SIG{name}"))
        keeper.read_every(1.0)
        ends = f" at {local_time(request.time_limit_at)}" if request.time_limit_at else ""
        self.out.say(f"poolctl: request {request.id}'s run limit comes{ends}; sent SIG{name} to the command")
        return True

    def _step_aside(self, request: Request, keeper: LeaseKeeper) -> float:
        """Preempted: send the signal; when to SIGKILL (--grace, else when the server evicts)."""
        name = self.args.signal
        self._signal_command(getattr(signal, f"SIG{name}"))
        keeper.read_every(1.0)  # a read after the grace makes the server evict at once
        grace = self.args.grace
        ends = f" at {local_time(request.grace_ends_at)}" if request.grace_ends_at else ""
        until = f"SIGKILL in {grace:g} s" if grace is not None else f"SIGKILL when the server ends the grace{ends}"
        self.out.say(f"poolctl: request {request.id} is being preempted ({request.reason}: {request.message}); "
                     f"sent SIG{name} to the command, {until}")
        return time.monotonic() + grace if grace is not None else float("inf")

    def _acknowledge(self) -> None:
        """After a preempted (or lost) attempt: release it if still ``preempting`` (R-51); go on
        when it is queued again, else end with why (``Preempted`` when no retries are left)."""
        request = self.client.get(self.request)
        if request.state == PREEMPTING:
            request = self.client.release(request)
        self._note(request)
        if request.state != PENDING:
            raise lost(request)
        self.out.say(f"poolctl: request {request.id} is queued again for attempt {request.attempt}")

    def _finish(self, attempt: Attempt) -> int:
        """CMD ended by itself (or by a forwarded signal): give the capacity back, exit with its code."""
        try:
            self._note(give_back(self.client, self.request))
        except PoolctlError as error:  # CMD's code still tells what matters; the lease ends the rest
            self.out.say(f"poolctl: could not release request {self.request.id}: {error.line()}")
        self.out.say(f"poolctl: the command exited with {attempt.exit_code}; request {self.request.id} "
                     f"is {self.request.state}")
        return attempt.exit_code or 0

    def _signal_command(self, signum: int) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                pass  # the whole group is gone already


def check_command(cmd: list[str]) -> list[str]:
    """CMD without a leading ``--``; a usage error before anything is submitted when there is no
    such program (not an hour later, once capacity is granted)."""
    cmd = cmd[1:] if cmd[:1] == ["--"] else cmd
    if not cmd:
        raise UsageError("no command to run", "put it after --, like: poolctl run --policy dev --profile half -- "
                                              "python train.py")
    if shutil.which(cmd[0]) is None:
        raise UsageError(f"cannot run {cmd[0]!r}: no such program, or not executable", "check the command after --")
    return cmd


def cmd_run(args: argparse.Namespace, out: Output) -> int:
    args.cmd = check_command(args.cmd)
    runner: Runner | None = None
    previous = {s: signal.getsignal(s) for s in FORWARDED}
    try:
        runner = Runner(client_for(args), args, out)
        for signum in FORWARDED:
            signal.signal(signum, runner.on_signal)
        runner.summary.exit_code = runner.run()
        return runner.summary.exit_code
    except PoolctlError as error:
        if runner is not None:
            runner.summary.exit_code, runner.summary.error = error.exit_code, error.as_json()
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if args.result_file:
            write_summary(Path(args.result_file), runner.summary if runner else Summary(command=list(args.cmd)))


def write_summary(path: Path, summary: Summary) -> None:
    path.write_text(json.dumps(asdict(summary), indent=2) + "\n", encoding="utf-8")


def signal_name(text: str) -> str:
    name = text.upper().removeprefix("SIG")
    if not isinstance(getattr(signal, f"SIG{name}", None), signal.Signals):
        raise argparse.ArgumentTypeError(f"{text!r} is not a signal name, like TERM, INT or USR1")
    return name


def add_run_command(commands: Commands) -> None:
    run = commands.add("run", cmd_run, "run a command under an allocation: wait, run, heartbeat, step aside when "
                                       "preempted, release")
    add_submission_arguments(run, RETRIES, "times to queue again and run the command again after preemption; 0: "
                                           "a preemption ends the run")
    behaviour = run.add_argument_group("running the command")
    behaviour.add_argument("--grace", type=seconds, metavar="SECONDS",
                           help="after the preemption signal, SIGKILL after this long (default: when the server "
                                "ends its grace)")
    behaviour.add_argument("--signal", type=signal_name, default="TERM",
                           help="the signal that asks the command to stop when preempted (default TERM)")
    behaviour.add_argument("--timeout", type=seconds, metavar="SECONDS",
                           help="give up waiting for capacity after this long (exit 8); each wait")
    behaviour.add_argument("--result-file", metavar="FILE",
                           help="write a JSON summary there: attempts, pool, reason, exit codes")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command to run")
