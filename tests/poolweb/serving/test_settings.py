"""Settings come from the environment through small helpers that fail loudly on bad values."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from poolweb.env import ImproperlyConfigured, env_bool, env_int, env_str
from poolweb.management.commands import serve


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), (" Yes ", True), ("ON", True),
                                             ("0", False), ("false", False), ("no", False), ("off", False)])
def test_env_bool_reads_the_usual_spellings(monkeypatch, value, expected):
    monkeypatch.setenv("POOLWEB_DEBUG", value)
    assert env_bool("POOLWEB_DEBUG", not expected) is expected


@pytest.mark.parametrize("value", [None, ""])
def test_env_bool_takes_the_default_when_unset_or_empty(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("POOLWEB_DEBUG", raising=False)
    else:
        monkeypatch.setenv("POOLWEB_DEBUG", value)
    assert env_bool("POOLWEB_DEBUG", True) is True


def test_env_bool_refuses_maybe_and_names_the_variable(monkeypatch):
    monkeypatch.setenv("POOLWEB_DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match=r"POOLWEB_DEBUG must be true or false, not 'maybe'"):
        env_bool("POOLWEB_DEBUG")


@pytest.mark.parametrize("value, message", [
    ("abc", "POOLWEB_WORKERS must be an integer, not 'abc'"),
    ("1.5", "POOLWEB_WORKERS must be an integer"),
    ("0", r"POOLWEB_WORKERS must be within \[1, 16\], not 0"),
    ("17", r"POOLWEB_WORKERS must be within \[1, 16\], not 17"),
])
def test_env_int_refuses_what_is_not_an_integer_in_range(monkeypatch, value, message):
    monkeypatch.setenv("POOLWEB_WORKERS", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        env_int("POOLWEB_WORKERS", 1, minimum=1, maximum=16)


def test_env_int_and_env_str_take_their_defaults_when_unset(monkeypatch):
    monkeypatch.delenv("POOLWEB_WORKERS", raising=False)
    monkeypatch.delenv("POOLWEB_HOST", raising=False)
    assert env_int("POOLWEB_WORKERS", 3, minimum=1, maximum=16) == 3
    assert env_str("POOLWEB_HOST", "127.0.0.1") == "127.0.0.1"


def run_manage(*args: str, **variables: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    environment.update(DJANGO_SETTINGS_MODULE="poolweb.settings", **variables)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("variable, value", [("POOLWEB_DEBUG", "maybe"), ("POOLWEB_WORKERS", "many")])
def test_a_bad_value_stops_every_command_and_names_the_variable(tmp_path, variable, value):
    result = run_manage("check", POOLWEB_DATA_DIR=str(tmp_path), **{variable: value})
    assert result.returncode != 0
    assert f"{variable} must be" in result.stderr and repr(value) in result.stderr


def test_the_settings_load_with_a_clean_environment(tmp_path):
    result = run_manage("check", POOLWEB_DATA_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "secret_key").exists()  # generated once, in the data directory


@pytest.mark.django_db
@pytest.mark.parametrize("value, message", [
    ("abc", "PORT must be an integer, not 'abc'"),
    ("0", r"PORT must be within \[1, 65535\], not 0"),
    ("70000", r"PORT must be within \[1, 65535\], not 70000"),
])
def test_serve_refuses_a_bad_port_before_starting_anything(monkeypatch, value, message):
    monkeypatch.setenv("PORT", value)
    monkeypatch.setattr(serve, "launch", lambda *args: pytest.fail("nothing may start"))
    with pytest.raises(CommandError, match=message):
        call_command("serve", stdout=io.StringIO())


def test_manage_py_serve_exits_non_zero_on_a_bad_port(tmp_path):
    result = run_manage("serve", POOLWEB_DATA_DIR=str(tmp_path), PORT="abc")
    assert result.returncode == 1
    assert "PORT must be an integer, not 'abc'" in result.stderr
    assert "Started the" not in result.stdout


def test_serve_listens_on_8000_when_port_is_unset(monkeypatch):
    monkeypatch.delenv("PORT", raising=False)
    monkeypatch.delenv("POOLWEB_HOST", raising=False)
    assert serve.listen_address() == ("127.0.0.1", 8000)
    commands = serve.child_commands("127.0.0.1", 8000)
    web = commands["web server"]
    assert (web[web.index("--host") + 1], web[web.index("--port") + 1], web[-1]) == (
        "127.0.0.1", "8000", "poolweb.asgi:application")
    assert commands["pass loop"][-2:] == ["reconcile", "--follow"]
    assert commands["worker"][-1] == "qcluster"


def test_the_login_page_renders(client):
    response = client.get("/accounts/login/")
    assert response.status_code == 200 and b"Sign in to Poolweb" in response.content


def test_the_api_docs_are_public_and_served_without_a_cdn(client, db):
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/").content.decode()
    assert "cdn" not in page.lower() and "/static/drf_spectacular_sidecar/" in page


def test_testserver_is_not_an_allowed_host_outside_the_tests(tmp_path):
    result = run_manage("shell", "-v", "0", "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)",
                        POOLWEB_DATA_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['localhost', '127.0.0.1', '[::1]']"
