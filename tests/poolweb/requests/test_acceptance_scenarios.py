"""The acceptance scenarios S-2…S-11, S-13 and S-14 (docs/scheduling.md §11), each test named for
what it shows, end to end through the REST API: the configuration goes live by
``PUT /config/draft`` + ``POST /config/draft/provision``, requests are submitted with
``POST /requests`` and watched with ``GET /requests/{id}``, ``/pools``, ``/pools/{name}/queue``
and ``/policies``. A pass runs inline after every change (``passes_inline``), as the worker's task
would; time-driven changes (lease expiry, eviction grace) come from ``run_periodic_pass``, the
function the worker's schedule calls, on a clock the test moves by hand.

Every pass is recorded (its snapshot and plan) and judged by the engine's invariants: I-1…I-4
on each snapshot, I-7 on each plan's preemptions, I-8 on each pass. Each scenario ends steady:
one more pass decides nothing and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from unittest import mock

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from poolweb.models import Request as RequestRow
from poolweb.services import reconciler
from poolweb.services.reconciler import reconcile_pass
from poolweb.selectors.snapshot import load_snapshot
from poolweb.services.triggers import run_periodic_pass
from reconcile import Plan, Reason, Snapshot
from reconcile import plan as engine_plan
from reconcile.invariants import check_idempotent, check_preemptions, check_state

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db

API = "/api/v1"


# --- configuration builders ----------------------------------------------------------------------

def pool(name: str, *, execution_order: list[str] | None = None, **capacity) -> dict:
    doc = {"name": name, "capacity": capacity}
    if execution_order is not None:
        doc["execution_order"] = execution_order
    return doc


def profile(name: str, pools: list[str], policies: list[str], *, dynamic: bool = False, **resources) -> dict:
    return {"name": name, "resources": resources, "dynamic": dynamic,
            "connections": [{"pool": p} for p in pools], "policies": policies}


def job(pools: list[str], policies: list[str]) -> dict:
    """The scenarios' dynamic profile: "whatever the request asks"."""
    return profile("job", pools, policies, dynamic=True, gpu=1)


def policy(name: str, *quotas: str, priority: int = 0) -> dict:
    """Quotas written as in docs/scheduling.md §11: ``"dc:gpu 4/8"``. All in group ``dev`` (bob's)."""
    rows = []
    for text in quotas:
        where, bounds = text.split()
        scope, key = where.split(":")
        reserved, limit = bounds.split("/")
        rows.append({"scope": scope, "key": key, "reserved": int(reserved), "limit": int(limit)})
    return {"name": name, "group": "dev", "priority": priority, "quotas": rows}


# --- the API as a client sees it -----------------------------------------------------------------

def go_live(admin: APIClient, pools: list[dict], profiles: list[dict], policies: list[dict]) -> int:
    document = {"pools": pools, "profiles": profiles, "policies": policies}
    saved = admin.put(f"{API}/config/draft", document, format="json")
    assert saved.status_code == 200, saved.json()
    provisioned = admin.post(f"{API}/config/draft/provision")
    assert provisioned.status_code == 200, provisioned.json()
    return provisioned.json()["version"]


