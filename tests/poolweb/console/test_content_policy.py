"""Every page carries a Content-Security-Policy that lets only this origin's own scripts run
(poolweb/content_policy.py), the templates give it nothing inline to refuse, and static files are
served with ``nosniff`` (poolweb.asgi.StaticFiles). What Chromium makes of the policy on each page:
tests/browser/test_content_policy.py."""

from __future__ import annotations

import re

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.test import Client

from poolweb.asgi import application
from tests.poolweb.conftest import signed_in

pytestmark = pytest.mark.django_db

TEMPLATES = settings.BASE_DIR / "templates"


def policy_of(response) -> dict[str, list[str]]:
    directives = (part.split() for part in response["Content-Security-Policy"].split(";"))
    return {name: sources for name, *sources in directives}


@pytest.mark.parametrize("path", ["/", "/queues/", "/versions/", "/nothing/", "/admin/auth/user/"])
def test_console_and_admin_pages_run_only_this_origin_s_scripts_and_stylesheets(provisioned, alice, path):
    policy = policy_of(signed_in(alice).get(path))

    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["base-uri"] == ["'none'"]


def test_the_sign_in_page_has_the_policy_too():
    assert policy_of(Client().get("/accounts/login/"))["script-src"] == ["'self'"]


def test_the_api_docs_run_no_inline_script():
    response = Client().get("/api/docs/")

    assert policy_of(response)["script-src"] == ["'self'"]
    scripts = re.findall(r"<script\b[^>]*>", response.content.decode())
    assert scripts and all(" src=" in tag for tag in scripts), scripts


@pytest.mark.parametrize("template", sorted(TEMPLATES.rglob("*.html")), ids=lambda path: path.name)
def test_no_template_has_an_inline_script_style_element_or_event_handler(template):
    html = template.read_text()

    for tag in re.findall(r"<script\b[^>]*>", html):
        assert " src=" in tag or 'type="application/json"' in tag, tag  # data, which no policy runs
    assert not re.search(r"<style\b|\son[a-z]+\s*=|javascript:", html)


async def fetch(path: str) -> dict[bytes, bytes]:
    """The response's headers, as ``manage.py serve`` sends them (poolweb.asgi.application)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 5000), "server": ("testserver", 80)}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(5)
    assert start["status"] == 200
    while (await communicator.receive_output(5)).get("more_body"):
        pass
    await communicator.wait(5)
    return dict(start["headers"])


@pytest.mark.parametrize("path", ["/static/console/console.css", "/static/console/shell.js"])
def test_static_files_are_served_with_nosniff(path):
    assert async_to_sync(fetch)(path)[b"X-Content-Type-Options"] == b"nosniff"
