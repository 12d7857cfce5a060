"""The cyclic garbage collector paused while a pass runs: a process-wide speed trick, so it is the
host's to switch (the service that runs a pass, ``services.reconciler``), not the engine's: the
engine is pure and leaves the process as it found it (decision 114).

A pass allocates ~10^5 short-lived objects and makes no reference cycles, so the collector would
only rescan them, again and again as they pile up. Measured on bench/engine.py's scenarios (CPU
time, medians of two runs on a shared machine): B, 100,000 pending, takes 0.85-0.98 s paused and
1.2-1.44 s with the collector running, a third more; A, 10,000 pending, a few per cent more.
Reference counting still frees everything as it goes.

The collector is switched for the whole process, so pauses are counted: it stays off while any
pause is active, in any thread, and is switched back on, if it was on before the first, when the
last one ends (tests/poolweb/passes/test_collector_paused.py).
"""

from __future__ import annotations

import gc
import threading


class _Pause:
    """The process's one pause: how many blocks are inside it, and whether the collector was on
    before the first of them. A class rather than a generator, so that leaving the last block
    makes no object after switching the collector back on: the collection owed for the pass
    runs at the caller's next allocation, as it did before the pause had its own module."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._active == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._active += 1

    def __exit__(self, *exception: object) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._resume:
                gc.enable()


_PAUSE = _Pause()


def collector_paused() -> _Pause:
    """No cyclic garbage collection inside the block; re-entrant and safe across threads."""
    return _PAUSE
