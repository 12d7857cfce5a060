"""Browser tests: the real console in headless Chromium (Debian's, at /usr/bin/chromium), driven
by Playwright's sync API, against the web server ``serve`` runs (tests/live_server.py) on the
tests' database — HTTP, static files and the /ws/events/ stream, as ``make run`` serves them
(decisions 45, 108).

One browser and one server for the package; each test gets a fresh browser context
(cookies, storage) and a flushed database (``transactional_db``: the server must see what the
test commits). Users sign in by a session made here and handed to the browser as its cookie;
test_sign_in.py signs in through the form.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from poolweb.services.demo import DEMO_GROUPS, demo_provision
from tests.poolweb import processes

# Playwright's sync API runs an event loop in this thread; Django's ORM would refuse to run
# beside it. Tests only call the ORM between browser steps, never concurrently with them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 800}
SCREENSHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"


# One browser and one server for the package, torn down when its last test is done: Playwright's
# sync API keeps an event loop in this thread while it runs, which Channels' tests after these
# would trip over (pytest-django runs the transactional tests together, these among them).
@pytest.fixture(scope="package")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium; .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="package")
def server(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The web server as ``serve`` runs it, on the tests' database; passes run in it right after
    each change (inline), so a provision or a switch takes effect as it would with the worker. Its
    log, server.log in server0/ of the session's temporary directory, says why a test failed oddly."""
    with processes.live_server(tmp_path_factory.mktemp("server"), web_only=True, POOLWEB_PASSES="inline",
                               POOLWEB_EVENT_POLL_MS="20") as running:
        yield running.url


@pytest.fixture(autouse=True)
def passes_inline(settings):
    """What the tests change themselves (a provision, an event) runs its pass here, at once."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "inline"}


def item_names(ordered_list) -> list[str]:
    """The accessible names of an ordered list's items, in order, as they are now."""
    return ordered_list.get_by_role("listitem").evaluate_all("items => items.map(i => i.getAttribute('aria-label'))")


def expect_items(ordered_list, names: list[str], timeout: float = 10.0) -> None:
    """Wait until the list's items are ``names`` in this order (a re-render may be on its way)."""
    deadline = time.monotonic() + timeout
    while (found := item_names(ordered_list)) != names and time.monotonic() < deadline:
        time.sleep(0.05)
    assert found == names


@pytest.fixture
def alice(transactional_db) -> User:
    return User.objects.create_user("alice", "alice@example.com", is_staff=True, is_superuser=True)


@pytest.fixture
def bob(transactional_db) -> User:
    user = User.objects.create_user("bob", "bob@example.com")
    user.groups.add(Group.objects.get_or_create(name="dev")[0])
    return user


@pytest.fixture
def demo(alice):
    """The demo configuration of ``make run``, provisioned as version 1 by alice."""
    for name in DEMO_GROUPS:
        Group.objects.get_or_create(name=name)
    return demo_provision(author=alice)


@pytest.fixture
def visit(browser, server):
    """``visit(user, path)``: a page signed in as ``user`` (a new browser context each time)."""
    contexts = []
    errors: list[str] = []

    def open_page(user: User, path: str = "/"):
        client = Client()
        client.force_login(user)
        context = browser.new_context(viewport=VIEWPORT, base_url=server)
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                              "url": server}])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda error: errors.append(f"{page.url}: {error}"))
        # What the pages' Content-Security-Policy refused (an inline script, a style element …).
        page.on("console", lambda message: errors.append(f"{page.url}: {message.text}")
                if "Content Security Policy" in message.text else None)
        page.goto(path)
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == [], "the pages raised JavaScript errors or broke their Content-Security-Policy"


def screenshot(page, name: str) -> None:
    """docs/screenshots/<name>.png, the whole page as a person sees it at 1280×800."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # A window as tall as the page rather than a full-page capture, which draws the sticky header
    # and toolbar where the page happens to be scrolled.
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], height)})
    page.wait_for_timeout(300)  # the lines are redrawn on the next animation frame
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), animations="disabled")  # a live mark ends at once
    page.set_viewport_size(VIEWPORT)
