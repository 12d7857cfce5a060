"""collector_paused (poolweb.collector): the collector is off while any pause is active, in any
thread, and on again after the last one when it was on before the first."""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from poolweb.collector import collector_paused


@dataclass(frozen=True)
class Case:
    name: str
    enabled_before: bool
    steps: tuple[str, ...]  # "enter A", "leave B": a pause of thread A or B begins or ends
    expected: tuple[bool, ...]  # gc.isenabled() after each step


CASES = [
    Case("the first pause to end leaves the other's in place", True,
         ("enter A", "enter B", "leave A", "leave B"), (False, False, False, True)),
    Case("the last pause to begin may end first", True,
         ("enter A", "enter B", "leave B", "leave A"), (False, False, False, True)),
    Case("one thread pausing twice, inside another's pause", True,
         ("enter A", "enter B", "enter B", "leave B", "leave A", "leave B"),
         (False, False, False, False, False, True)),
    Case("pauses one after the other each end on", True,
         ("enter A", "leave A", "enter B", "leave B"), (False, True, False, True)),
    Case("a collector that was off stays off", False,
         ("enter A", "enter B", "leave A", "leave B"), (False, False, False, False)),
]


class Party:
    """A thread that enters and leaves pauses when told, one step at a time."""

    def __init__(self) -> None:
        self.orders: queue.Queue[str | None] = queue.Queue()
        self.done: queue.Queue[BaseException | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self._until_leave()

    def _until_leave(self) -> bool:
        """Follow orders up to a "leave" (True) or the end (False); each "enter" pauses around the
        orders up to its own "leave", and reports that step done only once the pause has ended."""
        while (order := self.orders.get()) == "enter":
            with collector_paused():
                self.done.put(None)
                if not self._until_leave():
                    return False
            self.done.put(None)
        return order == "leave"

    def do(self, order: str) -> None:
        self.orders.put(order)
        assert self.done.get(timeout=5) is None

    def stop(self) -> None:
        self.orders.put(None)
        self.thread.join(timeout=5)


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_collector_is_off_while_any_pause_is_active(case: Case, collector):
    gc.enable() if case.enabled_before else gc.disable()
    parties = {"A": Party(), "B": Party()}
    seen = []
    for step in case.steps:
        order, who = step.split()
        parties[who].do(order)
        seen.append(gc.isenabled())
    for party in parties.values():
        party.stop()
    assert tuple(seen) == case.expected


def test_a_pause_ends_when_its_block_raises(collector):
    gc.enable()
    with pytest.raises(ZeroDivisionError), collector_paused():
        1 / 0
    assert gc.isenabled()
