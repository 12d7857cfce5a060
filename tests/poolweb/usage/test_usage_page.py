"""The usage page (/usage/): the chart's bars and figures and the table say what GET /usage says."""

from __future__ import annotations

import re

import pytest

from tests.poolweb.conftest import signed_in

from .histories import SINCE, UNTIL, the_day

pytestmark = pytest.mark.django_db


@pytest.fixture
def day(alice, bob):
    return the_day(alice, bob)


def test_the_page_charts_each_policys_gpu_hours_and_tabulates_them(day, alice):
    page = signed_in(alice).get("/usage/", {"since": SINCE, "until": UNTIL}).content.decode()

    bars = re.findall(r"<rect [^>]*><title>([^<]*)</title>", page)
    assert "dev: 6.000 GPU-hours, 2026-11-01 01:00" in bars and "research: 0.500 GPU-hours, 2026-11-01 09:00" in bars
    assert len(bars) == 10 + 2  # dev every hour, research in the last two
    assert re.search(r'<th scope="row">dev</th><td>gpu</td><td class="num">37.000</td><td class="num">27.000</td>'
                     r'<td class="num">10.000</td>', page)
    assert re.search(r'<th scope="row">dev</th><td>all pools</td><td>gpu</td><td class="num">30.000</td>'
                     r'<td class="num">3.000</td>', page)
    assert 'href="/api/v1/usage?since=2026-11-01T00%3A00%3A00Z&amp;until=2026-11-01T10%3A00%3A00Z&amp;by=policy&amp;format=csv"' in page


def test_a_bad_period_is_a_400_that_names_the_field(alice):
    response = signed_in(alice).get("/usage/", {"since": "2026-11-02", "until": "2026-11-01"})

    assert response.status_code == 400
    assert "<b>until</b>: until must be after since" in response.content.decode()


def test_by_user_a_member_sees_others_outside_their_teams_unnamed(day, carol):
    page = signed_in(carol).get("/usage/", {"since": SINCE, "until": UNTIL, "by": "user"}).content.decode()

    assert '<th scope="row"><i>others</i></th><td>gpu</td><td class="num">38.000</td>' in page
    assert "bob" not in page.split("<main")[1]
