"""The comments the bridge writes where ``squeue`` shows them, on a thread of their own
(decision 148): each poll hands over what its plan wants written, and goes on::

    comments = Comments(slurm)
    comments.want({"12": "poolweb: #3 in line for h100: ...", "13": "poolweb: granted on pool h100"})
    comments.written_at()          # job → when its comment was last written: the plan's Memory.commented

A waiting job's text is its own ``scontrol update`` (its place differs from every other's), so a
burst of waiting jobs is hundreds of calls, each a process and an RPC, seconds long while
slurmctld launches a wave: written inside the poll, they held up the next poll's grants and
releases. Here the latest plan wins: what was not written when the next poll's plan arrives is
replaced by it, so a job granted meanwhile is not written as waiting, and a text is never written
twice for one plan. While a poll acts on Slurm (``paused``) no new call starts, and while the queue
moves (``moving``: a poll granted, released, took back or registered in the last
``QUIET_SECONDS``) none starts either, the places changing anyway, but for one call every
``comment_seconds``, so a queue that never rests still sees its comments.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime

from poolweb_slurm.slurm import Slurm, SlurmError

log = logging.getLogger("poolweb_slurm")

TEXTS_A_CALL = 4  # distinct texts per set_comments: its 4 workers, one round (decision 129)
QUIET_SECONDS = 1.0  # after a poll that moved the queue, before comments are written again


class Comments:
    def __init__(self, slurm: Slurm, clock: Callable[[], datetime], *, every: float = 0.0) -> None:
        """``every``: while the queue moves, one call at least this often (``comment_seconds``)."""
        self.slurm, self.clock, self.every = slurm, clock, every
        self.quiet_from = 0.0  # time.monotonic() from which the queue counts as resting
        self.last_call = 0.0
        self.wanted: dict[str, str] = {}  # job → text, in the plan's order: not written yet
        self.writing: dict[str, str] = {}  # the call under way
        self.written: dict[str, datetime] = {}  # job → when its comment was last written
        self.pauses = 0
        self.stopped = False
        self.broken: BaseException | None = None  # a bug on the thread: the loop raises it
        self.changed = threading.Condition()
        self.thread: threading.Thread | None = None

    def want(self, comments: Mapping[str, str]) -> None:
        """What the latest plan wants written, replacing what the last one wanted and is not
        written yet; the thread starts with the first."""
        with self.changed:
            self.wanted = {job: text for job, text in comments.items() if self.writing.get(job) != text}
            if self.thread is None and self.wanted:
                self.thread = threading.Thread(target=self.run, name="poolweb-slurm comments", daemon=True)
                self.thread.start()
            self.changed.notify_all()

    def write(self, comments: Mapping[str, str]) -> None:
        """Now, on the caller's thread: the registration thread's refusals, which no plan repeats."""
        self.record(comments, self.attempt(comments))

    def written_at(self) -> dict[str, datetime]:
        with self.changed:
            return dict(self.written)

    def forget(self, jobs: set[str]) -> None:
        """Jobs squeue no longer shows."""
        with self.changed:
            self.written = {job: at for job, at in self.written.items() if job in jobs}

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        with self.changed:
            self.pauses += 1
        try:
            yield
        finally:
            with self.changed:
                self.pauses -= 1
                self.changed.notify_all()

    def moving(self) -> None:
        """A poll moved the queue: comments wait until it rests (``QUIET_SECONDS``)."""
        with self.changed:
            self.quiet_from = time.monotonic() + QUIET_SECONDS

    def settled(self, timeout: float) -> bool:
        """Whether everything wanted was written (or failed) within ``timeout`` seconds."""
        with self.changed:
            return self.changed.wait_for(lambda: not self.wanted and not self.writing, timeout)

    def stop(self, timeout: float) -> None:
        with self.changed:
            self.stopped = True
            self.changed.notify_all()
        if self.thread is not None:
            self.thread.join(timeout)

    # --- the thread -----------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while True:
                with self.changed:
                    while not self.stopped and not (self.wanted and not self.pauses and self.resting()):
                        self.changed.wait(timeout=0.1 if self.wanted else None)
                    if self.stopped:
                        return
                    self.writing, self.last_call = self.next_call(), time.monotonic()
                failed = self.attempt(self.writing)
                with self.changed:
                    self.record(self.writing, failed)
                    self.writing = {}
                    self.changed.notify_all()
        except BaseException as bug:  # Bridge.run raises it: a bug ends the process loudly
            self.broken = bug

    def resting(self) -> bool:
        now = time.monotonic()
        return now >= self.quiet_from or now - self.last_call >= self.every

    def next_call(self) -> dict[str, str]:
        """The first ``TEXTS_A_CALL`` texts wanted, with every job wanting each: taken out of ``wanted``."""
        texts: list[str] = []
        for text in self.wanted.values():
            if text not in texts:
                texts.append(text)
                if len(texts) == TEXTS_A_CALL:
                    break
        call = {job: text for job, text in self.wanted.items() if text in texts}
        self.wanted = {job: text for job, text in self.wanted.items() if job not in call}
        return call

    def attempt(self, comments: Mapping[str, str]) -> set[str]:
        """Writes them; the jobs it failed for, logged."""
        if not comments:
            return set()
        try:
            self.slurm.set_comments(comments)
        except SlurmError as failure:
            failed = set(comments) if "*" in failure.failures else set(failure.failures)
            log.warning("comments not written for %s: %s", ", ".join(sorted(failed)), failure)
            return failed
        return set()

    def record(self, comments: Iterable[str], failed: set[str]) -> None:
        now = self.clock()
        with self.changed:  # a Condition's lock is re-entrant: the thread records under it
            self.written.update({job: now for job in comments if job not in failed})
