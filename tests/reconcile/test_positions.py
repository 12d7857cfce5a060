"""Positions keep their promise (R-32, decision 120): on random configurations, the
positions of a snapshot are the order in which the next pass serves its requests, whether
management is on or off when they are given.

Seeded random, not Hypothesis: 200 worlds of a few pools, policies and profiles, each built from
its own seed, so a failure names the seed that rebuilds it (``world(seed)``).
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from reconcile import Snapshot, State, plan
from reconcile.ledger import Ledger
from reconcile.overtaking import ahead_of_it, overtaking_text
from reconcile.quota import TermsCache
from reconcile.transition import carry_out
from tests.reconcile.builders import config, policy, pool, profile, req, snapshot

SEEDS = range(200)
POOLS = ("h100", "a100", "mig")
POLICIES = ("research", "dev", "ops")
PROFILES = ("train", "infer", "notebook")


def world(seed: int) -> Snapshot:
    """Pools of 2 to 6 gpu with an execution order, policies of priority 0 or 10 reserving some gpu
    on a pool or across all, profiles connected to 1 to 3 pools; some requests running, more waiting."""
    rnd = random.Random(seed)
    pools = rnd.sample(POOLS, rnd.randint(1, 3))
    policies = rnd.sample(POLICIES, rnd.randint(1, 3))
    profiles = rnd.sample(PROFILES, rnd.randint(1, 3))
    items = [pool(name, tuple(rnd.sample(profiles, len(profiles))), gpu=rnd.randint(2, 6)) for name in pools]
    for name in policies:
        quotas = [f"{rnd.choice([*pools, ''])}:gpu {rnd.randint(0, 3)}/" for _ in range(rnd.randint(0, 2))]
        items.append(policy(name, *quotas, priority=rnd.choice((0, 0, 10))))
    queues = []
    for name in profiles:
        connected = tuple(rnd.sample(pools, rnd.randint(1, len(pools))))
        served = tuple(rnd.sample(policies, rnd.randint(1, len(policies))))
        items.append(profile(name, connected, served, dynamic=True))
        queues += [(team, name, connected) for team in served]
    requests = []
    for i in range(1, rnd.randint(4, 14) + 1):
        team, name, connected = rnd.choice(queues)
        running = rnd.random() < 0.25
        requests.append(req(i, team, name, gpu=rnd.choice((1, 1, 2)), preemptible=rnd.random() < 0.8,
                            at_s=rnd.choice((i, 1)),  # ties in submission time, broken by id
                            state=State.ALLOCATED if running else State.PENDING,
                            pool=rnd.choice(connected) if running else None))
    return snapshot(config(*items), *fit_on_their_pools(requests, items))


def fit_on_their_pools(requests: list, items: list) -> list:
    """The running requests that fit their pool's capacity; the others wait instead."""
    room = {item.name: item.capacity["gpu"] for item in items if hasattr(item, "execution_order")}
    kept = []
    for request in requests:
        if request.state is State.ALLOCATED:
            if request.resources["gpu"] > room[request.pool]:
                request = replace(request, state=State.PENDING, pool=None, allocated_at=None, lease_expires_at=None)
            else:
                room[request.pool] -= request.resources["gpu"]
        kept.append(request)
    return kept


def positions(state: Snapshot) -> dict[int, int]:
    return {request_id: waiting.position for request_id, waiting in plan(state).waiting.items()}


@pytest.mark.parametrize("seed", SEEDS)
def test_with_management_off_positions_are_the_order_the_next_pass_grants(seed):
    state = world(seed)
    placed = positions(replace(state, management_enabled=False))
    granted = [grant.request_id for grant in plan(state).grants]

    assert sorted(placed.values()) == list(range(1, len(placed) + 1))
    # Every grant of the next pass, in order, holds the first positions ...
    assert [placed[request_id] for request_id in granted] == list(range(1, len(granted) + 1))
    # ... so among requests of one size, grants follow positions: none is overtaken by a later one.
    size = {r.id: r.resources for r in state.requests}
    order = {request_id: n for n, request_id in enumerate(granted)}
    for first in placed:
        for later in placed:
            if size[first] == size[later] and placed[first] < placed[later] and later in order:
                assert first in order and order[first] < order[later], (seed, first, later)


@pytest.mark.parametrize("seed", SEEDS)
def test_once_nothing_more_fits_management_on_or_off_places_the_waiting_alike(seed):
    state = world(seed)
    after = carry_out(state, plan(state))  # the pass's grants done: what waits still does not fit

    assert positions(after) == positions(replace(after, management_enabled=False))


def test_a_preemptor_waits_where_its_capacity_is_held_not_at_its_preferred_pool():  # R-45, decision 119
    # p1 is full of work that cannot be preempted; request 3 preempted request 2 on p2, its later pool.
    cfg = config(pool("p1", gpu=2), pool("p2", gpu=2), policy("lo"), policy("hi", priority=10),
                 profile("wide", ("p1", "p2"), ("hi", "lo"), dynamic=True))
    victim = replace(req(2, "lo", "wide", gpu=2, state=State.ALLOCATED, pool="p2"), state=State.PREEMPTING,
                     preempted_by=3)
    state = snapshot(cfg, req(1, "lo", "wide", gpu=2, preemptible=False, state=State.ALLOCATED, pool="p1"), victim,
                     req(3, "hi", "wide", gpu=2, held="p2"), req(4, "lo", "wide", gpu=1))
    for enabled in (True, False):
        waiting = plan(replace(state, management_enabled=enabled)).waiting
        assert (waiting[3].pool, waiting[3].position) == ("p2", 1)
        assert (waiting[4].pool, waiting[4].position) == ("p1", 2)


# --- who may still go ahead (reconcile/overtaking.py) ------------------------------------------

SHARED = config(pool("p", ("first", "second"), gpu=4),
                policy("hi", priority=10), policy("own", "p:gpu 2/"), policy("guest"),
                profile("first", "p", ("guest",), gpu=1), profile("second", "p", ("own", "guest"), gpu=1))


def overtakers(policy_name: str, profile_name: str, *running) -> list[tuple[str, str, int]]:
    return [tuple(o) for o in ahead_of_it(TermsCache(SHARED), Ledger.of_live(running, SHARED), "p", policy_name,
                                          profile_name, req(9, policy_name, profile_name, gpu=1).resources)]


def test_a_borrowing_request_may_be_passed_by_one_in_share_and_by_a_profile_served_first():
    assert overtakers("guest", "second") == [
        ("guest", "first", 3), ("own", "second", 2)]


def test_a_request_in_share_goes_before_a_profile_served_first_that_borrows():
    assert overtakers("own", "second") == []  # decides before


def test_once_its_share_is_used_a_policy_passes_by_rank_only():
    running = [req(i, "own", "second", gpu=1, state=State.ALLOCATED, pool="p") for i in (1, 2)]
    assert overtakers("guest", "second", *running) == [
        ("guest", "first", 3), ("own", "second", 4)]


def test_the_sentence_names_each_criterion_once_with_its_queues():
    assert overtaking_text(ahead_of_it(TermsCache(SHARED), Ledger(SHARED), "p", "guest", "second",
                                       req(9, "guest", "second", gpu=1).resources)) == (
        "a later request may still go ahead of it: one that stays in its share while this one borrows "
        "(own, R-32.2); one of a profile served first on this pool (first, R-32.3)")
