"""How fast is a month's usage report (docs/usage.md) over 1,000,000 history rows? On SQLite and
PostgreSQL, each in a child process with a throwaway database (bench/runtime.py's way).

A seeded synthetic month: 8 pools of 64 GPUs, 20 policies reserving 0–16 GPUs over all pools, 40
profiles of 1–8 GPUs, 200 users. Jobs arrive through the month (a policy's every ~3 minutes),
wait up to 10 minutes, run ~20 minutes (exponential), so each policy holds ~7 allocations at a
time and most policies are above their reservation much of the month (the sweep's costly case);
one job in ten is preempted and granted again. Each job writes 3 history rows (pending,
allocated, released), a preempted one 6; rows are written until there are ``ROWS``.
A provision in the middle of the month changes half the reservations.

- ``report_ms``: ``GET /api/v1/usage`` for the month, by policy, as an admin, through Django's
  whole stack (test client), its closed days kept (decision 163): the report as everyone after the
  first reads it; ``report_user_ms`` by user. Median of ``REPEAT``.
- ``report_cut_ms``: a month from noon to noon (a rolling "last 30 days" is cut so): 29 days kept
  and two half days swept from the history each time.
- ``report_cold_ms``: the same with no day kept yet (the first report of the month, which keeps
  them): the whole sweep of the history. Once.
- Baselines on the same rows in the same run: ``count_ms``, ``SELECT count(*)`` of the history;
  ``intervals_ms``, the interval query alone (sql.usage), so the rest is the sweep and grouping.
- ``pass_beside_report_ms``: then scenario A's queue is added (bench/metrics.py's: 100 pools, 50
  policies, 10,000 pending, 1,000 running; its configuration provisioned now, after the month, so
  the month's reports are unchanged) and the first pass after the 10,000 arrived, as the pass loop
  runs it, is timed while another process asks for the month's report (``GET /api/v1/usage`` by
  policy, days kept) without pause, beside ``pass_alone_report_ms``, the same pass alone,
  alternately (bench/beside.py: CPU times, load average, the reporter's CPU share, the rest of
  the machine's, and the rounds in which the rest of the machine was quiet). A report with
  its days kept reads no history: ``pass_beside_sweep_ms`` is the same beside the first report's
  sweep of the month (what ``GET /usage`` computes when no day is kept: one read of the 10^6 rows,
  then the sweep), its days not kept so that it can repeat; a pass begins as the sweep does, so it
  runs beside the history's read.
Merges figures into the "usage" section of results.json.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from bench.beside import print_beside
from bench.engine import A
from bench.results import merge_section, sized
from bench.runtime import figures_on_both, print_both

ROWS = sized(1_000_000, 2_000)
REPEAT = sized(3, 1)
PASS_REPEAT = sized(9, 1)
QUEUE = replace(A, live=sized(1_000, 20))  # bench/metrics.py's
REPORTERS = ("report", "sweep")  # what runs beside a pass: bench.usage <kind>_forever
MONTH = timedelta(days=30)
START = datetime(2026, 10, 1, tzinfo=timezone.utc)
POOLS, POLICIES, PROFILES, USERS = 8, 20, 40, 200
SEED = 21

FIGURES = (  # key, label, target
    ("report_ms", "GET /usage, a month by policy, days kept (ms)", 1000),
    ("report_cut_ms", "GET /usage, noon to noon, days kept (ms)", None),
    ("report_cold_ms", "GET /usage, a month by policy, first (ms)", None),
    ("report_user_ms", "GET /usage, a month by user (ms)", None),
    ("intervals_ms", "  the interval query alone (ms)", None),
    ("count_ms", "  baseline: SELECT count(*) of the history (ms)", None),
    ("rows", "  history rows", None),
    ("allocations", "  allocations in the month", None),
    ("pass_beside_report_ms", "a pass, 10k pending, beside reports (ms)", None),
    ("pass_alone_report_ms", "  baseline: the same pass alone (ms)", None),
    ("pass_beside_report_cpu_ms", "  its CPU time beside (ms)", None),
    ("pass_alone_report_cpu_ms", "  baseline: its CPU time alone (ms)", None),
    ("report_cpu_pct", "  the reporter's CPU, % of the pass's wall time", None),
    ("others_cpu_pct_beside_report", "  the rest of the machine's CPU, % of it", None),
    ("others_cpu_pct_alone_report", "  the same, the pass alone", None),
    ("pass_load_report", "  load average (1 min) as the passes began", None),
    ("pass_beside_sweep_ms", "a pass beside the first report's sweeps (ms)", None),
    ("pass_alone_sweep_ms", "  baseline: the same pass alone (ms)", None),
    ("pass_beside_sweep_cpu_ms", "  its CPU time beside (ms)", None),
    ("pass_alone_sweep_cpu_ms", "  baseline: its CPU time alone (ms)", None),
    ("sweep_cpu_pct", "  the sweeper's CPU, % of the pass's wall time", None),
    ("others_cpu_pct_beside_sweep", "  the rest of the machine's CPU, % of it", None),
    ("others_cpu_pct_alone_sweep", "  the same, the pass alone", None),
    ("pass_load_sweep", "  load average (1 min) as the passes began", None),
)


def main() -> None:
    figures = figures_on_both("usage", "measure")
    print_both(FIGURES, figures, digits=0)
    print_beside(figures, "report", "a process asking for the month's report without pause")
    print_beside(figures, "sweep", "a process sweeping the month's history without pause")
    merge_section("usage", figures, "measured_at")


def document(reserved: list[int]) -> dict:
    pools = [{"name": f"p{i}", "capacity": {"gpu": 64}} for i in range(POOLS)]
    profiles = [{"name": f"f{i}", "resources": {"gpu": 1 + i % 8},
                 "connections": [{"pool": f"p{(i + k) % POOLS}"} for k in range(2)],
                 "policies": [f"t{j}" for j in range(POLICIES) if j % 4 == i % 4]} for i in range(PROFILES)]
    policies = [{"name": f"t{j}", "group": f"g{j}",
                 "quotas": [{"scope": "*", "key": "gpu", "reserved": reserved[j]}] if reserved[j] else []}
                for j in range(POLICIES)]
    return {"pools": pools, "profiles": profiles, "policies": policies}


def history(random_: random.Random, users: list[int]):
    """(request columns, its changes) until ``ROWS`` changes; times as datetimes."""
    written = 0
    month = MONTH.total_seconds()
    while written < ROWS:
        profile = random_.randrange(PROFILES)
        policy = random_.choice([j for j in range(POLICIES) if j % 4 == profile % 4])
        pools = [(profile + k) % POOLS for k in range(2)]
        submitted = START + timedelta(seconds=random_.uniform(0, month))
        changes = [(submitted, "pending", None)]
        at = submitted + timedelta(seconds=random_.uniform(0, 600))
        if random_.random() < 0.1:  # preempted once: preempting, back to pending, granted again
            ran = timedelta(seconds=random_.expovariate(1 / 1200))
            pool = f"p{random_.choice(pools)}"
            changes += [(at, "allocated", pool), (at + ran, "preempting", pool),
                        (at + ran + timedelta(seconds=30), "pending", None)]
            at += ran + timedelta(seconds=30 + random_.uniform(0, 600))
        changes.append((at, "allocated", f"p{random_.choice(pools)}"))
        at += timedelta(seconds=random_.expovariate(1 / 1200))
        changes.append((at, "released", None))
        written += len(changes)
        yield ((f"t{policy}", f"f{profile}", random_.choice(users), {"gpu": 1000 * (1 + profile % 8), "step_run": 1000},
                submitted, at), changes)


def measure() -> dict[str, float]:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from bench.runtime import setup_database
    from poolweb.models import ConfigVersion
    from poolweb.services.config import config_provision_document
    from poolweb.sql.usage import allocation_intervals

    admin = setup_database()
    random_ = random.Random(SEED)
    reserved = [random_.choice([0, 4, 8, 16]) for _ in range(POLICIES)]
    first = config_provision_document(document=document(reserved), author=admin)
    ConfigVersion.objects.filter(pk=first.pk).update(created_at=START - timedelta(days=1))
    second = config_provision_document(document=document([r // 2 if j % 2 else r for j, r in enumerate(reserved)]),
                                       author=admin)
    ConfigVersion.objects.filter(pk=second.pk).update(created_at=START + MONTH / 2)
    User.objects.bulk_create([User(username=f"user{i}") for i in range(USERS)])
    users = list(User.objects.exclude(pk=admin.pk).values_list("pk", flat=True))
    started = time.perf_counter()
    requests = _write(list(history(random_, users)))
    print(f"wrote {ROWS} history rows of {requests} requests in {time.perf_counter() - started:.0f} s",
          file=sys.stderr)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    client = Client(HTTP_HOST="localhost")
    client.force_login(admin)

    def get(by: str, cut: timedelta = timedelta(0)) -> float:
        began = time.perf_counter()
        response = client.get("/api/v1/usage", {"since": (START + cut).isoformat(),
                                                 "until": (START + MONTH + cut).isoformat(), "by": by})
        assert response.status_code == 200, response.content[:300]
        return (time.perf_counter() - began) * 1000

    def count() -> float:
        began = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM poolweb_requestchange")
            cursor.fetchone()
        return (time.perf_counter() - began) * 1000

    def intervals() -> float:
        began = time.perf_counter()
        allocation_intervals(START, START + MONTH)
        return (time.perf_counter() - began) * 1000

    allocations = len(allocation_intervals(START, START + MONTH))
    from poolweb.models import UsageDay

    UsageDay.objects.all().delete()
    cold = get("policy")
    return {
        "report_cold_ms": cold,
        "report_ms": statistics.median(get("policy") for _ in range(REPEAT)),
        "report_user_ms": statistics.median(get("user") for _ in range(REPEAT)),
        "report_cut_ms": statistics.median(get("policy", timedelta(hours=12)) for _ in range(REPEAT)),
        "intervals_ms": statistics.median(intervals() for _ in range(REPEAT)),
        "count_ms": statistics.median(count() for _ in range(REPEAT)),
        "rows": ROWS, "allocations": allocations,
        **_passes_beside_reports(admin),
    }


def _passes_beside_reports(user) -> dict[str, float]:
    """Scenario A's queue added, its configuration provisioned now; then the pass alone and beside
    each reporter (bench/beside.py)."""
    from django.utils import timezone as django_time

    from bench.beside import pass_alone_and_beside
    from bench.engine import make_snapshot
    from bench.runtime import _json_ready, _row, provision
    from poolweb.models import Request as RequestRow
    from reconcile.document_writer import to_document

    scenario = make_snapshot(QUEUE)
    provision(_json_ready(to_document(scenario.config)), user)
    shift = django_time.now() - scenario.now
    RequestRow.objects.bulk_create([_row(r, user, shift) for r in scenario.requests], batch_size=2000)
    figures: dict[str, float] = {}
    for kind in REPORTERS:
        figures.update(pass_alone_and_beside("usage", f"{kind}_forever", PASS_REPEAT, kind))
    return figures


def report_forever() -> None:
    """The month's report by policy, days kept, as everyone after the first reads it, until killed."""
    from django.contrib.auth.models import User
    from django.test import Client

    from bench.beside import busy_until_killed

    client = Client(HTTP_HOST="localhost")
    client.force_login(User.objects.get(username="bench"))
    month = {"since": START.isoformat(), "until": (START + MONTH).isoformat(), "by": "policy"}
    assert client.get("/api/v1/usage", month).status_code == 200
    busy_until_killed(lambda: client.get("/api/v1/usage", month))


