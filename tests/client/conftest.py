"""A live Poolweb for the client's tests: ``manage.py serve`` itself (the web server, the pass loop
and the django-q2 worker, tests/live_server.py) on the tests' database, started once for the
package, and per test the personas, their tokens and a small configuration.

alice is an admin (she may submit to any queue, the high-priority ``urgent`` one included), bob
is in team ``dev``, carol in no team. One pool ``box`` has 2 GPUs: two ``one`` requests or one
``two`` fill it, so an ``urgent`` request (priority 10) preempts ``dev`` work (priority 0).

The server's eviction grace is 2 s and its lease minimum is 10 s, so preemption and heartbeat
tests wait seconds, not minutes. Tests that use the server take ``live`` (``transactional_db``:
the server processes must see committed rows).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from poolweb.services import config as config_services
from poolweb.services.tokens import token_issue
from tests.live_server import LiveServer
from tests.poolweb import processes

EVICTION_GRACE_SECONDS = 2

DOCUMENT = {
    "pools": [{"name": "box", "capacity": {"gpu": 2}}],
    "profiles": [
        {"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "box"}], "policies": ["dev", "urgent"]},
        {"name": "two", "resources": {"gpu": 2}, "connections": [{"pool": "box"}], "policies": ["dev", "urgent"]},
        {"name": "flex", "resources": {"gpu": 1}, "dynamic": True, "connections": [{"pool": "box"}],
         "policies": ["dev"]},
    ],
    "policies": [
        {"name": "dev", "group": "dev", "priority": 0},
        {"name": "urgent", "group": "urgent", "priority": 10},
    ],
}


@dataclass(frozen=True)
class People:
    """The personas' tokens, and the server they use."""

    server: LiveServer
    alice: str
    bob: str
    carol: str


@pytest.fixture(scope="package")
def server(django_db_setup, tmp_path_factory) -> Iterator[LiveServer]:
    """``serve`` on the tests' database; stopped when the client's tests are done: left running,
    the loop and the worker would run passes under the tests that follow, which count the passes
    they run themselves."""
    with processes.live_server(tmp_path_factory.mktemp("server"), POOLWEB_EVENT_POLL_MS="20",
                               POOLWEB_EVICTION_GRACE_SECONDS=str(EVICTION_GRACE_SECONDS),
                               POOLWEB_LOG_LEVEL="WARNING") as running:
        yield running


@pytest.fixture
def live(server, transactional_db) -> People:
    """The personas and the configuration, committed for the server to see."""
    alice = User.objects.create_user("alice", password="alice-password", is_staff=True, is_superuser=True)
    bob = User.objects.create_user("bob", password="bob-password")
    bob.groups.add(Group.objects.get_or_create(name="dev")[0])
    carol = User.objects.create_user("carol", password="carol-password")
    Group.objects.get_or_create(name="urgent")
    config_services.config_provision_document(document=DOCUMENT, author=alice, comment="client tests")
    return People(server=server, alice=token_issue(user=alice), bob=token_issue(user=bob),
                  carol=token_issue(user=carol))


def poolctl_environment(url: str, token: str, home: Path, **extra: str) -> dict[str, str]:
    """A person's shell: the URL and token in the environment, an empty config directory."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("POOLWEB_")}
    return {**environment, "POOLWEB_URL": url, "POOLWEB_TOKEN": token, "XDG_CONFIG_HOME": str(home),
            "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **extra}


@pytest.fixture
def poolctl(live, tmp_path):
    """``poolctl(*args, token=…)``: the command line as a subprocess; the completed process."""

    def run(*args: str, token: str | None = None, url: str | None = None, timeout: float = 60,
            **extra: str) -> subprocess.CompletedProcess:
        environment = poolctl_environment(url or live.server.url, token or live.bob, tmp_path / "config", **extra)
        return subprocess.run([sys.executable, "-m", "poolctl", *args], env=environment, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    return run


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that used the server shows the server's log."""
    outcome = yield
    report = outcome.get_result()
    server = item.funcargs.get("server") if hasattr(item, "funcargs") else None
    if report.failed and isinstance(server, LiveServer):
        report.sections.append(("server log", server.output()[-10_000:]))
