"""The live queue pages (docs/console.md): /queues/, /queues/<pool>/ and the "Why it waits" of one
of its rows. Thin, like views.py: selectors for what the page shows, console.queues to shape it,
a template. The pages then follow the event stream and read the REST API from their JavaScript.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from poolweb.console.queues import PAGE_ROWS, pool_summary, rows, why_view
from poolweb.selectors.events import newest_seq
from poolweb.selectors.live import live_pool_exists, pool_queue, pool_running, pool_states
from poolweb.selectors.requests import audience_of
from poolweb.selectors.versions import display_names
from poolweb.selectors.waiting import request_in_pool, why_waits


@login_required
@require_GET
def queues(request: HttpRequest) -> HttpResponse:
    seq = newest_seq()  # first: an event committed while the page is read comes again, not never
    return render(request, "console/queues.html", {"pools": [pool_summary(state) for state in pool_states()],
                                                   "names": display_names(), "page": {"seq": seq}})


@login_required
@require_GET
def queue(request: HttpRequest, pool: str) -> HttpResponse:
    seq = newest_seq()
    if not live_pool_exists(pool):
        raise Http404(f"There is no pool {pool[:40]} in the live configuration.")
    state = pool_states([pool])[0]
    audience, username = audience_of(request.user), request.user.get_username()
    running = rows(pool_running(pool)[:PAGE_ROWS], audience, username)
    pending = rows(pool_queue(pool)[:PAGE_ROWS], audience, username)
    return render(request, "console/queue.html", {
        "pool": pool_summary(state), "names": display_names(),
        "tables": [("running", f"Running on {pool}", running, state.running),
                   ("pending", f"Pending for {pool}", pending, state.pending)],
        "page": {"seq": seq, "pool": pool, "me": username, "admin": audience.is_admin, "page_rows": PAGE_ROWS,
                 "running": state.running, "pending": state.pending,
                 "rows": {"running": [r.data for r in running], "pending": [r.data for r in pending]}},
    })


@login_required
@require_GET
def queue_why(request: HttpRequest, pool: str, request_id: int) -> HttpResponse:
    """The "Why it waits" fragment of a row of the pool's tables (templates/console/partials/why_waits.html)."""
    row = request_in_pool(pool, request_id)
    if row is None:
        raise Http404(f"request {request_id} is neither queued for nor running on {pool[:40]}")
    view = why_view(why_waits(row), audience_of(request.user), request.user.get_username())
    return render(request, "console/partials/why_waits.html", {"why": view})
