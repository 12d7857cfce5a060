"""The cyclic garbage collector paused while a pass runs: the engine's one process-wide speed trick.

A pass allocates ~10^5 short-lived objects and makes no reference cycles, so the collector would
only rescan them, again and again as they pile up. Measured on bench/engine.py (CPU time, median):
scenario B (100,000 pending) takes ~850 ms paused and ~1,200 ms with the collector running;
scenario A (10,000) is too small to tell. Reference counting still frees everything as it goes.

The collector is switched for the whole process, so pauses are counted: it stays off while any
pause is active, in any thread, and is switched back on, if it was on before the first, when the
last one ends.

>>> import gc
>>> gc.enable()
>>> with collector_paused():
...     with collector_paused():   # nested, or in another thread
...         pass
...     gc.isenabled()             # the outer pause is still active
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pauses:
    """How many pauses are active, and whether the collector was on before the first of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.resume = False


_PAUSES = _Pauses()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block; re-entrant and safe across threads."""
    with _PAUSES.lock:
        if _PAUSES.active == 0:
            _PAUSES.resume = gc.isenabled()
            gc.disable()
        _PAUSES.active += 1
    try:
        yield
    finally:
        with _PAUSES.lock:
            _PAUSES.active -= 1
            if _PAUSES.active == 0 and _PAUSES.resume:
                gc.enable()
