"""The one-command start: ``manage.py bootstrap`` (first admin, demo configuration) and
``manage.py serve`` (web server and worker, supervised)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from poolweb.management.commands import serve
from poolweb.models import ConfigVersion, Policy, Pool, Profile, SiteState
from poolweb.ports import free_port
from poolweb.services import config as config_services, validation
from poolweb.services.demo import DEMO_COMMENT, DEMO_GROUPS, demo_document
from reconcile.document import parse_document
from tests.live_server import LiveServer, descendants
from tests.poolweb.conftest import document

PASSWORD_LINE = re.compile(r"^ {4}(\S+)$", re.MULTILINE)


def bootstrap(*args: str) -> str:
    out = io.StringIO()
    call_command("bootstrap", *args, stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str | None:
    found = PASSWORD_LINE.findall(output)
    assert len(found) <= 1, output
    return found[0] if found else None


# The first admin


@pytest.mark.django_db
def test_it_creates_one_admin_and_prints_a_password_that_signs_in():
    output = bootstrap()
    admin = User.objects.get()
    assert (admin.username, admin.is_staff, admin.is_superuser) == ("admin", True, True)
    password = printed_password(output)
    assert password and len(password) >= 20
    assert admin.check_password(password)
    assert output.count(password) == 1


@pytest.mark.django_db
def test_a_second_run_creates_nothing_and_prints_no_password():
    first = printed_password(bootstrap())
    second = bootstrap()
    assert User.objects.count() == 1
    assert printed_password(second) is None
    assert first not in second
    assert "admin already exists" in second
    assert User.objects.get().check_password(first)  # the password was not reset


@pytest.mark.django_db
def test_it_names_the_admin_after_POOLWEB_ADMIN_USERNAME(monkeypatch):
    monkeypatch.setenv("POOLWEB_ADMIN_USERNAME", "root-ops")
    bootstrap()
    assert list(User.objects.values_list("username", "is_superuser")) == [("root-ops", True)]


@pytest.mark.django_db
def test_it_creates_no_admin_when_a_superuser_exists(alice):
    output = bootstrap("--no-demo")
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]
    assert printed_password(output) is None
    assert "alice already exists" in output


@pytest.mark.django_db
def test_it_refuses_to_promote_an_ordinary_user_of_the_same_name(carol, monkeypatch):
    monkeypatch.setenv("POOLWEB_ADMIN_USERNAME", "carol")
    with pytest.raises(CommandError, match="'carol' exists but is not a superuser"):
        bootstrap()
    carol.refresh_from_db()
    assert not carol.is_superuser and not carol.is_staff
    assert not ConfigVersion.objects.exists()


@pytest.mark.django_db
def test_it_refuses_an_invalid_admin_username(monkeypatch):
    monkeypatch.setenv("POOLWEB_ADMIN_USERNAME", "no spaces please")
    with pytest.raises(CommandError, match="POOLWEB_ADMIN_USERNAME"):
        bootstrap()
    assert not User.objects.exists()


# The demo configuration


@pytest.mark.django_db
def test_it_provisions_the_demo_as_version_1_with_its_groups():
    output = bootstrap()
    version = ConfigVersion.objects.get()
    admin = User.objects.get()
    assert (version.number, version.comment, version.author) == (1, DEMO_COMMENT, admin)
    assert SiteState.objects.get(pk=1).live_version == version
    assert "demo configuration as version 1" in output
    # the relational rows, written by the configuration service like any provision
    assert sorted(Pool.objects.filter(version=version).values_list("name", flat=True)) == ["a100", "h100"]
    assert sorted(Profile.objects.filter(version=version).values_list("name", flat=True)) == \
        ["2xgpu", "8xgpu", "half", "job"]
    assert sorted(Policy.objects.filter(version=version).values_list("group_name", flat=True)) == ["dev", "research"]
    assert set(Group.objects.values_list("name", flat=True)) == set(DEMO_GROUPS)


@pytest.mark.django_db
def test_a_second_run_provisions_nothing():
    bootstrap()
    output = bootstrap()
    assert list(ConfigVersion.objects.values_list("number", flat=True)) == [1]
    assert "the demo was not loaded" in output


@pytest.mark.django_db
def test_it_leaves_an_existing_configuration_alone(alice):
    config_services.config_provision_document(document=document(), author=alice, comment="ours")
    output = bootstrap()
    assert list(ConfigVersion.objects.values_list("comment", flat=True)) == ["ours"]
    assert not Group.objects.filter(name="research").exists()
    assert "the demo was not loaded" in output


@pytest.mark.django_db
def test_no_demo_creates_the_admin_only():
    bootstrap("--no-demo")
    assert User.objects.count() == 1
    assert not ConfigVersion.objects.exists()


def test_the_demo_document_is_valid_and_draws_no_warning():
    parsed = parse_document(demo_document())
    assert (parsed.errors, parsed.warnings) == ((), ())


@pytest.mark.django_db
def test_the_service_only_warns_that_the_demo_groups_have_no_members_yet():
    bootstrap()
    checked = validation.validate_document(demo_document())
    assert checked.errors == []
    assert sorted((w.path, w.code) for w in checked.warnings) == \
        [("policies[0].group", "group_empty"), ("policies[1].group", "group_empty")]


def test_the_demo_shows_two_pools_fractional_and_multi_gpu_profiles_and_two_teams_with_reservations():
    config = parse_document(demo_document()).config
    assert [p.name for p in config.pools] == ["h100", "a100"]
    gpus = {p.name: p.resources.get("gpu", 0) for p in config.profiles}
    assert gpus["half"] == 500 and gpus["2xgpu"] == 2000 and gpus["8xgpu"] == 8000  # milli-units
    assert [p.name for p in config.profiles if p.dynamic] == ["job"]
    assert [(p.name, p.group) for p in config.policies] == [("research", "research"), ("dev", "dev")]
    for policy in config.policies:
        assert any(row.reserved and row.key == "gpu" for row in policy.quotas), policy.name
        assert any(row.limit and row.key == "gpu" for row in policy.quotas), policy.name


def test_the_demo_document_is_a_fresh_copy_each_time():
    changed = demo_document()
    changed["pools"].clear()
    assert len(demo_document()["pools"]) == 2


# manage.py serve


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it no longer exists."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def running(pid: int) -> bool:
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def get_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


@pytest.fixture
def serve_environment(tmp_path) -> dict[str, str]:
    """A fresh SQLite database in a temporary data directory, migrated."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DATABASE_URL", "POOLWEB_SECRET_KEY")}
    # The worker's clusters are seen starting by django-q's INFO lines, which serve leaves out by default.
    environment.update(POOLWEB_DATA_DIR=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="poolweb.settings",
                       POOLWEB_TASKS_LOG_LEVEL="INFO")
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=settings.BASE_DIR,
                             env=environment, check=False, capture_output=True, text=True, timeout=120)
    assert migrate.returncode == 0, migrate.stderr
    return environment


