"""Polling backs off from 1 s, doubling to 20 s, jittered (the client issue); a change resets it."""

from __future__ import annotations

import doctest
import random

import poolctl.backoff
from poolctl.backoff import Backoff


def test_the_delays_double_from_one_second_up_to_twenty():
    delays = Backoff(jitter=0)
    assert [delays.next() for _ in range(8)] == [1, 2, 4, 8, 16, 20, 20, 20]


def test_each_delay_is_within_a_fifth_of_its_nominal_value_and_never_above_the_cap():
    delays = Backoff(rng=random.Random(1))
    for nominal in [1, 2, 4, 8, 16] + [20] * 50:
        delay = delays.next()
        assert 0.8 * nominal <= delay <= min(20, 1.2 * nominal)


def test_the_jitter_spreads_clients_that_start_together():
    firsts = {round(Backoff(rng=random.Random(seed)).next(), 3) for seed in range(20)}
    assert len(firsts) > 10


def test_a_reset_starts_again_at_one_second():
    delays = Backoff(jitter=0)
    for _ in range(5):
        delays.next()
    delays.reset()
    assert delays.next() == 1


def test_a_long_wait_does_not_overflow():
    delays = Backoff(jitter=0)
    assert [delays.next() for _ in range(2000)][-1] == 20


def test_the_module_example_holds():
    assert doctest.testmod(poolctl.backoff).failed == 0
