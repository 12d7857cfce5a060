"""What people read: tables, states in colour, durations, quantities and the live progress line.

Colour only on a terminal, never with ``NO_COLOR`` set (https://no-color.org) or ``TERM=dumb``.
The progress line rewrites itself in place only when both stdout and stderr are terminals;
otherwise it prints a plain line each time the state, reason or place changes, so a log shows
the history instead of carriage returns.

Every text the server supplies goes through ``printable`` before it is printed (table cells, the
lines built here and in the commands, messages, JSON): a name or a reason is shown, never obeyed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TextIO

from poolctl.models import STEP_RUN, Request

STATE_COLOURS = {"pending": "33", "allocated": "32", "preempting": "35", "released": "2",
                 "preempted": "31", "rejected": "31", "cancelled": "2", "expired": "31"}
QUEUED = {"pending": "queued"}  # the spec's word for people (§2)
# What a terminal acts on instead of showing: C0 and C1 controls (ESC, CSI, OSC: a window title, a
# cleared screen, a clipboard write), DEL, and the bidirectional embeddings, overrides and isolates
# that reorder a line. The server refuses them in configuration text now (docs/api.md §1), but a
# version stored before, or any other text of a server, may hold them.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, multiline: bool = False) -> str:
    r"""Server text made safe to print: each control character written as a ``\uXXXX`` escape
    (valid inside a JSON string too); a newline is kept only in a text of several lines.

    >>> printable("dev\x1b]0;title\x07 \u202eexe")
    'dev\\u001b]0;title\\u0007 \\u202eexe'
    """
    def escape(found: re.Match[str]) -> str:
        char = found.group()
        return char if multiline and char == "\n" else f"\\u{ord(char):04x}"

    return _CONTROL.sub(escape, text)


def json_text(document: object) -> str:
    """The JSON document as printed: indented, non-ASCII kept, and safe on a terminal (json escapes
    C0 controls itself; C1, DEL and bidirectional controls it writes raw)."""
    return printable(json.dumps(document, indent=2, ensure_ascii=False), multiline=True)


def colour_wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, and an ANSI style applied after padding (so widths stay right)."""

    text: str
    style: str = ""
    right: bool = False


def state_word(state: str) -> str:
    return QUEUED.get(state, state)


def state_cell(state: str) -> Cell:
    return Cell(state_word(state), STATE_COLOURS.get(state, ""))