def until(server: LiveServer, condition: Callable[[str], object], what: str, timeout: float = 60) -> str:
    """Wait until ``condition(serve's output)`` holds while serve runs; that output."""
    deadline = time.monotonic() + timeout
    while not condition(output := server.output()):
        assert server.process.poll() is None, output
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f} s\n{output}"
        time.sleep(0.2)
    return output


def clusters_running(output: str) -> int:
    """How many worker clusters said they run (django-q2's log line)."""
    return len(re.findall(r"Q Cluster \S+ \[poolweb\] running", output))


def test_serve_answers_http_runs_the_worker_and_stops_both_on_sigterm(serve_environment, tmp_path):
    with LiveServer(serve_environment, tmp_path / "serve.log") as server:
        supervisor = server.process
        assert get_status(f"{server.url}/api/schema/") == 200
        output = until(server, lambda output: clusters_running(output) and "Poolweb is running at" in output,
                       "the worker running")
        assert f"{server.url}/api/docs/" in output
        pids = {name: int(pid) for name, pid in re.findall(r"Started the (web server|worker) \(pid (\d+)\)", output)}
        assert set(pids) == {"web server", "worker"}, output
        assert all(running(pid) for pid in pids.values()), output
        assert proc_stat(pids["worker"])[1] == supervisor.pid
        family = descendants(supervisor.pid)  # both children and the worker's cluster processes
        assert len(family) > 2, family

        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=10) == 0, server.output()
        assert not [pid for pid in family if running(pid)], server.output()
        assert "Received SIGTERM" in server.output()


def test_serve_starts_the_web_server_the_pass_loop_and_the_worker_again_after_a_kill_9(serve_environment, tmp_path):
    names = r"(web server|pass loop|worker)"
    with LiveServer(serve_environment, tmp_path / "serve.log") as server:
        output = until(server, lambda output: clusters_running(output) == 1, "serve running")
        first = {name: int(pid) for name, pid in re.findall(rf"Started the {names} \(pid (\d+)\)", output)}
        old_cluster = descendants(first["worker"])
        assert len(first) == 3 and old_cluster, output

        for pid in first.values():
            os.kill(pid, signal.SIGKILL)
        output = until(server, lambda output: len(re.findall(rf"Started the {names} again", output)) == 3
                       and clusters_running(output) == 2 and get_status(f"{server.url}/api/schema/") == 200,
                       "all three started again and serving")

        again = {name: int(pid) for name, pid in re.findall(rf"Started the {names} again \(pid (\d+)\)", output)}
        assert again.keys() == first.keys() and all(running(pid) for pid in again.values()), output
        for name, pid in first.items():
            assert f"The {name} (pid {pid}) was killed by SIGKILL after " in output
        assert not [pid for pid in old_cluster if running(pid)]  # the dead worker's processes went with it
        family = descendants(server.process.pid)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=10) == 0, server.output()
        assert not [pid for pid in family if running(pid)], server.output()


