"""The front-door bench's scenarios (see bench/front_door.py), each a function of the ``Site``
returning its figures. They run in the bench's child process, with Django set up on the
server's database: the bench reads ``allocated_at`` and stores the big queue directly."""

from __future__ import annotations

import json
import statistics
import time

from bench.clients import Call, split
from bench.results import percentile, sized

N = sized(1000, 40)  # one-GPU jobs
GPUS = sized(512, 24)  # in the one pool: more than half of N, so the second wave fits
CLIENTS = 4
PREEMPTORS = sized(32, 4)
BIG_QUEUE = sized(20_000, 200)
# A rate is the median of this many batches, each from new connections: with two web processes,
# where four keep-alive connections land (2:2 or 3:1) moved one batch's rate by a third.
REPEATS = sized(3, 1)
WARM_CALLS = sized(100, 4)
SINGLE_CALLS = sized(200, 10)  # one client's submissions and releases; 1.5 times as many reads
HEARTBEATS = sized(500, 20)  # live requests one client keeps alive: one /requests/actions call's most
POLL_SECONDS = 0.05  # how often a polling client looks

DOCUMENT = {
    "pools": [{"name": "gpus", "capacity": {"gpu": GPUS}}],
    "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "gpus"}],
                  "policies": ["low", "high"]}],
    "policies": [{"name": "low", "group": "team"}, {"name": "high", "group": "team", "priority": 10}],
}


def prepare_database(clients: int, gpus: int) -> tuple[list[str], str]:
    """Migrate, create the admin and one member of ``team`` per client, provision the pool."""
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    from poolweb.services.config import config_provision_document
    from poolweb.services.tokens import token_issue

    call_command("migrate", verbosity=0)
    admin = User.objects.create_user("admin", is_staff=True)
    team = Group.objects.create(name="team")
    tokens = []
    for n in range(clients):
        user = User.objects.create_user(f"client{n}")
        user.groups.add(team)
        tokens.append(token_issue(user=user))
    config_provision_document(document=DOCUMENT, author=admin)
    return tokens, token_issue(user=admin)


# --- figures of a batch of calls ---------------------------------------------------------------------

def rate(calls: list[Call]) -> float:
    return len(calls) / (max(c.ended for c in calls) - min(c.started for c in calls))


def latencies(calls: list[Call]) -> list[float]:
    return [(c.ended - c.started) * 1000 for c in calls]


def batch_figures(name: str, calls: list[Call], ok: int = 201) -> dict:
    spent = latencies(calls)
    return {f"{name}_per_s": rate(calls), f"{name}_p50_ms": percentile(spent, 50),
            f"{name}_p99_ms": percentile(spent, 99), f"{name}_errors": sum(c.status != ok for c in calls),
            "database_locked": sum(c.locked for c in calls)}


def _merge(*parts: dict) -> dict:
    merged: dict = {}
    for part in parts:
        for key, value in part.items():
            merged[key] = merged.get(key, 0) + value if key == "database_locked" else value
    return merged


def settle(timeout: float = 300.0) -> None:
    """Until no pass is wanted and no request waits unjudged."""
    from poolweb.models import PassTaskFlag, Request as RequestRow

    deadline = time.time() + timeout
    while time.time() < deadline:
        wanted = PassTaskFlag.objects.filter(raised=True).exists()
        if not wanted and not RequestRow.objects.filter(state="pending", reason="Submitted").exists():
            return
        time.sleep(0.02)
    raise TimeoutError("the passes did not catch up")


def allocated_at(ids) -> list[float]:
    from poolweb.models import Request as RequestRow

    return [moment.timestamp() for moment in
            RequestRow.objects.filter(pk__in=list(ids)).values_list("allocated_at", flat=True) if moment is not None]


def finish_everything(site) -> None:
    """Release or cancel every request, through the API, so the next scenario starts empty."""
    from poolweb.models import Request as RequestRow

    rows = list(RequestRow.objects.filter(state__in=("pending", "allocated", "preempting"))
                .values_list("id", "owner__username"))
    owners = {f"client{n}": n for n in range(CLIENTS)}
    per_client = [[] for _ in range(CLIENTS)]
    for request_id, owner in rows:
        cancel = ("POST", f"/api/v1/requests/{request_id}/cancel", None)
        if owner in owners:
            per_client[owners[owner]].append(cancel)
        else:
            site.admin.call(*cancel)
    site.clients.calls(per_client)
    settle()


