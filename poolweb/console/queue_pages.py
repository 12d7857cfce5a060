"""The live queue pages (docs/console.md): /queues/, /queues/<pool>/, the rows of one of its
tables and the "Why it waits" of one row. Thin, like every *_pages module: selectors for what the page shows,
console.queues to shape it, a template. The pages then follow the event stream; on an update the
queue page reads its rows again as this server renders them (``queue_rows``), so a row has one
markup however it arrived (templates/console/partials/queue_row.html).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from poolweb.console.context import shell_of
from poolweb.console.queues import PAGE_ROWS, pool_summary, rows, why_view
from poolweb.selectors.events import newest_seq
from poolweb.selectors.live import live_pool_exists, pool_queue, pool_running, pool_states
from poolweb.selectors.requests import audience_of
from poolweb.selectors.versions import display_names, live_site
from poolweb.selectors.waiting import request_in_pool, why_waits


@login_required
@require_GET
def queues(request: HttpRequest) -> HttpResponse:
    seq = newest_seq()  # first: an event committed while the page is read comes again, not never
    return render(request, "console/queues.html", {"pools": [pool_summary(state) for state in pool_states()],
                                                   "page": {"seq": seq}})


@login_required
@require_GET
def queue(request: HttpRequest, pool: str) -> HttpResponse:
    seq = newest_seq()
    live = live_site()  # once: every read below and the shell take its configuration
    config = live.config
    if not live_pool_exists(pool, config):
        raise Http404(f"There is no pool {pool[:40]} in the live configuration.")
    state = pool_states([pool], config)[0]
    audience, username = audience_of(request.user, config), request.user.get_username()
    running = rows(pool_running(pool)[:PAGE_ROWS], audience, username)
    pending = rows(pool_queue(pool, config)[:PAGE_ROWS], audience, username)
    return render(request, "console/queue.html", {
        **shell_of(request, live),
        "pool": pool_summary(state), "here": pool,
        "tables": [("running", f"Running on {pool}", running, state.running),
                   ("pending", f"Pending for {pool}", pending, state.pending)],
        "page": {"seq": seq, "pool": pool, "me": username, "admin": audience.is_admin, "page_rows": PAGE_ROWS,
                 "running": state.running, "pending": state.pending,
                 # whose pending requests its table lists (decision 119): a live row belongs here by its profile
                 "profiles": list(config.profiles_on.get(pool, ())),
                 "rows": {"running": [r.data for r in running], "pending": [r.data for r in pending]}},
    })


MAX_ROWS = 5000  # "Show more" asks for PAGE_ROWS more each time; a page holds this many at most
TABLES = ("running", "pending")


@login_required
@require_GET
def queue_rows(request: HttpRequest, pool: str, table: str) -> HttpResponse:
    """The first ``?limit=`` rows of the table (``running`` or ``pending``) as a ``<tbody>`` with
    the table's whole count in ``data-count``."""
    if table not in TABLES:
        raise Http404("the tables are running and pending")
    try:
        limit = int(request.GET.get("limit", PAGE_ROWS))
    except ValueError:
        return HttpResponseBadRequest("limit is a whole number")
    if not 1 <= limit <= MAX_ROWS:
        return HttpResponseBadRequest(f"limit is from 1 to {MAX_ROWS}")
    config = live_site().config  # once: the rows' selectors, the reader's teams and the names take it
    if not live_pool_exists(pool, config):
        raise Http404(f"There is no pool {pool[:40]} in the live configuration.")
    requests = pool_queue(pool, config) if table == "pending" else pool_running(pool)
    audience, username = audience_of(request.user, config), request.user.get_username()
    return render(request, "console/partials/queue_rows.html", {
        "rows": rows(requests[:limit], audience, username), "count": requests.count(), "table": table,
        "here": pool, "names": display_names(config)})


@login_required
@require_GET
def queue_why(request: HttpRequest, pool: str, request_id: int) -> HttpResponse:
    """The "Why it waits" fragment of a row of the pool's tables (templates/console/partials/why_waits.html)."""
    row = request_in_pool(pool, request_id)
    if row is None:
        raise Http404(f"request {request_id} is neither queued for nor running on {pool[:40]}")
    view = why_view(why_waits(row), audience_of(request.user), request.user.get_username())
    return render(request, "console/partials/why_waits.html", {"why": view})