def test_serve_runs_several_web_processes_on_sqlite(serve_environment, tmp_path):
    """Two web processes and the pass loop write one SQLite database: concurrent submissions
    all land, and none meets "database is locked" (IMMEDIATE transactions queue for the lock)."""
    environment = {**serve_environment, "POOLWEB_WEB_PROCESSES": "2"}
    manage = [sys.executable, "manage.py"]
    for command in (["bootstrap"], ["create_api_token", "admin"]):
        done = subprocess.run([*manage, *command], cwd=settings.BASE_DIR, env=environment, check=False,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    with LiveServer(environment, tmp_path / "serve.log") as server:
        until(server, lambda _: len(web_workers(server.process.pid)) == 2, "two web processes", timeout=30)

        def submit(n: int) -> int:
            call = urllib.request.Request(
                f"{server.url}/api/v1/requests", method="POST",
                data=json.dumps({"policy": "dev", "profile": "half", "name": f"job-{n}"}).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=30) as response:
                return response.status

        with ThreadPoolExecutor(max_workers=8) as pool:
            assert list(pool.map(submit, range(60))) == [201] * 60
        assert "database is locked" not in server.output()


def web_workers(supervisor_pid: int) -> list[int]:
    """uvicorn's worker processes under the supervisor (started by multiprocessing's spawn)."""
    return [pid for pid in descendants(supervisor_pid)
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")]


def test_a_child_that_keeps_dying_waits_twice_as_long_each_time_up_to_a_cap_and_from_1_s_after_a_healthy_run():
    child = serve.Child("worker", ["true"], {})
    delays, now = [], 0.0
    for _ in range(7):  # each dies a second after its start
        child.started_at = now
        delays.append(child.died(now + 1))
        now = child.restart_at
    assert delays == [1, 2, 4, 8, 16, 30, 30]
    assert child.deaths == 7
    child.started_at = now
    assert child.died(now + serve.HEALTHY_SECONDS) == 1  # it had run a minute: a fresh start
    assert child.deaths == 1


@pytest.mark.django_db
def test_serve_starts_a_child_that_dies_again_with_backoff_and_saying_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PORT", str(free_port()))
    marker = tmp_path / "sleeper.pid"
    sleeper = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    dying = f"import os, time\nwhile not os.path.exists({str(marker)!r}): time.sleep(0.05)\nraise SystemExit(3)"
    monkeypatch.setattr(serve, "child_commands", lambda host, port: {
        "web server": [sys.executable, "-c", sleeper], "worker": [sys.executable, "-c", dying]})
    out, err, finished = io.StringIO(), io.StringIO(), threading.Event()

    def stop_after_three_deaths() -> None:
        deadline = time.monotonic() + 30
        while err.getvalue().count("exited with status 3") < 3 and time.monotonic() < deadline:
            if finished.wait(0.05):
                return  # serve ended by itself: nothing to stop
        os.kill(os.getpid(), signal.SIGTERM)  # to this process, where serve's handler takes it

    stopper = threading.Thread(target=stop_after_three_deaths)
    stopper.start()
    try:
        call_command("serve", stdout=out, stderr=err)
    finally:
        finished.set()
        stopper.join()

    deaths = re.findall(r"The worker \(pid (\d+)\) exited with status 3 after [\d.]+ s(, \d times in a row)?; "
                        r"starting it again in (\d+) s\.", err.getvalue())
    assert [(row[1], row[2]) for row in deaths] == [("", "1"), (", 2 times in a row", "2"),
                                                    (", 3 times in a row", "4")], err.getvalue()
    assert len({row[0] for row in deaths}) == 3  # a new process each time
    assert out.getvalue().count("Started the worker again") == 2, out.getvalue()
    assert "Received SIGTERM" in out.getvalue() and "Stopped." in out.getvalue()
    assert not running(int(marker.read_text()))  # the web server ran on, and stopped with serve


@pytest.mark.django_db
def test_serve_refuses_a_port_in_use(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("PORT", str(taken.getsockname()[1]))
        monkeypatch.setattr(serve, "launch", lambda *args: pytest.fail("nothing may start"))
        with pytest.raises(CommandError, match="is in use"):
            call_command("serve", stdout=io.StringIO())