def number_cell(value: object) -> Cell:
    return Cell("" if value is None else quantity(value), right=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell | str]], *, colour: bool = False,
          width: int | None = None) -> str:
    """Columns padded to their widest cell; the last column cut to ``width`` when given."""
    cells = [[Cell(printable(cell.text), cell.style, cell.right) if isinstance(cell, Cell)
              else Cell(printable(str(cell))) for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell.text))
    if width is not None and cells:
        widths[-1] = max(len(headers[-1]), min(widths[-1], width - sum(widths[:-1]) - 2 * (len(widths) - 1)))
    lines = ["  ".join(header.upper().ljust(w) for header, w in zip(headers, widths)).rstrip()]
    for row in cells:
        lines.append("  ".join(_pad(cell, w, colour) for cell, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _pad(cell: Cell, width: int, colour: bool) -> str:
    text = cell.text if len(cell.text) <= width else cell.text[:max(0, width - 1)] + "…"
    padded = text.rjust(width) if cell.right else text.ljust(width)
    return f"\033[{cell.style}m{padded}\033[0m" if colour and cell.style else padded


def terminal_width(stream: TextIO) -> int | None:
    """The terminal's width when ``stream`` is one (long sentences are cut there); None in a pipe."""
    return shutil.get_terminal_size().columns if hasattr(stream, "isatty") and stream.isatty() else None


def quantity(value: object) -> str:
    """2 → "2", 0.5 → "0.5", 2.0 → "2": the way the spec writes quantities."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def quantities(values: dict[str, float]) -> str:
    """{"gpu": 4, "step_run": 1} → "gpu 4": step_run is on every request, so it says nothing."""
    return ", ".join(f"{key} {quantity(amount)}" for key, amount in sorted(values.items()) if key != STEP_RUN)


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def local_time(value: datetime | None) -> str:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S") if value else ""


BASIS_WORDS = {"run_limits": "run limits", "observed_runtimes": "observed run times",
               "mixed": "run limits and observed run times"}


def starts_text(request: Request, today: date | None = None, short: bool = False) -> str:
    """When a pending request is estimated to start (R-54), in local time: "starts ≈ 14:20 (run
    limits, high)", the date too when not ``today``; "start unknown" when the server cannot say;
    "" when it says nothing (not pending, not judged yet, an older server). ``short``: without
    the basis and confidence."""
    if request.state != "pending" or not request.eta_basis:
        return ""
    if request.eta is None:
        return "start unknown"
    at = request.eta.astimezone()
    when = at.strftime("%H:%M") if at.date() == (today or datetime.now().astimezone().date()) \
        else at.strftime("%Y-%m-%d %H:%M")
    if short:
        return f"starts ≈ {when}"
    return f"starts ≈ {when} ({BASIS_WORDS.get(request.eta_basis, request.eta_basis)}, {request.eta_confidence})"


# A part of a fitted line is its forms, longest first; each shorter form says how readily the
# line takes it (lower: sooner), and "" leaves the part out.
Form = tuple[str, int]
SEP = " · "
# What gives way, first to last, when the live line is wider than the terminal: the reason's
# sentence (a word at a time, from its end), the trouble's detail, the reason's code, the words
# "request" and "position" (their numbers stay), the attempt, "retrying", and at last all but the
# time waited, which never gives way.
SENTENCE, TROUBLE, REASON, LABELS, ATTEMPT, RETRYING, LAST = range(1, 8)


def fit(parts: Sequence[Sequence[Form]], width: int | None) -> str:
    """The parts joined by " · ", in at most ``width`` characters when it is given: while longer,
    the part whose next form is the most readily taken takes it (the earlier part on a tie); then,
    the last taken first, each step is given back if the line still fits (a reprieve: a short
    form of a part that gave way early may fit in what a later one left). Only whole forms are
    shown: a text is cut where its forms cut it, a number never."""
    chosen, taken = [0] * len(parts), []

    def line() -> str:
        return SEP.join(text for part, at in zip(parts, chosen) if (text := part[at][0]))

    while width is not None and len(line()) > width:
        steps = [(part[at + 1][1], index) for index, (part, at) in enumerate(zip(parts, chosen)) if at + 1 < len(part)]
        if not steps:
            break
        taken.append(min(steps)[1])
        chosen[taken[-1]] += 1
    for index in reversed(taken):
        chosen[index] -= 1
        if len(line()) > width:
            chosen[index] += 1
    return line()


def explained(head: str, text: str | None, readily: int) -> list[Form]:
    """``head: text``, then with fewer and fewer of text's words (ending in "…"), then ``head``."""
    if not text:
        return [(head, 0)]
    words = text.split(" ")
    cut = [(f"{head}: {' '.join(words[:n])}…", readily) for n in range(len(words) - 1, 0, -1)]
    return [(f"{head}: {text}", 0), *cut, (head, readily)]


def waiting_line(request: Request, waited: float, trouble: str | None = None, width: int | None = None) -> str:
    """request 17 queued · position 3 · WaitingForCapacity: pool h100 is short of 2 gpu · 1m20s

    Within ``width`` characters when given, its parts giving way in the order above."""
    parts: list[list[Form]] = [[(f"request {request.id} {state_word(request.state)}", 0),
                                (f"{request.id} {state_word(request.state)}", LABELS), ("", LAST)]]
    if request.attempt > 1:
        parts.append([(f"attempt {request.attempt}", 0), ("", ATTEMPT)])
    if request.position is not None:
        parts.append([(f"position {request.position}", 0), (f"pos {request.position}", LABELS), ("", LAST)])
    if starts := starts_text(request):
        parts.append([(starts, 0), (starts_text(request, short=True), SENTENCE), ("", REASON)])
    if request.reason:
        parts.append([*explained(printable(request.reason), request.message and printable(request.message), SENTENCE),
                      ("", REASON)])
    if trouble:
        parts.append([*explained("retrying", printable(trouble), TROUBLE), ("", RETRYING)])
    parts.append([(duration(waited), 0)])
    return fit(parts, width)


class Progress:
    """The one live line while waiting, on stderr."""

    def __init__(self, stream: TextIO | None = None, animate: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        if animate is None:
            animate = sys.stdout.isatty() and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.animate = animate
        self.shown = ""  # the last line written; plain mode writes a line only when it changes
        self.plain_key: tuple | None = None

    def show(self, request: Request, waited: float, trouble: str | None = None) -> None:
        if self.animate:  # short of the last column, where some terminals wrap at once
            line = waiting_line(request, waited, trouble, width=shutil.get_terminal_size().columns - 1)
            self.stream.write("\r\033[2K" + line)
            self.shown = line
        else:
            key = (request.state, request.reason, request.message, request.position, request.attempt, trouble)
            if key == self.plain_key:
                return
            self.plain_key = key
            self.stream.write(waiting_line(request, waited, trouble) + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """End the live line, so what follows starts on a clean line."""
        if self.animate and self.shown:
            self.stream.write("\r\033[2K")
            self.stream.flush()
        self.shown = ""