def submit(client: APIClient, queue: str, *, preemptible: bool = True, **body) -> dict:
    policy_name, profile_name = queue.split("/")
    response = client.post(f"{API}/requests", {"policy": policy_name, "profile": profile_name,
                                               "preemptible": preemptible, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def get(client: APIClient, request_id: int) -> dict:
    response = client.get(f"{API}/requests/{request_id}")
    assert response.status_code == 200
    return response.json()


def act(client: APIClient, request_id: int, action: str) -> dict:
    response = client.post(f"{API}/requests/{request_id}/{action}")
    assert response.status_code == 200, response.json()
    return response.json()


def manage(admin: APIClient, enabled: bool) -> None:
    response = admin.put(f"{API}/management", {"enabled": enabled}, format="json")
    assert response.json() == {"enabled": enabled}


def seen(request: dict) -> tuple:
    """What the scenarios state about a request."""
    return request["state"], request["reason"], request["pool"], request["position"]


def pool_state(client: APIClient, name: str) -> dict:
    return next(p for p in client.get(f"{API}/pools").json() if p["name"] == name)


def quota_row(client: APIClient, policy_name: str, scope: str, key: str) -> dict:
    """One row of ``GET /policies``: usage, reserved, limit, borrowed, pending, running."""
    found = next(p for p in client.get(f"{API}/policies").json() if p["name"] == policy_name)
    row = next(r for r in found["scopes"] if (r["scope"], r["key"]) == (scope, key))
    return {k: row[k] for k in ("usage", "reserved", "limit", "borrowed", "pending", "running")}


def queue_of(client: APIClient, pool_name: str) -> list[tuple[int, int, str]]:
    body = client.get(f"{API}/pools/{pool_name}/queue").json()
    return [(e["id"], e["position"], e["reason"]) for e in body["results"]]


# --- every pass judged, and the end steady ------------------------------------------------------

@pytest.fixture
def passes() -> Iterator[list[tuple[Snapshot, Plan]]]:
    """Every pass the service runs, as (snapshot, plan), seen where the reconciler calls the engine."""
    recorded: list[tuple[Snapshot, Plan]] = []

    def planning(snapshot: Snapshot, terms=None) -> Plan:
        decided = engine_plan(snapshot, terms)
        recorded.append((snapshot, decided))
        return decided

    with mock.patch.object(reconciler, "plan", planning):
        yield recorded


@pytest.fixture
def steady(passes):
    """Call at the end of a scenario: every recorded pass kept the invariants, every request
    stores a reason and a sentence, and one more pass decides nothing and writes nothing."""

    def check() -> None:
        assert passes, "no pass ran"
        for snapshot, decided in passes:
            assert check_state(snapshot) == [], snapshot.now
            assert check_preemptions(snapshot, decided) == [], snapshot.now
            assert check_idempotent(snapshot, decided) == [], snapshot.now
        stored = list(RequestRow.objects.order_by("id").values())
        for row in stored:  # every state a request reached came with a reason and a sentence
            assert Reason(row["reason"]) and row["message"].strip(), row
        result = reconcile_pass()
        assert result.plan.empty, list(result.plan.decisions())
        assert (result.conflicts, result.counts) == (0, dict.fromkeys(reconciler.COUNTED, 0))
        assert list(RequestRow.objects.order_by("id").values()) == stored
        now = timezone.now()
        assert check_state(load_snapshot(now)) == []
        assert check_idempotent(load_snapshot(now)) == []

    return check


class Clock:
    """``django.utils.timezone.now`` while patched: stands still until moved. Every service module
    calls ``timezone.now()`` through the module, so one patch reaches them all."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Iterator[Clock]:
    moving = Clock(timezone.now())
    with mock.patch("django.utils.timezone.now", moving):
        yield moving


@pytest.fixture
def user(bob) -> APIClient:
    """bob, a member of group ``dev``, which every scenario policy names."""
    return client_for(bob)


# --- S-2 … S-8 -------------------------------------------------------------------------------------

def s2_configuration(admin: APIClient) -> None:
    go_live(admin, [pool("dc", gpu=8)], [job(["dc"], ["ml"])], [policy("ml", "dc:gpu 4/8", priority=10)])


def test_s2_a_preemptible_request_borrows_past_its_reservation(admin, user, steady):
    """S-2: pool dc {gpu: 8}, ml dc:gpu 4/8; a preemptible 6 gpu is allocated, 2 of them borrowed."""
    s2_configuration(admin)

    borrower = submit(user, "ml/job", resources={"gpu": 6})

    assert seen(borrower) == ("allocated", "Granted", "dc", None)
    assert quota_row(user, "ml", "dc", "gpu") == {
        "usage": 6, "reserved": 4, "limit": 8, "borrowed": 2, "pending": 0, "running": 1}
    assert quota_row(user, "ml", "*", "gpu")["usage"] == 6
    assert pool_state(user, "dc")["used"] == {"gpu": 6}
    steady()


def test_s3_non_preemptible_requests_live_inside_the_reservation(admin, user, steady):
    """S-3: on S-2's configuration a non-preemptible 2 gpu is allocated; a non-preemptible 6 gpu
    is rejected ExceedsReserved (6 > 4) although the limit is 8."""
    s2_configuration(admin)

    first = submit(user, "ml/job", preemptible=False, resources={"gpu": 2})
    second = submit(user, "ml/job", preemptible=False, resources={"gpu": 6})

    assert seen(first) == ("allocated", "Granted", "dc", None)
    assert seen(second) == ("rejected", "ExceedsReserved", None, None)
    assert second["finished_at"] is not None
    assert quota_row(user, "ml", "dc", "gpu") == {
        "usage": 2, "reserved": 4, "limit": 8, "borrowed": 0, "pending": 0, "running": 1}
    steady()


def test_s4_keys_the_pool_does_not_meter_are_not_checked(admin, user, steady):
    """S-4: pool train {gpu: 4}, k8s train:gpu 2/4; a non-preemptible {gpu 1, mcpu 32000,
    memory_mb 68720} is allocated: only gpu is checked."""
    go_live(admin, [pool("train", gpu=4)], [job(["train"], ["k8s"])], [policy("k8s", "train:gpu 2/4")])

    request = submit(user, "k8s/job", preemptible=False, resources={"gpu": 1, "mcpu": 32000, "memory_mb": 68720})

    assert seen(request) == ("allocated", "Granted", "train", None)
    assert request["resources"] == {"gpu": 1, "mcpu": 32000, "memory_mb": 68720, "step_run": 1}
    assert pool_state(user, "train")["used"] == {"gpu": 1}  # unmetered keys do not count
    assert quota_row(user, "k8s", "train", "gpu")["usage"] == 1
    steady()


def test_s5_a_metered_key_the_policy_does_not_mention(admin, user, steady):
    """S-5: pool train {gpu: 4, mcpu: 8000}, k8s train:gpu 2/4 and no mcpu row: a preemptible
    {gpu 1, mcpu 4000} is allocated (the mcpu limit falls back to the pool's 8000); a
    non-preemptible {gpu 1, mcpu 1000} is rejected ExceedsReserved (mcpu reserved is 0)."""
    go_live(admin, [pool("train", gpu=4, mcpu=8000)], [job(["train"], ["k8s"])], [policy("k8s", "train:gpu 2/4")])

    preemptible = submit(user, "k8s/job", resources={"gpu": 1, "mcpu": 4000})
    not_preemptible = submit(user, "k8s/job", preemptible=False, resources={"gpu": 1, "mcpu": 1000})

    assert seen(preemptible) == ("allocated", "Granted", "train", None)
    assert seen(not_preemptible) == ("rejected", "ExceedsReserved", None, None)
    assert "mcpu" in not_preemptible["message"]
    assert pool_state(user, "train")["used"] == {"gpu": 1, "mcpu": 4000}
    steady()


def test_s6_step_run_caps_concurrency(admin, user, steady):
    """S-6: pool big {gpu: 16, step_run: 10}, t big:gpu 8/16 and big:step_run 4/4: four
    preemptible gpu 2 run, a fifth waits WaitingForQuota though 8 gpu are free, and runs once
    one of the four is released."""
    go_live(admin, [pool("big", gpu=16, step_run=10)], [job(["big"], ["t"])],
            [policy("t", "big:gpu 8/16", "big:step_run 4/4")])

    first_four = [submit(user, "t/job", resources={"gpu": 2}) for _ in range(4)]
    fifth = submit(user, "t/job", resources={"gpu": 2})

    assert [seen(r) for r in first_four] == [("allocated", "Granted", "big", None)] * 4
    assert seen(fifth) == ("pending", "WaitingForQuota", None, 1)
    assert pool_state(user, "big")["free"] == {"gpu": 8, "step_run": 6}
    assert quota_row(user, "t", "big", "step_run") == {
        "usage": 4, "reserved": 4, "limit": 4, "borrowed": 0, "pending": 1, "running": 4}
    assert queue_of(user, "big") == [(fifth["id"], 1, "WaitingForQuota")]

    assert act(user, first_four[0]["id"], "release")["state"] == "released"

    assert seen(get(user, fifth["id"])) == ("allocated", "Granted", "big", None)
    assert queue_of(user, "big") == []
    assert quota_row(user, "t", "big", "step_run")["usage"] == 4
    steady()


@pytest.mark.parametrize("resources, reason", [
    ({"gpu": 10}, "ExceedsPoolCapacity"),
    ({"gpu": 6}, "ExceedsLimit"),
    ({"gpu": 1, "disk": 1}, "ResourceNotInPool"),
], ids=["above the pool", "above the limit", "a key the pool lacks"])
def test_s7_never_satisfiable_requests_are_rejected_at_once(admin, user, steady, resources, reason):
    """S-7: pool small {gpu: 8}, a small:gpu 2/4: gpu 10, gpu 6 and {gpu 1, disk 1} are rejected
    at once, each with the rule it fails."""
    go_live(admin, [pool("small", gpu=8)], [job(["small"], ["a"])], [policy("a", "small:gpu 2/4")])

    request = submit(user, "a/job", resources=resources)

    assert seen(request) == ("rejected", reason, None, None)
    assert request["message"] and request["finished_at"]
    assert pool_state(user, "small")["pending"] == 0
    steady()


def test_s8_a_waiting_request_does_not_block_the_ones_behind_it(admin, user, steady):
    """S-8: pool p {gpu: 2}, c p:gpu 1/2: a non-preemptible gpu 1 runs, a second waits
    WaitingForReservation, and a preemptible gpu 1 after it still runs."""
    go_live(admin, [pool("p", gpu=2)], [job(["p"], ["c"])], [policy("c", "p:gpu 1/2")])

    first = submit(user, "c/job", preemptible=False, resources={"gpu": 1})
    second = submit(user, "c/job", preemptible=False, resources={"gpu": 1})
    third = submit(user, "c/job", resources={"gpu": 1})

    assert seen(first) == ("allocated", "Granted", "p", None)
    assert seen(second) == ("pending", "WaitingForReservation", None, 1)
    assert seen(third) == ("allocated", "Granted", "p", None)
    assert seen(get(user, second["id"])) == ("pending", "WaitingForReservation", None, 1)
    assert queue_of(user, "p") == [(second["id"], 1, "WaitingForReservation")]
    assert quota_row(user, "c", "p", "gpu") == {
        "usage": 2, "reserved": 1, "limit": 2, "borrowed": 1, "pending": 1, "running": 2}
    steady()


# --- S-9 and the eviction path ---------------------------------------------------------------------

def s9_configuration(admin: APIClient, low_reserved: int) -> None:
    go_live(admin, [pool("p", gpu=1)], [job(["p"], ["low", "high"])],
            [policy("low", f"p:gpu {low_reserved}/1", priority=1), policy("high", "p:gpu 0/1", priority=2)])


def test_s9_non_preemptible_work_is_never_evicted(admin, user, steady):
    """S-9, first run: low (priority 1, p:gpu 1/1) holds the one gpu non-preemptibly; high
    (priority 2) waits, and low stays allocated."""
    s9_configuration(admin, low_reserved=1)

    low = submit(user, "low/job", preemptible=False, resources={"gpu": 1})
    high = submit(user, "high/job", resources={"gpu": 1})

    assert seen(get(user, low["id"])) == ("allocated", "Granted", "p", None)
    assert get(user, low["id"])["preempted_by"] is None
    assert seen(high) == ("pending", "WaitingForCapacity", None, 1)
    assert pool_state(user, "p")["held"] == {}
    steady()


def preempt_low_for_high(admin: APIClient, user: APIClient, *, max_retries: int = 0) -> tuple[dict, dict]:
    """S-9, second run, steps 1–2: low (reserved now 0) is preempting for high."""
    s9_configuration(admin, low_reserved=0)
    low = submit(user, "low/job", resources={"gpu": 1}, max_retries=max_retries)
    assert seen(low) == ("allocated", "Granted", "p", None)
    high = submit(user, "high/job", resources={"gpu": 1})
    low = get(user, low["id"])
    assert (seen(low), low["preempted_by"]) == (("preempting", "PreemptedByPriority", "p", None), high["id"])
    assert seen(high) == ("pending", "WaitingForPreemption", None, 1)
    assert pool_state(user, "p")["held"] == {"gpu": 1}
    return low, high


def test_s9_strictly_higher_priority_preempts_and_the_release_acknowledges_it(admin, user, steady):
    """S-9, second run: low (p:gpu 0/1) holds the gpu preemptibly; high's arrival makes low
    preempting (PreemptedByPriority, preempted_by high) and high WaitingForPreemption; low's
    holder releases: low is preempted and high allocated."""
    low, high = preempt_low_for_high(admin, user)

    released = act(user, low["id"], "release")

    assert (released["state"], released["reason"], released["attempt"]) == ("preempted", "PreemptedByPriority", 1)
    assert released["finished_at"] is not None
    assert seen(get(user, high["id"])) == ("allocated", "Granted", "p", None)
    assert pool_state(user, "p")["held"] == {}
    assert quota_row(user, "high", "p", "gpu")["usage"] == 1
    assert quota_row(user, "low", "p", "gpu")["usage"] == 0
    steady()


def test_a_release_while_preempting_with_a_retry_left_queues_the_request_again(admin, user, steady):
    """S-9's eviction path with max_retries 1 (R-46, R-51): the holder's release sends low back
    to pending, attempt 2; high is allocated."""
    low, high = preempt_low_for_high(admin, user, max_retries=1)

    released = act(user, low["id"], "release")

    assert (released["state"], released["attempt"]) == ("pending", 2)
    assert released["submitted_at"] == low["submitted_at"]  # first submission time kept
    assert seen(get(user, high["id"])) == ("allocated", "Granted", "p", None)
    assert seen(get(user, low["id"])) == ("pending", "WaitingForCapacity", None, 1)
    steady()


@pytest.mark.parametrize("max_retries, evicted_as", [
    (0, ("preempted", "PreemptedByPriority", "p", None, 1)),
    (1, ("pending", "WaitingForCapacity", None, 1, 2)),
], ids=["no retry: preempted", "a retry left: queued again"])
def test_a_victim_not_released_within_the_grace_is_evicted_by_the_periodic_pass(
        admin, user, steady, clock, settings, max_retries, evicted_as):
    """S-9, second run, when low's holder never releases (R-44, R-46): the periodic pass leaves
    low preempting within the grace, then evicts it (preempted, or pending again as attempt 2
    with a retry left) and allocates high."""
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 20}
    low, high = preempt_low_for_high(admin, user, max_retries=max_retries)

    clock.advance(19)
    run_periodic_pass()
    assert get(user, low["id"])["state"] == "preempting"
    assert get(user, high["id"])["state"] == "pending"

    clock.advance(1)
    run_periodic_pass()

    evicted = get(user, low["id"])
    assert (*seen(evicted), evicted["attempt"]) == evicted_as
    assert seen(get(user, high["id"])) == ("allocated", "Granted", "p", None)
    assert pool_state(user, "p")["used"] == {"gpu": 1}
    steady()


# --- S-10, S-11, S-13 ------------------------------------------------------------------------------

def test_s10_fractional_gpus(admin, user, steady):
    """S-10: pool a100 {gpu: 1}, profiles half {gpu 0.5} and mig {gpu 0.143}, policy t without
    quotas. Three half: two run, one waits. With the halves gone (the waiting one cancelled
    first, so it does not take the freed room), seven mig: six run (0.858), the seventh waits
    (1.001 > 1)."""
    go_live(admin, [pool("a100", gpu=1)],
            [profile("half", ["a100"], ["t"], gpu=0.5), profile("mig", ["a100"], ["t"], gpu=0.143)],
            [policy("t")])

    halves = [submit(user, "t/half") for _ in range(3)]
    assert [seen(r) for r in halves] == [("allocated", "Granted", "a100", None)] * 2 + [
        ("pending", "WaitingForCapacity", None, 1)]

    act(user, halves[2]["id"], "cancel")
    for half in halves[:2]:
        assert act(user, half["id"], "release")["state"] == "released"
    migs = [submit(user, "t/mig") for _ in range(7)]

    assert [seen(get(user, r["id"])) for r in migs] == [("allocated", "Granted", "a100", None)] * 6 + [
        ("pending", "WaitingForCapacity", None, 1)]
    assert pool_state(user, "a100")["used"] == {"gpu": 0.858}
    assert pool_state(user, "a100")["free"] == {"gpu": 0.142}
    assert "0.858 of 1" in get(user, migs[6]["id"])["message"]
    steady()


def test_s11_the_management_switch(admin, user, steady):
    """S-11: with management off a t/one waits ManagementDisabled, a t/job of gpu 9 is still
    rejected at once, and switching management on allocates the first."""
    go_live(admin, [pool("p", gpu=4)], [profile("one", ["p"], ["t"], gpu=1), job(["p"], ["t"])], [policy("t")])

    manage(admin, False)
    one = submit(user, "t/one")
    too_big = submit(user, "t/job", resources={"gpu": 9})

    assert seen(one) == ("pending", "ManagementDisabled", None, 1)
    assert seen(too_big) == ("rejected", "ExceedsPoolCapacity", None, None)
    assert reconcile_pass().plan.empty  # nothing is granted while management is off

    manage(admin, True)

    assert seen(get(user, one["id"])) == ("allocated", "Granted", "p", None)
    steady()


def test_s13_execution_order_inside_a_pool(admin, user, steady):
    """S-13: pool p {gpu: 4}, execution_order [small, big]; big, big, small, small submitted while
    management is off. Switched on: both small and the first big run (small is served first though
    submitted later), the second big waits at position 1."""
    go_live(admin, [pool("p", gpu=4, execution_order=["small", "big"])],
            [profile("small", ["p"], ["t"], gpu=1), profile("big", ["p"], ["t"], gpu=2)], [policy("t")])

    manage(admin, False)
    bigs = [submit(user, "t/big") for _ in range(2)]
    smalls = [submit(user, "t/small") for _ in range(2)]
    assert [get(user, r["id"])["position"] for r in bigs + smalls] == [3, 4, 1, 2]

    manage(admin, True)

    assert [seen(get(user, r["id"])) for r in smalls + bigs[:1]] == [("allocated", "Granted", "p", None)] * 3
    assert seen(get(user, bigs[1]["id"])) == ("pending", "WaitingForCapacity", None, 1)
    assert queue_of(user, "p") == [(bigs[1]["id"], 1, "WaitingForCapacity")]
    steady()


# --- S-14 ------------------------------------------------------------------------------------------

def test_s14_an_allocation_without_heartbeats_expires_after_its_lease(admin, user, steady, clock):
    """S-14: pool p {gpu: 1}, profile one {gpu 1}. The first request (lease 10 s) runs and the
    second waits; heartbeats keep the first allocated past its first lease; once they stop, the
    periodic pass expires it (LeaseExpired) and allocates the second."""
    go_live(admin, [pool("p", gpu=1)], [profile("one", ["p"], ["t"], gpu=1)], [policy("t")])

    first = submit(user, "t/one", lease_seconds=10)
    second = submit(user, "t/one")
    assert seen(first) == ("allocated", "Granted", "p", None)
    assert seen(second) == ("pending", "WaitingForCapacity", None, 1)

    for _ in range(4):  # 32 s, far past the first lease, in heartbeats 8 s apart
        clock.advance(8)
        act(user, first["id"], "heartbeat")
        run_periodic_pass()
        assert get(user, first["id"])["state"] == "allocated"
    assert get(user, second["id"])["state"] == "pending"

    clock.advance(9.999)
    run_periodic_pass()
    assert get(user, first["id"])["state"] == "allocated"
    clock.advance(0.001)
    run_periodic_pass()

    expired = get(user, first["id"])
    assert (expired["state"], expired["reason"]) == ("expired", "LeaseExpired")
    assert expired["finished_at"] is not None
    assert seen(get(user, second["id"])) == ("allocated", "Granted", "p", None)
    assert user.post(f"{API}/requests/{first['id']}/heartbeat").status_code == 409
    steady()
