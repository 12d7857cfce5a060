"""GET /usage: the figures of histories.the_day, computed by hand (key-hours, gpu first)."""

from __future__ import annotations

import csv
import io

import pytest

from tests.poolweb.conftest import client_for

from .histories import SINCE, UNTIL, the_day

pytestmark = pytest.mark.django_db

H = 3_600_000  # one unit held for an hour, in milli-units × seconds


@pytest.fixture
def day(alice, bob):
    return the_day(alice, bob)


def report(user, **params):
    response = client_for(user).get("/api/v1/usage", {"since": SINCE, "until": UNTIL, **params})
    assert response.status_code == 200, response.content
    return response.json()


def figures(data: dict, key: str = "gpu") -> dict:
    """group → (used, in share, borrowed) in key-hours, exact."""
    return {row[data["by"]]: tuple(row["exact"][m] / H for m in ("used", "in_share", "borrowed"))
            for row in data["rows"] if row["key"] == key}


def test_by_policy_a_preempted_and_regranted_request_borrows_above_the_reservation_as_it_changes(day, alice):
    data = report(alice, by="policy")

    assert figures(data) == {"dev": (37, 27, 10), "research": (1, 1, 0)}
    assert data["rows"][0] == {"policy": "dev", "key": "gpu", "used": "37.000", "in_share": "27.000",
                               "borrowed": "10.000", "exact": {"used": 37 * H, "in_share": 27 * H,
                                                               "borrowed": 10 * H}}


def test_unmetered_keys_are_used_but_neither_in_share_nor_borrowed(day, alice):
    assert figures(report(alice, by="policy"), "step_run") == {"dev": (14, 0, 0), "research": (2, 0, 0)}


def test_each_reservation_left_idle_follows_the_version_live_at_each_instant(day, alice):
    data = report(alice)

    assert [(r["policy"], r["scope"], r["key"], r["exact"]["reserved"] / H, r["exact"]["idle"] / H)
            for r in data["reservations"]] == [("dev", "*", "gpu", 30, 3), ("research", "*", "gpu", 40, 39)]


@pytest.mark.parametrize("by,expected", [
    ("pool", {"h100": (29, 25, 4), "a100": (9, 3, 6)}),
    ("profile", {"4xgpu": (18, 10, 8), "job": (19, 17, 2), "half": (1, 1, 0)}),
    ("user", {"bob": (22, 14, 8), "alice": (16, 14, 2)}),
])
def test_the_other_groupings_split_the_same_hours(day, alice, by, expected):
    assert figures(report(alice, by=by)) == expected


def test_a_member_sees_by_name_only_their_own_and_their_teams_usage(day, bob, carol):
    assert figures(report(bob, by="user")) == {"bob": (22, 14, 8), "alice": (15, 13, 2), None: (1, 1, 0)}
    assert figures(report(carol, by="user")) == {None: (38, 28, 10)}
    assert figures(report(carol, by="policy")) == {"dev": (37, 27, 10), "research": (1, 1, 0)}


def test_the_period_cuts_intervals_at_both_ends(day, alice):
    data = report(alice, since="2026-11-01T02:00:00Z", until="2026-11-01T03:00:00Z")

    # R1 4 gpu 02:00–03:00 (in share), R3 2 gpu 02:30–03:00 (borrowed); dev reserved 4.
    assert figures(data) == {"dev": (5, 4, 1)}


def test_the_chart_gives_gpu_hours_per_hour_of_each_policy(day, alice):
    chart = report(alice)["chart"]

    assert chart["step_seconds"] == 3600 and len(chart["buckets"]) == 10
    assert chart["series"]["dev"] == ["2.000", "6.000", "5.000", "4.000", "6.000", "6.000", "2.000", "2.000",
                                      "2.000", "2.000"]
    assert chart["series"]["research"] == ["0.000"] * 8 + ["0.500", "0.500"]


