"""The live queue pages at scale (issue 11), on a fresh SQLite database:

- ``render``: with 10,000 pending requests (and 1,000 running) on pool ``p``, the server time of
  the first render of ``/queues/p/`` (as an admin and as a member), beside the same run's
  ``GET /api/v1/pools/p/queue`` first page and a bare Django template render: median and p95.
- ``live``: ``manage.py serve`` (as ``make run`` starts it) and 50 open ``/queues/p/`` pages in real
  Chromium (5 browser contexts of 10 pages: 3 admins', 2 a member's) while 1,000 requests are
  granted — 1,000 running requests released through the REST API, 25 a second, each grant the
  head of a queue of 1,000 (``RELEASES_PER_S``). In each page a MutationObserver notes when a granted request's row
  leaves "Pending for p" (``performance.timeOrigin + now``, the machine's clock); that is compared
  with the commit (the ``created_at`` of its ``request.updated`` event, written just before the
  commit) and with its ``allocated_at`` (the pass's clock, taken before it plans). Each page's
  received seqs are checked against the outbox for what its user may see: events lost, duplicated.

Run: ``python -m bench.console`` (``make bench`` runs it). Prints a table and merges a "console"
section into bench/results.json.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench.results import child_figures, merge_section, percentile, sized

PENDING, RUNNING, GRANTS = sized((10_000, 1_000, 1_000), (40, 10, 5))
# First, one page alone (grants, releases a second): the same run's baseline of the path itself.
ALONE_GRANTS, ALONE_PER_S = (int(n) for n in os.environ.get("BENCH_CONSOLE_ALONE", sized("20,10", "3,10")).split(","))
RENDERS = sized(40, 2)
CONTEXTS, MEMBER_CONTEXTS = sized(5, 2), (1, 3)
# BENCH_CONSOLE_PAGES_PER_CONTEXT=2 runs 10 pages instead of 50 (figures merged with a suffix).
PAGES_PER_CONTEXT = int(os.environ.get("BENCH_CONSOLE_PAGES_PER_CONTEXT", sized("10", "1")))
# 25 a second: what one SQLite web process sustains beside 50 streams on a 2-CPU machine; at 100
# a second it falls behind (releases queue, and so does everything the pages wait for).
RELEASES_PER_S = float(os.environ.get("BENCH_CONSOLE_RELEASES_PER_S", "25"))
DOCUMENT = {
    "pools": [{"name": "p", "capacity": {"gpu": RUNNING}}],
    "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "p"}], "policies": ["team"]}],
    "policies": [{"name": "team", "group": "team"}],
}

# In every page before its own scripts: the stream's seqs, the queue reads, and when each row
# leaves the pending table (a move re-inserts the row at once, so it is still there then).
PROBE = """
window.__bench = { seqs: [], seen: {}, reads: 0, read_ms: 0, resyncs: 0 };
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (m) => {
      const e = JSON.parse(m.data);
      if (e.seq) window.__bench.seqs.push(e.seq);
      if (e.type === "resync") window.__bench.resyncs += 1;
    });
  }
};
const nativeFetch = window.fetch;
window.fetch = async (url, ...rest) => {
  if (!String(url).includes("/rows/pending/?")) return nativeFetch(url, ...rest); // the pending table's re-read (decision 122)
  const started = performance.now();
  const response = await nativeFetch(url, ...rest);
  window.__bench.reads += 1;
  window.__bench.read_ms += performance.now() - started;
  return response;
};
document.addEventListener("DOMContentLoaded", () => {
  const body = document.querySelector('table[data-table="pending"] tbody');
  new MutationObserver((changes) => {
    const at = performance.timeOrigin + performance.now();
    for (const change of changes) for (const node of change.removedNodes) {
      const id = node.dataset?.id;
      if (id && !(id in window.__bench.seen) && !body.querySelector(`tr[data-id="${id}"]`)) window.__bench.seen[id] = at;
    }
  }).observe(body, { childList: true });
});
"""


def main() -> None:
    figures = child_figures("console", "run", DJANGO_ALLOW_ASYNC_UNSAFE="true")
    report(figures)
    if PAGES_PER_CONTEXT == 10:
        merge_section("console", figures, "measured_at")
    else:
        pages = CONTEXTS * PAGES_PER_CONTEXT
        merge_section("console", {f"{key}_{pages}_pages": value for key, value in figures.items()
                                  if key.startswith(("commit", "alone", "live", "queue_", "events", "load"))},
                      f"measured_at_{pages}_pages")


ROWS = (
    ("render_admin_median_ms", "/queues/p/ first render, admin, median (ms)", ("<=", 300)),
    ("render_admin_p95_ms", "  p95 (ms)", ("<=", 300)),
    ("render_member_median_ms", "  member, median (ms)", ("<=", 300)),
    ("render_member_p95_ms", "  member, p95 (ms)", ("<=", 300)),
    ("baseline_api_median_ms", "  baseline: GET /api/v1/pools/p/queue page 1, median (ms)", None),
    ("baseline_api_p95_ms", "  baseline: the same, p95 (ms)", None),
    ("baseline_template_median_ms", "  baseline: a bare template render, median (ms)", None),
    ("live_pages", "open queue pages", None),
    ("live_grants", "grants", None),
    ("live_samples", "rows seen leaving the pending table (pages × grants)", None),
    ("live_unseen", "  grants a page never showed (out of its rows)", None),
    ("alone_commit_to_row_p95_ms", "one page alone, 20 grants: commit → row updated, p95 (ms)", None),
    ("commit_to_row_p50_ms", "50 pages: commit → row updated, p50 (ms)", None),
    ("commit_to_row_p95_ms", "commit → row updated, p95 (ms)", ("<=", 250)),
    ("commit_to_row_admin_p95_ms", "  admins' pages (re-read on request.updated), p95 (ms)", ("<=", 250)),
    ("commit_to_row_member_p95_ms", "  a member's pages (re-read on pool.updated), p95 (ms)", ("<=", 250)),
    ("allocated_to_row_p95_ms", "  from allocated_at (the pass's clock), p95 (ms)", None),
    ("grant_span_s", "  the 1,000 grants took (s)", None),
    ("queue_reads_per_page", "  queue re-reads per page (coalesced)", None),
    ("queue_read_mean_ms", "  one re-read of the queue as a page waited for it, mean (ms)", None),
    ("load_average", "the machine's 1-minute load average during the run (2 CPUs here)", None),
    ("events_lost", "events lost (seq gaps against the outbox)", ("<=", 0)),
    ("events_duplicated", "events received twice", ("<=", 0)),
    ("resyncs", "resyncs", ("<=", 0)),
)


def report(figures: dict) -> None:
    for key, label, goal in ROWS:
        value = figures.get(key)
        shown = "—" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))
        verdict = ""
        if goal and value is not None:
            verdict = "ok" if value <= goal[1] else f"MISSES {goal[0]} {goal[1]}"
        print(f"{label:<66} {shown:>10}  {verdict}")


# --- the child: database, render timings, the server and the browser -------------------------------

def run() -> dict:
    import django

    django.setup()
    users = prepare()
    figures = render_figures(users)
    figures.update(live_figures(users))
    return figures


def prepare() -> dict:
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.utils import timezone

    from poolweb.models import Request as RequestRow
    from poolweb.services.config import config_provision_document
    from poolweb.services.tokens import token_issue

    call_command("migrate", verbosity=0)
    admin = User.objects.create_user("admin", is_staff=True)
    member = User.objects.create_user("member")
    member.groups.add(Group.objects.create(name="team"))
    owners = [User.objects.create_user(f"owner{n}") for n in range(10)]
    config_provision_document(document=DOCUMENT, author=admin)
    now = timezone.now()
    RequestRow.objects.bulk_create([
        RequestRow(owner=owners[n % 10], policy="team", profile="one", resources={"gpu": 1000, "step_run": 1000},
                   state="allocated", reason="Granted", pool="p", allocated_at=now, lease_seconds=86400,
                   lease_expires_at=now + timezone.timedelta(days=1), message="granted on pool p")
        for n in range(RUNNING)], batch_size=1000)
    RequestRow.objects.bulk_create([
        RequestRow(owner=owners[n % 10], policy="team", profile="one", resources={"gpu": 1000, "step_run": 1000},
                   queue_pool="p", position=n + 1, reason="WaitingForCapacity", name=f"job-{n + 1}",
                   message=f"pool p is short of 1 gpu ({RUNNING} of {RUNNING} in use)") for n in range(PENDING)],
        batch_size=1000)
    return {"admin": admin, "member": member, "token": token_issue(user=admin)}


def timed(call, times: int) -> list[float]:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def render_figures(users: dict) -> dict:
    from django.template import engines
    from django.test import Client

    figures = {}
    for role in ("admin", "member"):
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(users[role])
        assert client.get("/queues/p/").status_code == 200
        spent = timed(lambda: client.get("/queues/p/"), RENDERS)
        figures.update({f"render_{role}_median_ms": statistics.median(spent), f"render_{role}_p95_ms": percentile(spent, 95)})
    api = Client(HTTP_HOST="127.0.0.1")
    api.force_login(users["member"])
    spent = timed(lambda: api.get("/api/v1/pools/p/queue"), RENDERS)
    figures.update(baseline_api_median_ms=statistics.median(spent), baseline_api_p95_ms=percentile(spent, 95))
    bare = engines["django"].from_string("<ul>{% for n in rows %}<li>{{ n }}</li>{% endfor %}</ul>")
    spent = timed(lambda: bare.render({"rows": range(100)}), RENDERS)
    figures["baseline_template_median_ms"] = statistics.median(spent)
    print(json.dumps(figures), file=sys.stderr, flush=True)
    return figures


def live_figures(users: dict) -> dict:
    from poolweb.models import Request as RequestRow

    # The live run's queue: 1,000 pending behind the 1,000 running (the render's 10,000 less the tail).
    RequestRow.objects.filter(state="pending", position__gt=GRANTS + ALONE_GRANTS).delete()
    from tests.live_server import LiveServer

    with LiveServer(os.environ, Path(os.environ["POOLWEB_DATA_DIR"]) / "server.log") as server:
        time.sleep(1.0)  # the worker is up too
        return browse(server.url, users)


def browse(base: str, users: dict) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--headless", "--no-sandbox", "--disable-gpu"])
        alone = watch(browser, base, users, [("admin", 1)], ALONE_GRANTS, ALONE_PER_S)
        figures = watch(browser, base, users, [("member" if n in MEMBER_CONTEXTS else "admin", PAGES_PER_CONTEXT)
                                               for n in range(CONTEXTS)], GRANTS, RELEASES_PER_S)
        browser.close()
    figures["alone_commit_to_row_p95_ms"] = alone["commit_to_row_p95_ms"]
    return figures


def watch(browser, base: str, users: dict, contexts: list[tuple[str, int]], grants: int, per_s: float) -> dict:
    """Open the pages (per context: whose, how many), grant ``grants``, and what the pages saw."""
    from django.conf import settings
    from django.test import Client

    from poolweb.models import Event

    pages, opened = [], []
    for role, count in contexts:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(users[role])
        context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=base)
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "url": base,
                              "value": client.cookies[settings.SESSION_COOKIE_NAME].value}])
        context.add_init_script(PROBE)
        opened.append(context)
        for _ in range(count):
            page = context.new_page()
            page.goto("/queues/p/")
            pages.append((role, page))
    for _, page in pages:
        # A selector, not wait_for_function: its polling evaluates a string, which the pages' policy refuses.
        page.wait_for_selector("[data-live][data-state='live']", timeout=60_000)
    start_seq = Event.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    span = release_all(base, users["token"], grants, per_s)
    load = os.getloadavg()[0]
    time.sleep(3.0)  # the last re-reads
    seen = [(role, page.evaluate("window.__bench")) for role, page in pages]
    for context in opened:
        context.close()
    return {**latency_figures(seen, start_seq, users, span), "load_average": load}


def release_all(base: str, token: str, count: int, per_s: float) -> float:
    """Release ``count`` running requests through the REST API, ``per_s`` a second, until as many
    pending ones are granted; how long the grants took (s)."""
    import http.client
    from urllib.parse import urlparse

    from poolweb.models import Request as RequestRow

    address = urlparse(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    blockers = list(RequestRow.objects.filter(state="allocated").order_by("allocated_at", "id")
                    .values_list("id", flat=True)[:count])
    waiting = RequestRow.objects.filter(state="pending").count() - count
    started = time.time()
    for n, request_id in enumerate(blockers):
        connection.request("POST", f"/api/v1/requests/{request_id}/release", body="{}", headers=headers)
        connection.getresponse().read()
        pause = started + (n + 1) / per_s - time.time()
        if pause > 0:
            time.sleep(pause)
    deadline = time.time() + 120
    while RequestRow.objects.filter(state="pending").count() > waiting and time.time() < deadline:
        time.sleep(0.1)
    return time.time() - started


def share(values: list[float], p: int) -> float | None:
    return percentile(values, p) if len(values) > 1 else None


def latency_figures(seen: list[tuple[str, dict]], start_seq: int, users: dict, span: float) -> dict:
    from poolweb.models import Event, Request as RequestRow

    # The outbox keeps each event's data as the JSON text the stream sends (decision 77).
    events = [(seq, owner, kind, json.loads(data), at) for seq, owner, kind, data, at in
              Event.objects.filter(seq__gt=start_seq).order_by("seq").values_list("seq", "owner_id", "type", "data",
                                                                                  "created_at")]
    committed = {data["id"]: at.timestamp() for _, _, kind, data, at in events
                 if kind == "request.updated" and data["state"] == "allocated" and data.get("position") is None
                 and data["reason"] == "Granted"}
    granted = dict(RequestRow.objects.filter(pk__in=committed).values_list("id", "allocated_at"))
    from_commit = {"admin": [], "member": []}
    from_allocated, unseen = [], 0
    for role, found in seen:
        for request_id, at_commit in committed.items():
            shown = found["seen"].get(str(request_id))
            if shown is None:
                unseen += 1
                continue
            from_commit[role].append(shown - at_commit * 1000)
            from_allocated.append(shown - granted[request_id].timestamp() * 1000)
    lost, duplicated = seq_check(seen, events, users)
    every = from_commit["admin"] + from_commit["member"]
    return {
        "live_pages": len(seen), "live_grants": len(committed), "live_samples": len(every), "live_unseen": unseen,
        "commit_to_row_p50_ms": share(every, 50), "commit_to_row_p95_ms": share(every, 95),
        "commit_to_row_admin_p95_ms": share(from_commit["admin"], 95),
        "commit_to_row_member_p95_ms": share(from_commit["member"], 95),
        "allocated_to_row_p95_ms": share(from_allocated, 95), "grant_span_s": span,
        "queue_reads_per_page": statistics.mean(found["reads"] for _, found in seen),
        "queue_read_mean_ms": sum(f["read_ms"] for _, f in seen) / max(1, sum(f["reads"] for _, f in seen)),
        "events_lost": lost, "events_duplicated": duplicated, "resyncs": sum(found["resyncs"] for _, found in seen),
    }


def seq_check(seen: list[tuple[str, dict]], events: list[tuple], users: dict) -> tuple[int, int]:
    """Events each page should have had (after the start, up to the last it got) and did not; twice."""
    lost = duplicated = 0
    member_id = users["member"].pk
    for role, found in seen:
        received = found["seqs"]
        duplicated += len(received) - len(set(received))
        last = max(received, default=0)
        expected = {seq for seq, owner, *_ in events
                    if seq <= last and (role == "admin" or owner is None or owner == member_id)}
        lost += len(expected - set(received))
    return lost, duplicated


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        print(json.dumps(run()))
    else:
        main()
