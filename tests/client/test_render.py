"""Tables, colour and the progress line: what a person reads (the client issue, item 2)."""

from __future__ import annotations

import io
import os
import shutil

import pytest

from poolctl.models import Request
from poolctl.render import Cell, Progress, colour_wanted, duration, quantities, state_cell, table, waiting_line


def test_a_table_pads_columns_to_the_widest_cell_and_aligns_numbers_right():
    text = table(["id", "queue", "state"], [[Cell("7", right=True), "dev/half", "pending"],
                                             [Cell("123", right=True), "research/8xgpu", "allocated"]])
    assert text.splitlines() == [
        "ID   QUEUE           STATE",
        "  7  dev/half        pending",
        "123  research/8xgpu  allocated",
    ]


def test_the_last_column_is_cut_to_the_terminal_width():
    text = table(["id", "why"], [["1", "pool h100 is short of 2 gpu (6 of 8 in use)"]], width=20)
    assert max(len(line) for line in text.splitlines()) <= 20
    assert text.splitlines()[1].endswith("…")


def test_colour_is_added_after_padding_and_only_when_asked():
    plain = table(["state", "pool"], [[state_cell("allocated"), "h100"]])
    coloured = table(["state", "pool"], [[state_cell("allocated"), "h100"]], colour=True)
    assert "\033" not in plain
    assert coloured.splitlines()[1] == "\033[32mallocated\033[0m  h100"
    assert plain.splitlines()[1] == "allocated  h100"


def test_a_pending_request_reads_as_queued():
    assert state_cell("pending").text == "queued"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_colour_when_no_color_is_set_or_the_output_is_not_a_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour_wanted(FakeTerminal())
    assert not colour_wanted(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_wanted(FakeTerminal())


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (59.9, "59s"), (80, "1m20s"), (3600 * 2 + 180, "2h03m")])
def test_durations_read_as_people_write_them(seconds, text):
    assert duration(seconds) == text


def test_quantities_leave_out_step_run_and_whole_floats_print_as_integers():
    assert quantities({"step_run": 1, "gpu": 2.0, "mcpu": 500}) == "gpu 2, mcpu 500"
    assert quantities({"gpu": 0.143}) == "gpu 0.143"


def waiting(**fields) -> Request:
    return Request(**{"id": 17, "state": "pending", "reason": "WaitingForCapacity",
                      "message": "pool h100 is short of 2 gpu (6 of 8 in use)", "position": 3, **fields})


def test_the_waiting_line_shows_state_position_reason_and_time_waited():
    assert waiting_line(waiting(), 80) == ("request 17 queued · position 3 · WaitingForCapacity: pool h100 is short "
                                           "of 2 gpu (6 of 8 in use) · 1m20s")
    assert "attempt 2" in waiting_line(waiting(attempt=2), 0)


def test_off_a_terminal_the_progress_prints_a_line_per_change_and_no_carriage_returns():
    stream = io.StringIO()
    progress = Progress(stream, animate=False)
    for second in range(5):
        progress.show(waiting(), second)
    progress.show(waiting(position=2), 5)
    progress.clear()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in stream.getvalue()
    assert "position 2" in lines[1]


def test_on_a_terminal_the_progress_line_rewrites_itself():
    stream = FakeTerminal()
    progress = Progress(stream, animate=True)
    progress.show(waiting(), 1)
    progress.show(waiting(), 2)
    progress.clear()
    assert stream.getvalue().count("\r\033[2K") == 3 and "\n" not in stream.getvalue()


TROUBLE = "cannot reach the Poolweb server at http://127.0.0.1:8000 (connection refused)"


def live_line(monkeypatch, columns: int, **fields) -> str:
    """What the progress line shows on a terminal ``columns`` wide."""
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *args: os.terminal_size((columns, 24)))
    stream = FakeTerminal()
    Progress(stream, animate=True).show(waiting(**fields), 80, trouble=TROUBLE)
    return stream.getvalue().removeprefix("\r\033[2K")


def words(text: str) -> set[str]:
    return {word.strip("…:·()") for word in text.split()}


@pytest.mark.parametrize("columns", [200, 100, 80, 60, 45, 30, 20, 8])
def test_the_live_line_fits_the_terminal_and_keeps_the_time_waited_and_whole_numbers(monkeypatch, columns):
    full = waiting_line(waiting(attempt=2), 80, TROUBLE)
    line = live_line(monkeypatch, columns, attempt=2)
    assert len(line) < columns and line.endswith(" 1m20s") or line == "1m20s"
    assert {word for word in words(line) if any(c.isdigit() for c in word)} <= words(full)  # none cut


def test_the_least_useful_parts_give_way_first_and_what_fits_again_comes_back(monkeypatch):
    assert live_line(monkeypatch, 101) == ("request 17 queued · position 3 · WaitingForCapacity · retrying: cannot "
                                           "reach the Poolweb… · 1m20s")
    assert live_line(monkeypatch, 61) == "request 17 queued · position 3 · retrying: cannot… · 1m20s"
    assert live_line(monkeypatch, 51) == "request 17 queued · position 3 · retrying · 1m20s"
    assert live_line(monkeypatch, 41) == "17 queued · pos 3 · retrying · 1m20s"
    assert live_line(monkeypatch, 21) == "position 3 · 1m20s"


def test_r54_the_waiting_line_says_when_it_starts_and_on_what():
    from datetime import date, datetime, timezone

    from poolctl.render import starts_text

    eta = datetime(2026, 12, 4, 14, 20, tzinfo=timezone.utc)
    request = waiting(eta=eta, eta_basis="run_limits", eta_confidence="high")
    local = eta.astimezone()
    assert starts_text(request, today=local.date()) == f"starts ≈ {local:%H:%M} (run limits, high)"
    assert starts_text(request, today=date(2020, 1, 1)) == f"starts ≈ {local:%Y-%m-%d %H:%M} (run limits, high)"
    assert starts_text(waiting(eta_basis="unknown", eta_confidence="none")) == "start unknown"
    assert starts_text(waiting()) == ""  # not judged yet, or an older server
    assert starts_text(waiting(state="allocated", eta=eta, eta_basis="mixed")) == ""
    assert "starts ≈" in waiting_line(request, 80) and "(run limits, high)" in waiting_line(request, 80)
    assert "(run limits" not in waiting_line(request, 80, width=60)  # the basis gives way before the time
