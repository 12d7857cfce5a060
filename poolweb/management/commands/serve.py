"""``manage.py serve``: the web server, the pass loop and the background worker, supervised
together.

Three children: uvicorn serving ``poolweb.asgi:application`` (HTTP and websockets) on ``PORT``
(default 8000) in ``POOLWEB_WEB_PROCESSES`` processes (1); the pass loop
(``manage.py reconcile --follow``), which passes whenever a change wakes it or a deadline comes;
and ``manage.py qcluster`` (django-q2) for the periodic pass and housekeeping. Each runs in its
own process group, so a Ctrl-C in the terminal reaches only this supervisor, which then stops
them itself; a group also holds a child's own processes (uvicorn's and the worker's), so
killing a group leaves nothing behind.

- SIGINT or SIGTERM: SIGTERM to every child, SIGKILL to whatever is left of their groups
  after the grace period; exit 0.
- A child exits on its own (a crash, the OOM killer, a kill -9): SIGKILL to what is left of its
  group, and the child is started again after 1 s, then 2, 4 … up to 30 s while it keeps dying
  within a minute of its start; once it has run a minute, the next delay is 1 s again. Each death
  is one line on stderr (the exit status or signal, how long it ran, the delay), each restart one
  on stdout; the other children run on. A pass loop killed mid-pass holds nothing once dead (its
  pass lock is a flock, or a database session's, and goes with the process), and the loop started
  again passes at once, so the pass that was cut short is made.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from poolweb.env import ImproperlyConfigured, env_int, env_str
from poolweb.instruments import MULTIPROCESS_VARIABLE, multiprocess_directory
from poolweb.ports import port_free, port_open
from poolweb.services.triggers import start_passes

STOP_GRACE_SECONDS = 8.0  # then SIGKILL; both children are gone within 10 s of the signal
POLL_SECONDS = 0.2
READY_TIMEOUT_SECONDS = 60.0
FIRST_RESTART_DELAY_SECONDS = 1.0
MAX_RESTART_DELAY_SECONDS = 30.0  # a child that keeps dying is still tried twice a minute, and says so
HEALTHY_SECONDS = 60.0  # a child that ran this long before it died waits the first delay again


@dataclass
class Child:
    """One supervised process, started again whenever it dies."""

    name: str
    command: list[str]
    environment: dict[str, str]  # added to this process's
    process: subprocess.Popen | None = None
    started_at: float = 0.0  # time.monotonic()
    deaths: int = 0  # in a row, each within HEALTHY_SECONDS of its start
    restart_at: float | None = None  # while it is dead: when it starts again

    def start(self, now: float) -> None:
        self.process, self.started_at, self.restart_at = launch(self.command, self.environment), now, None

    def died(self, now: float) -> float:
        """Count its death at ``now`` and plan its restart; the delay, in seconds."""
        self.deaths = self.deaths + 1 if now - self.started_at < HEALTHY_SECONDS else 1
        delay = restart_delay(self.deaths)
        self.restart_at = now + delay
        return delay


def restart_delay(deaths: int) -> float:
    """Exponential backoff for a child that died ``deaths`` times in a row: 1, 2, 4 … 30 s."""
    return min(MAX_RESTART_DELAY_SECONDS, FIRST_RESTART_DELAY_SECONDS * 2 ** (deaths - 1))


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def listen_address() -> tuple[str, int]:
    """(host, port) from ``POOLWEB_HOST`` (default 127.0.0.1) and ``PORT`` (default 8000)."""
    try:
        port = env_int("PORT", 8000, minimum=1, maximum=65535)
    except ImproperlyConfigured as error:
        raise CommandError(str(error)) from None
    host = env_str("POOLWEB_HOST", "127.0.0.1").strip()
    if not host:
        raise CommandError("POOLWEB_HOST must not be empty")
    return host, port


def child_commands(host: str, port: int) -> dict[str, list[str]]:
    manage = str(settings.BASE_DIR / "manage.py")
    return {
        "web server": web_server_command(host, port, settings.POOLWEB["WEB_PROCESSES"]),
        "pass loop": [sys.executable, manage, "reconcile", "--follow"],
        "worker": [sys.executable, manage, "qcluster"],
    }


def web_server_command(host: str, port: int, processes: int) -> list[str]:
    """uvicorn (docs/decisions.md): its C HTTP parser and event loop cost a fraction of daphne's
    per request; with ``processes`` > 1 it forks that many web processes on one socket. No
    per-message deflate: events are half a kilobyte, and compressing each for each stream took
    a twentieth of the web process's time with 50 pages open (decision 66). Idle keep-alive
    connections are kept 75 s, not uvicorn's 5: a client polling every few seconds (poolctl,
    a pipeline) keeps its connection, and its process, instead of a new handshake each time.
    No proxy headers: uvicorn would believe ``X-Forwarded-For`` from 127.0.0.1 whatever
    ``POOLWEB_TRUSTED_PROXIES`` says; poolweb/addresses.py reads it, from those proxies only
    (``X-Forwarded-Proto``: Django reads the header ``POOLWEB_PROXY_TLS_HEADER`` names)."""
    return [sys.executable, "-m", "uvicorn", "--host", host, "--port", str(port), "--workers", str(processes),
            "--http", "poolweb.http_protocol:HeadDeadline",  # httptools, with a bound on the request head
            "--loop", "uvloop", "--ws", "websockets-sansio", "--ws-per-message-deflate", "false",
            "--lifespan", "off", "--timeout-keep-alive", "75", "--no-proxy-headers",
            "--no-access-log", "--timeout-graceful-shutdown", "5", "poolweb.asgi:application"]


def launch(command: list[str], extra: dict[str, str]) -> subprocess.Popen:
    environment = {**os.environ, **extra, "PYTHONUNBUFFERED": "1"}
    environment.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=environment, stdin=subprocess.DEVNULL,
                            process_group=0, preexec_fn=_terminate_with_parent)  # noqa: PLW1509 (no threads here)


def _terminate_with_parent() -> None:
    """In the child before exec: SIGTERM it if this supervisor dies without stopping it (even by
    SIGKILL), so no server is left holding the port. Linux only; elsewhere a no-op."""
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def stop(children: list[Child], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM each child, wait for it, then SIGKILL whatever is left of its process group.

    Only the leader gets SIGTERM: qcluster stops its pool itself, and its pool processes, killed
    under it, can leave it waiting forever on a shared lock.
    """
    for child in children:
        if child.process.poll() is None:
            child.process.terminate()
    deadline = time.monotonic() + grace
    for child in children:
        try:
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:
        _signal_group(child, signal.SIGKILL)  # the group may outlive its leader
        if child.process.poll() is None:
            child.process.wait()


