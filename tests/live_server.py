"""A live Poolweb for the tests and the benchmarks: what ``manage.py serve`` runs, started, waited for
until it answers, and stopped with every process group it made (docs/decisions.md 108).

``LiveServer`` runs ``manage.py serve`` itself (the web server, the pass loop and the worker,
supervised: a child that dies is started again) or, ``web_only``, the web server alone by the very
command ``serve`` gives it (``child_commands``: uvicorn, its protocol class and options), for tests
whose passes run inline or in the test's own process. It listens on a free port of 127.0.0.1 and
writes its output to ``log``; ``with LiveServer(...) as server`` starts it and stops it after.

``launch`` and ``stop`` start and stop any other Poolweb process the same way (the pass loop alone,
the worker alone). Here, not in poolweb/ (nothing deployed uses it) nor bench/ (the tests would
import the benchmarks): it imports neither pytest nor, until a web-only server starts, Django, so
a benchmark's parent process may import it before it sets Django up.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from poolweb.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
START_TIMEOUT = 120.0  # mostly Django's start; the machine is shared, and a bench may load it
# serve's own grace (8 s) and uvicorn's graceful shutdown (5 s) fit in it; then SIGKILL
STOP_GRACE_SECONDS = 15.0


def launch(command: Sequence[str], environment: Mapping[str, str], log: Path | None = None) -> subprocess.Popen:
    """``command``, run from the checkout in a process group of its own (as ``serve`` runs each
    child), its output appended to ``log``; without one, to a pipe (``process.stdout``) that the
    caller reads once the process has stopped: keep it for short and quiet processes."""
    environment = {"DJANGO_SETTINGS_MODULE": "poolweb.settings", **environment, "PYTHONUNBUFFERED": "1"}
    if log is None:
        return _popen(command, environment, subprocess.PIPE)
    with log.open("ab") as sink:  # the child holds its own descriptor
        return _popen(command, environment, sink)


def _popen(command: Sequence[str], environment: dict[str, str], output) -> subprocess.Popen:
    return subprocess.Popen(list(command), cwd=ROOT, env=environment, stdin=subprocess.DEVNULL, stdout=output,
                            stderr=subprocess.STDOUT, process_group=0)


def stop(process: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = STOP_GRACE_SECONDS) -> None:
    """``signum`` to the leader only, then, once it has exited or ``grace`` has passed, SIGKILL to
    what is left of its process group and of the groups of everything under it (``serve`` starts
    each child in a group of its own). Only the leader is signalled first: ``serve`` stops its
    children itself, and qcluster its pool, which, signalled under it, can leave it waiting on a lock."""
    groups = {process.pid} | _groups(descendants(process.pid))
    if process.poll() is None:
        process.send_signal(signum)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    for group in groups:
        with suppress(ProcessLookupError, PermissionError):  # the whole group is gone already
            os.killpg(group, signal.SIGKILL)
    process.wait()


def descendants(pid: int) -> set[int]:
    """The pids of the processes under ``pid`` (Linux's /proc; none elsewhere)."""
    parents = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with suppress(OSError, ValueError, IndexError):  # gone meanwhile
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _groups(pids: set[int]) -> set[int]:
    groups = set()
    for pid in pids:
        with suppress(ProcessLookupError):
            groups.add(os.getpgid(pid))
    return groups - {os.getpgrp()}  # never the caller's own


@dataclass
class LiveServer:
    """Poolweb on ``HOST:port``: ``manage.py serve``, or its web server alone (``web_only``, with as
    many web processes as this process's settings say, as ``serve`` would run it here).
    ``environment`` is the whole environment of the server (the database, the data directory …)."""

    environment: Mapping[str, str]
    log: Path
    web_only: bool = False
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def command(self) -> list[str]:
        if not self.web_only:
            return [sys.executable, str(ROOT / "manage.py"), "serve"]
        from poolweb.management.commands.serve import child_commands  # needs Django set up

        return child_commands(HOST, self.port)["web server"]

    def start(self, timeout: float = START_TIMEOUT) -> LiveServer:
        """Start it (again, on the same port, after ``stop``) and wait until it answers HTTP."""
        self.process = launch(self.command(), {**self.environment, "POOLWEB_HOST": HOST, "PORT": str(self.port)},
                              self.log)
        try:
            self._wait_until_it_answers(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> str:
        """Stop it, if it runs, and everything it started; what it printed."""
        if self.process is not None:
            stop(self.process)
            self.process = None
        return self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *exception) -> None:
        self.stop()

    def _wait_until_it_answers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.output()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer on {self.url} within {timeout:.0f} s:\n"
                                   f"{self.output()[-3000:]}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        """Whether Django answers (``/api`` redirects: no database, no sign-in, nothing logged)."""
        connection = http.client.HTTPConnection(HOST, self.port, timeout=5)
        try:
            connection.request("GET", "/api")
            connection.getresponse().read()
            return True
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()
