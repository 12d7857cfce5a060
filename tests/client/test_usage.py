"""``poolctl usage`` against a live server: the hand-computed day of tests/poolweb/usage/histories.py
as a table, as the server's JSON and CSV, and a period the server refuses."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth.models import User

from poolctl import errors
from tests.poolweb.usage.histories import SINCE, UNTIL, the_day

pytestmark = pytest.mark.slow

PERIOD = ("--since", SINCE, "--until", UNTIL)


@pytest.fixture
def day(live):
    the_day(User.objects.get(username="alice"), User.objects.get(username="bob"))


def test_json_is_the_servers_report(poolctl, day, live):
    done = poolctl("--json", "usage", *PERIOD, token=live.alice)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [(r["policy"], r["key"], r["used"], r["in_share"], r["borrowed"]) for r in report["rows"]][:2] == [
        ("dev", "gpu", "37.000", "27.000", "10.000"), ("research", "gpu", "1.000", "1.000", "0.000")]


def test_the_table_shows_the_rows_then_each_reservation_left_idle(poolctl, day, live):
    done = poolctl("usage", *PERIOD, "--by", "pool", token=live.alice)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["POOL", "KEY", "USED", "IN", "SHARE", "BORROWED"]
    assert lines[2].split() == ["a100", "gpu", "9.000", "3.000", "6.000"]
    assert lines[3].split() == ["h100", "gpu", "29.000", "25.000", "4.000"]
    idle = lines[lines.index("") + 1:]
    assert idle[0].split() == ["POLICY", "SCOPE", "KEY", "RESERVED", "IDLE"]
    assert idle[1].split() == ["dev", "*", "gpu", "30.000", "3.000"]


def test_a_member_sees_others_outside_their_teams_as_one_row(poolctl, day, live):
    done = poolctl("usage", *PERIOD, "--by", "user", token=live.bob)

    rows = [line.split() for line in done.stdout.splitlines()[2:5]]
    assert rows == [["alice", "gpu", "15.000", "13.000", "2.000"], ["bob", "gpu", "22.000", "14.000", "8.000"],
                    ["(others)", "gpu", "1.000", "1.000", "0.000"]]


def test_csv_is_the_servers(poolctl, day, live):
    done = poolctl("usage", *PERIOD, "--by", "profile", "--csv", token=live.alice)

    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert rows[0][:5] == ["profile", "key", "used_hours", "in_share_hours", "borrowed_hours"]
    assert rows[1][:5] == ["4xgpu", "gpu", "18.000", "10.000", "8.000"]


def test_a_period_the_server_refuses_names_the_field(poolctl, live):
    done = poolctl("usage", "--since", "2026-11-02", "--until", "2026-11-01")

    assert done.returncode == errors.USAGE
    assert "until" in done.stderr
