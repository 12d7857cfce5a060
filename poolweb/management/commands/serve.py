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
- A child exits on its own: stop the others, exit 1.
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
from poolweb.ports import port_free, port_open
from poolweb.services.triggers import start_passes

STOP_GRACE_SECONDS = 8.0  # then SIGKILL; both children are gone within 10 s of the signal
POLL_SECONDS = 0.2
READY_TIMEOUT_SECONDS = 60.0


@dataclass
class Child:
    name: str
    process: subprocess.Popen


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
    a pipeline) keeps its connection, and its process, instead of a new handshake each time."""
    return [sys.executable, "-m", "uvicorn", "--host", host, "--port", str(port), "--workers", str(processes),
            "--http", "poolweb.http_protocol:HeadDeadline",  # httptools, with a bound on the request head
            "--loop", "uvloop", "--ws", "websockets-sansio", "--ws-per-message-deflate", "false",
            "--lifespan", "off", "--timeout-keep-alive", "75",
            "--no-access-log", "--timeout-graceful-shutdown", "5", "poolweb.asgi:application"]


def start(name: str, command: list[str]) -> Child:
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    environment.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")
    process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=environment, stdin=subprocess.DEVNULL,
                               process_group=0, preexec_fn=_terminate_with_parent)  # noqa: PLW1509 (no threads here)
    return Child(name, process)


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
        received: list[int] = []  # the signal handler only records; the loop below acts
        previous = {s: signal.signal(s, lambda signum, frame: received.append(signum))
                    for s in (signal.SIGINT, signal.SIGTERM)}
        children: list[Child] = []
        try:
            for name, command in child_commands(host, port).items():
                children.append(start(name, command))
                self.say(f"Started the {name} (pid {children[-1].process.pid}).")
            failed = self.supervise(children, host, port, received)
        finally:
            if received:
                self.say(f"Received {signal.Signals(received[0]).name}: stopping the web server, the pass loop "
                         "and the worker.")
            stop(children)  # also when supervision itself failed: never leave the children behind
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if failed is not None:
            raise CommandError(f"the {failed.name} exited with status {failed.process.returncode}; "
                               "stopped the other processes")
        self.say("Stopped.")

    def supervise(self, children: list[Child], host: str, port: int, received: list[int]) -> Child | None:
        """Watch the children until a signal arrives (None) or one of them exits (that child).
        Prints the URLs once the port answers."""
        local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        url = f"http://{f'[{local}]' if ':' in local else local}:{port}/"
        warn_at = time.monotonic() + READY_TIMEOUT_SECONDS
        announced = False
        while not received:
            for child in children:
                if child.process.poll() is not None:
                    return child
            if not announced and port_open(local, port):
                announced = True
                self.say(self.style.SUCCESS(f"Poolweb is running at {url}  (API docs: {url}api/docs/)  "
                                            "Press Ctrl-C to stop."))
            elif not announced and time.monotonic() > warn_at:
                warn_at = float("inf")
                self.say(self.style.WARNING(f"The web server does not answer on {url} yet."))
            time.sleep(POLL_SECONDS)
        return None

    def say(self, message: str) -> None:
        self.stdout.write(message)
        self.stdout.flush()
