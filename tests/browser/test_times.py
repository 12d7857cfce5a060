"""Times on every page: relative ("3 minutes ago", "in 4 minutes") with the exact time as the
title, in the server's words (the ``ago`` filter) and in times.js's alike, kept current."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from unittest import mock

import pytest
from playwright.sync_api import expect

from poolweb.console.templatetags import ago

NOW = datetime(2026, 3, 31, 12, 0, 0, tzinfo=timezone.utc)
SPANS = [timedelta(seconds=-30), timedelta(seconds=59), timedelta(seconds=61), timedelta(minutes=59, seconds=59),
         timedelta(hours=3, minutes=5), timedelta(days=1), timedelta(days=6, hours=23), timedelta(days=10),
         timedelta(days=40), timedelta(days=59), timedelta(days=400), timedelta(days=800), -timedelta(minutes=4, seconds=10),
         -timedelta(hours=2), -timedelta(days=3)]


@pytest.mark.parametrize("span", SPANS, ids=str)
def test_the_page_words_a_time_as_the_server_does(visit, alice, span):
    page = visit(alice, "/account/tokens/")
    moment = NOW - span
    with mock.patch("django.utils.timezone.now", return_value=NOW):
        expected = ago(moment)
    found = page.evaluate("([iso, now]) => import('/static/console/shared/times.js').then(m => m.relative(iso, new Date(now)))",
                          [moment.isoformat(), NOW.isoformat()])
    assert found == expected


def test_times_carry_the_exact_moment_and_stay_current(visit, alice):
    page = visit(alice, "/account/tokens/")
    moment = datetime.now(timezone.utc) - timedelta(minutes=3)
    page.evaluate("""([iso]) => import('/static/console/shared/times.js').then(m => {
        document.getElementById('main').append(m.timeElement(iso)); })""", [moment.isoformat()])
    shown = page.locator("main time").last
    expect(shown).to_have_text("3\u00a0minutes ago")
    expect(shown).to_have_attribute("title", moment.strftime("%Y-%m-%d %H:%M:%S UTC"))
    page.evaluate("""() => { const t = document.querySelector('main time:last-of-type');
        t.dateTime = new Date(Date.now() - 7200e3).toISOString(); }""")
    page.evaluate("() => import('/static/console/shared/times.js').then(m => m.refreshTimes())")
    expect(shown).to_have_text("2\u00a0hours ago")
