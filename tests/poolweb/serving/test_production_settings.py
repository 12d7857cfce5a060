"""A deployment's settings (README, "Running in production"): Django's deploy checks pass with
the environment the README names, and a weak secret key stops every command outside development."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from django.conf import settings

README = settings.BASE_DIR / "README.md"


def production_environment() -> dict[str, str]:
    """The variables of the README's "Running in production" section, as it writes them."""
    section = README.read_text().split("## Running in production", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^(POOLWEB_\w+)=(\S+)", section, re.MULTILINE))


def manage(tmp_path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   # the browser tests' conftest sets DJANGO_ALLOW_ASYNC_UNSAFE in this process (for
                   # Playwright's loop); no deployment does
                   if key not in ("DATABASE_URL", "POOLWEB_SECRET_KEY", "POOLWEB_DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    environment.update(DJANGO_SETTINGS_MODULE="poolweb.settings", POOLWEB_DATA_DIR=str(tmp_path), **variables)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR, env=environment,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)


def test_the_deploy_checks_pass_with_the_production_settings_the_readme_names(tmp_path):
    production = production_environment()
    assert {"POOLWEB_SECURE_COOKIES", "POOLWEB_HSTS_SECONDS", "POOLWEB_PROXY_TLS_HEADER"} <= set(production)

    result = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **production)

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_the_proxy_s_header_says_which_requests_came_over_tls(tmp_path):
    result = manage(tmp_path, "shell", "-v", "0", "-c",
                    "from django.conf import settings as s; print(s.SECURE_PROXY_SSL_HEADER, s.SESSION_COOKIE_SECURE)",
                    **production_environment())

    assert result.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https') True", result.stderr


def test_a_header_name_that_is_not_one_stops_every_command(tmp_path):
    result = manage(tmp_path, "check", POOLWEB_PROXY_TLS_HEADER="X-Forwarded-Proto: https")

    assert result.returncode != 0 and "POOLWEB_PROXY_TLS_HEADER" in result.stderr


@pytest.mark.parametrize("key", ["x", "ab" * 40, "django-insecure-" + "abcdefghij" * 5])
def test_a_weak_secret_key_stops_every_command_outside_development(tmp_path, key):
    refused = manage(tmp_path, "check", POOLWEB_SECRET_KEY=key)
    developing = manage(tmp_path, "check", POOLWEB_SECRET_KEY=key, POOLWEB_DEBUG="on")

    assert refused.returncode != 0 and "POOLWEB_SECRET_KEY is too weak" in refused.stderr
    assert developing.returncode == 0, developing.stderr