# --- the scenarios -------------------------------------------------------------------------------------

def median_batch(name: str, batches: list[list[Call]], ok: int = 201) -> dict:
    """The figures of the batch of median rate, and the fastest and slowest batch's rates."""
    found = sorted((batch_figures(name, calls, ok) for calls in batches), key=lambda f: f[f"{name}_per_s"])
    rates = [f[f"{name}_per_s"] for f in found]
    return {**found[len(found) // 2], "database_locked": sum(f["database_locked"] for f in found),
            f"{name}_per_s_min": rates[0], f"{name}_per_s_max": rates[-1]}


def baseline(site) -> dict:
    site.clients.calls(split([("POST", "/bench/baseline", {})] * WARM_CALLS, CLIENTS))  # warm
    batches = []
    for _ in range(REPEATS):
        site.clients.reconnect()
        batches.append(site.clients.calls(split([("POST", "/bench/baseline", {})] * N, CLIENTS)))
    return median_batch("baseline", batches)


def submit(site) -> dict:
    """N submissions into an empty queue, REPEATS times (the earlier batches cancelled): the
    last batch's N stay pending for ``waves``."""
    site.switch(False)
    batches = []
    for repeat in range(REPEATS):
        if repeat:
            finish_everything(site)
        site.clients.reconnect()
        batches.append(site.submit(N))
        settle()
    return median_batch("submit", batches)


def waves(site) -> dict:
    """Switch on at t0 with N pending: the first 512, then releases of those 512 → the rest."""
    from poolweb.models import Request as RequestRow

    settle()
    t0 = site.switch(True)
    seen_first = site.poll(lambda pool: pool["running"] >= GPUS)
    first = list(RequestRow.objects.filter(state="allocated").values_list("id", flat=True))
    first_at = max(allocated_at(first))
    owners = dict(RequestRow.objects.filter(pk__in=first).values_list("id", "owner__username"))
    per_client = [[] for _ in range(CLIENTS)]
    for request_id in first:
        per_client[int(owners[request_id].removeprefix("client"))].append(
            ("POST", f"/api/v1/requests/{request_id}/release", None))
    released_from = time.time()
    releases = site.clients.calls(per_client)
    seen_second = site.poll(lambda pool: pool["pending"] == 0 and pool["running"] == N - GPUS)
    rest = RequestRow.objects.exclude(pk__in=first).filter(state="allocated").values_list("id", flat=True)
    last_at = max(allocated_at(rest))
    found = {
        "first_wave_s": first_at - t0, "first_wave_seen_s": seen_first - t0,
        "first_wave_per_s": GPUS / max(seen_first - t0, 1e-6),
        "release_wave_s": last_at - released_from, "release_wave_seen_s": seen_second - released_from,
        "all_started_s": last_at - t0, "all_started_seen_s": seen_second - t0,
        **batch_figures("release", releases, ok=200),
    }
    finish_everything(site)
    return found


def preempt(site) -> dict:
    """512 low jobs hold the pool and follow the event stream; 32 high submissions preempt."""
    from poolweb.models import Request as RequestRow
    from poolweb.realtime.outbox import newest_seq

    site.switch(True)
    holders = site.submit(GPUS)
    site.poll(lambda pool: pool["running"] == GPUS)
    resume_from = newest_seq()
    url = f"ws://127.0.0.1:{site.port}/ws/events/"
    ids = [[c.id for c in part] for part in _dealt(holders)]
    for pipe, token, mine in zip(site.clients.pipes, site.tokens, ids):
        pipe.send(("hold", (url, token, resume_from, mine, 30.0)))
    time.sleep(0.5)  # the streams are open (they would catch up from resume_from anyway)
    started = time.time()
    high = [site.admin.timed("POST", "/api/v1/requests", {"policy": "high", "profile": "one"})
            for _ in range(PREEMPTORS)]
    high_ids = [c.id for c in high]
    deadline = time.time() + 60
    while RequestRow.objects.filter(pk__in=high_ids, state="allocated").count() < PREEMPTORS:
        if time.time() > deadline:
            raise TimeoutError("the 32 preemptors were not all allocated within 60 s")
        time.sleep(0.005)
    seen = time.time()
    released = [pair for pipe in site.clients.pipes for pair in pipe.recv()]
    found = {"preempt_32_s": max(allocated_at(high_ids)) - started, "preempt_32_seen_s": seen - started,
             "preempt_released": len(released)}
    finish_everything(site)
    return found


def _dealt(calls: list[Call]) -> list[list[Call]]:
    """The calls of ``Clients.calls`` back per client (they come in client order, each its share)."""
    share = [len(part) for part in split(range(len(calls)), CLIENTS)]
    out, at = [], 0
    for size in share:
        out.append(calls[at:at + size])
        at += size
    return out


def single(site) -> dict:
    """One client on a quiet server."""
    site.switch(True)
    management = [site.admin.timed("GET", "/api/v1/management") for _ in range(SINGLE_CALLS * 3 // 2)]
    submits = [site.admin.timed("POST", "/api/v1/requests", {"policy": "low", "profile": "one"})
               for _ in range(SINGLE_CALLS)]
    settle()
    releases = [site.admin.timed("POST", f"/api/v1/requests/{c.id}/release") for c in submits]
    settle()
    spent = {name: latencies(calls) for name, calls in
             (("management", management), ("single_submit", submits), ("single_release", releases))}
    return {f"{name}_{p}_ms": percentile(values, int(p[1:])) for name, values in spent.items() for p in ("p50", "p95")}


def actions(site) -> dict:
    """One client (the admin, as a bridge is) renews the leases of HEARTBEATS live requests: one
    ``POST …/heartbeat`` each, then one ``POST /requests/actions`` for them all, REPEATS times
    each over its kept-alive connection; the median wall time of each (decision 141)."""
    site.switch(True)
    ids = [call.id for call in site.submit(HEARTBEATS)]
    site.poll(lambda pool: pool["running"] >= HEARTBEATS)
    body = {"action": "heartbeat", "requests": [{"id": request_id} for request_id in ids]}
    each, batch = [], []
    for _ in range(REPEATS):
        calls = [site.admin.timed("POST", f"/api/v1/requests/{request_id}/heartbeat") for request_id in ids]
        assert all(call.status == 200 for call in calls), {call.status for call in calls}
        each.append(calls[-1].ended - calls[0].started)
        started = time.time()
        status, raw = site.admin.call("POST", "/api/v1/requests/actions", body)
        batch.append(time.time() - started)
        assert status == 200 and {r["status"] for r in json.loads(raw)["results"]} == {200}, raw[:300]
    finish_everything(site)
    found = {"heartbeats_each_s": statistics.median(each), "heartbeats_batch_s": statistics.median(batch)}
    return {**found, "heartbeats_each_vs_batch": found["heartbeats_each_s"] / found["heartbeats_batch_s"]}


def flat(site) -> dict:
    """Three batches of N into one queue with the switch off, then N into a queue of 20,000."""
    site.switch(False)
    batches = [site.submit(N) for _ in range(3)]
    settle()
    _store_pending(BIG_QUEUE - 3 * N)
    site.submit(1)  # a pass judges the stored ones before the batch is timed
    settle()
    at_20k = site.submit(N)
    settle()
    rates = [rate(calls) for calls in (*batches, at_20k)]
    return _merge(*(batch_figures(name, calls) for name, calls in
                    zip(("submit_first_1000", "submit_second_1000", "submit_third_1000", "submit_at_20k"),
                        (*batches, at_20k))),
                  {"submit_per_s_at_20k": rates[3], "third_vs_first": rates[2] / rates[0],
                   "at_20k_vs_first": rates[3] / rates[0], "submit_rates_median": statistics.median(rates)})


def _store_pending(count: int) -> None:
    """``count`` pending requests stored directly, as submissions would have stored them, shared
    among the clients' users (each stays below the per-user cap on pending requests)."""
    from django.contrib.auth.models import User

    from poolweb.models import Request as RequestRow

    owners = list(User.objects.filter(username__startswith="client"))
    RequestRow.objects.bulk_create(
        [RequestRow(owner=owners[n % len(owners)], policy="low", profile="one",
                    resources={"gpu": 1000, "step_run": 1000}, message="waiting for the next pass")
         for n in range(count)], batch_size=1000)