def test_csv_by_accept_header_or_format_parameter(day, alice):
    by_header = client_for(alice).get("/api/v1/usage", {"since": SINCE, "until": UNTIL, "by": "pool"},
                                      HTTP_ACCEPT="text/csv")
    by_parameter = client_for(alice).get("/api/v1/usage", {"since": SINCE, "until": UNTIL, "by": "pool",
                                                           "format": "csv"})

    assert by_header["Content-Type"].startswith("text/csv")
    assert by_header.content == by_parameter.content
    assert list(csv.reader(io.StringIO(by_header.content.decode()))) == [
        ["pool", "key", "used_hours", "in_share_hours", "borrowed_hours", "used_milli_unit_seconds",
         "in_share_milli_unit_seconds", "borrowed_milli_unit_seconds"],
        ["a100", "gpu", "9.000", "3.000", "6.000", str(9 * H), str(3 * H), str(6 * H)],
        ["h100", "gpu", "29.000", "25.000", "4.000", str(29 * H), str(25 * H), str(4 * H)],
        ["a100", "step_run", "4.000", "0.000", "0.000", str(4 * H), "0", "0"],
        ["h100", "step_run", "12.000", "0.000", "0.000", str(12 * H), "0", "0"],
    ]


@pytest.mark.parametrize("params,field", [
    ({"since": "yesterday"}, "since"),
    ({"until": "2026-13-01"}, "until"),
    ({"since": "2026-11-02", "until": "2026-11-01"}, "until"),
    ({"since": "2025-01-01", "until": "2026-11-01"}, "since"),
    ({"by": "team"}, "by"),
    ({"format": "xml"}, "format"),
    ({"since": "x" * 5000}, "since"),
])
def test_bad_input_is_a_400_naming_the_field(alice, params, field):
    response = client_for(alice).get("/api/v1/usage", params)

    assert response.status_code == 400, response.content
    assert [error["path"] for error in response.json()["errors"]] == [field]


def test_an_error_is_json_even_when_csv_was_asked_for(alice):
    response = client_for(alice).get("/api/v1/usage", {"by": "team", "format": "csv"})

    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert response.json()["errors"][0]["path"] == "by"


def test_anonymous_callers_are_refused(day):
    assert client_for(None).get("/api/v1/usage").status_code == 401


def test_closed_days_are_kept_and_read_back_even_after_their_requests_are_forgotten(day, alice, bob):
    from poolweb.models import Request, UsageDay

    two_days = {"since": "2026-10-31", "until": "2026-11-02"}
    # R2 adds 23:00-24:00 of the 31st; R3 runs on alone, in share, to the end of the 1st; R4 to 12:00.
    expected = {"dev": (67, 57, 10), "research": (2, 2, 0)}
    assert figures(report(alice, **two_days)) == expected
    kept = {str(d) for d in UsageDay.objects.values_list("day", flat=True)}
    assert {"2026-10-31", "2026-11-01"} <= kept and "2026-11-02" not in kept  # the 2nd is not in the period

    Request.objects.filter(pk=day["R1"].pk).delete()  # forgotten (decision 25), its history with it

    assert figures(report(alice, **two_days)) == expected
    assert figures(report(bob, by="user", **two_days)) == {"bob": (22 + 2, 14 + 2, 8), "alice": (15 + 28, 13 + 28, 2),
                                                            None: (2, 2, 0)}
    # Cut inside the 31st: that part is computed from the history (R2's last half hour, 1 gpu-hour),
    # the 1st is read back whole, R1 included.
    assert figures(report(alice, since="2026-10-31T23:30:00Z", until="2026-11-02")) == {
        "dev": (66, 56, 10), "research": (2, 2, 0)}


def test_the_periodic_task_keeps_the_closed_days_before_it_forgets_their_requests(day, alice, settings):
    from datetime import datetime, timezone as tz
    from unittest import mock

    from poolweb.models import Request, UsageDay
    from poolweb.services import triggers

    settings.POOLWEB = {**settings.POOLWEB, "REQUESTS_KEPT_DAYS": 2}
    with mock.patch.object(triggers.timezone, "now", return_value=datetime(2026, 11, 3, 6, 30, tzinfo=tz.utc)):
        triggers.forget_old()  # keeps the 31st, the 1st and the 2nd, then forgets what finished before 06:30 on the 1st

    assert {"2026-10-31", "2026-11-01", "2026-11-02"} <= {str(d) for d in UsageDay.objects.values_list("day", flat=True)}
    assert list(Request.objects.values_list("pk", flat=True).order_by("pk")) == [day["R3"].pk, day["R4"].pk]
    # The 1st as the day test computed it: R3 to its end (14 more hours in share), R4 to 12:00.
    assert figures(report(alice, since="2026-11-01", until="2026-11-02")) == {"dev": (65, 55, 10), "research": (2, 2, 0)}