def _signal_group(child: Child, signum: int) -> None:
    try:
        os.killpg(child.process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is gone already


class Command(BaseCommand):
    help = ("Run the web server (uvicorn: HTTP and websockets), the pass loop and the background worker "
            "until Ctrl-C or SIGTERM.")
    # The children load the whole project themselves, and `make run` runs migrate (and so the
    # system checks) just before: checking here too would only delay the start.
    requires_system_checks = ()
    requires_migrations_checks = True

    def handle(self, *args, **options) -> None:
        host, port = listen_address()
        if not port_free(host, port):
            raise CommandError(f"{host}:{port} is in use: stop what listens there, or choose another PORT")
        start_passes()
        # The web processes' metrics go to files every process of this run shares (decision 142).
        shared = {MULTIPROCESS_VARIABLE: str(multiprocess_directory(settings.DATA_DIR))}
        received: list[int] = []  # the signal handler only records; the loop below acts
        previous = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                    for s in (signal.SIGINT, signal.SIGTERM)}
        children = [Child(name, command, shared) for name, command in child_commands(host, port).items()]
        try:
            for child in children:
                child.start(time.monotonic())
                self.say(f"Started the {child.name} (pid {child.process.pid}).")
            self.supervise(children, host, port, received)
        finally:
            if received:
                self.say(f"Received {signal.Signals(received[0]).name}: stopping the web server, the pass loop "
                         "and the worker.")
            # also when supervision itself failed: never leave the children behind
            stop([child for child in children if child.process is not None])
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.say("Stopped.")

    def supervise(self, children: list[Child], host: str, port: int, received: list[int]) -> None:
        """Watch the children until a signal arrives, starting again each one that dies. Prints
        the URLs once the port answers."""
        local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        url = f"http://{f'[{local}]' if ':' in local else local}:{port}/"
        warn_at = time.monotonic() + READY_TIMEOUT_SECONDS
        announced = False
        while not received:
            for child in children:
                self.keep_alive(child, time.monotonic())
            if not announced and port_open(local, port):
                announced = True
                self.say(self.style.SUCCESS(f"Poolweb is running at {url}  (API docs: {url}api/docs/)  "
                                            "Press Ctrl-C to stop."))
            elif not announced and time.monotonic() > warn_at:
                warn_at = float("inf")
                self.say(self.style.WARNING(f"The web server does not answer on {url} yet."))
            time.sleep(POLL_SECONDS)

    def keep_alive(self, child: Child, now: float) -> None:
        """Notice that ``child`` died (and plan its restart), or start it again when its time has come."""
        if child.restart_at is None and child.process.poll() is not None:
            _signal_group(child, signal.SIGKILL)  # what it started (uvicorn's or the worker's processes) goes too
            delay = child.died(now)
            again = f", {child.deaths} times in a row" if child.deaths > 1 else ""
            self.stderr.write(f"The {child.name} (pid {child.process.pid}) {how_it_ended(child.process.returncode)} "
                              f"after {now - child.started_at:.1f} s{again}; starting it again in {delay:g} s.")
            self.stderr.flush()
        elif child.restart_at is not None and now >= child.restart_at:
            child.start(now)
            self.say(f"Started the {child.name} again (pid {child.process.pid}).")

    def say(self, message: str) -> None:
        self.stdout.write(message)
        self.stdout.flush()