def sweep_forever() -> None:
    """What the month's first report computes (no day kept yet: one read of the history, then the
    sweep, a piece per day), its days not kept so that it can repeat, until killed."""
    from django.db import connection

    from bench.beside import busy_until_killed
    from poolweb.selectors.usage import DAY, _computed

    connection.ensure_connection()
    days = [(day, day + DAY) for day in range(int(START.timestamp()), int((START + MONTH).timestamp()), DAY)]
    busy_until_killed(lambda: _computed(days))


def _write(jobs: list) -> int:
    """The requests and their changes, by COPY on PostgreSQL and executemany on SQLite."""
    from django.db import connection

    request_columns = ("id", "name", "policy", "profile", "owner_id", "resources", "preemptible", "max_retries",
                       "attempt", "lease_seconds", "labels", "state", "reason", "message", "submitted_at",
                       "updated_at", "finished_at", "grant_order", "eta_basis")
    change_columns = ("request_id", "at", "state", "reason", "message", "attempt", "pool")
    request_rows, change_rows = [], []
    for id, ((policy, profile, owner, resources, submitted, finished), changes) in enumerate(jobs, start=1):
        request_rows.append((id, "", policy, profile, owner, json.dumps(resources), True, 1, 1, 300, "{}",
                             "released", "Released", "", submitted, finished, finished, 0, ""))
        attempt = 1
        for at, state, pool in changes:
            attempt += state == "pending" and at != submitted
            change_rows.append((id, at, state, "Granted", "", attempt, pool))
    with connection.cursor() as cursor:
        for table, columns, rows in (("poolweb_request", request_columns, request_rows),
                                     ("poolweb_requestchange", change_columns, change_rows)):
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cursor.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
                                   f"({', '.join(['%s'] * len(columns))})",
                                   [tuple(v.strftime('%Y-%m-%d %H:%M:%S.%f') if isinstance(v, datetime) else v for v in row)
                                    for row in rows])
        if connection.vendor == "postgresql":
            cursor.execute("SELECT setval(pg_get_serial_sequence('poolweb_request', 'id'), %s)", [len(jobs)])
    return len(jobs)


if __name__ == "__main__":
    if sys.argv[1:] == ["measure"]:
        print(json.dumps(measure()))
    elif sys.argv[1:2] and sys.argv[1].endswith("_forever"):
        import django

        django.setup()
        {"report_forever": report_forever, "sweep_forever": sweep_forever}[sys.argv[1]]()
    else:
        main()
