"""What ``/metrics`` measures inside each web process rather than reading from the database
(decision 142): the time Django takes to answer a request, by route, and the event relay's lag.
A base module, so the middleware, the relay (realtime) and ``serve`` (management) can all reach it.

Under ``serve`` every process writes them to files in ``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's
multiprocess mode; ``serve`` sets and empties the directory, see ``multiprocess_directory``), and
a scrape, whichever web process answers it, adds up every process's files. Without that variable
(the tests, an ASGI server started by hand) a scrape shows the process that answers it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime
from inspect import iscoroutinefunction
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.decorators import sync_and_async_middleware
from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
UNMATCHED = "(unmatched)"  # a path no route matches: one label value, whatever the path
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})  # others count as "other"

# No ``_created`` samples: multiprocess mode has none, so a scrape is the same with or without it.
disable_created_metrics()

# Not in prometheus_client's default registry: a scrape registers them (or, under serve, the
# files they write) in its own registry beside the families read from the database.
HTTP_DURATION = Histogram(
    "poolweb_http_request_duration_seconds", "Time from a request reaching Django to its response, by route "
    "(Django's URL pattern) and method", ["method", "route"], registry=None,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
HTTP_RESPONSES = Counter(
    "poolweb_http_responses", "Responses by route, method and status code", ["method", "route", "status"],
    registry=None)
RELAY_LAG = Histogram(
    "poolweb_event_relay_lag_seconds", "Time from an event's writing (in its decision's transaction) to a web "
    "process's relay reading it for its open streams", registry=None,
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))


def register(registry: CollectorRegistry) -> None:
    """Add these families to a scrape's ``registry``: every process's files under ``serve``, this
    process's own values otherwise."""
    if os.environ.get(MULTIPROCESS_VARIABLE):
        MultiProcessCollector(registry)
    else:
        for family in (HTTP_DURATION, HTTP_RESPONSES, RELAY_LAG):
            registry.register(family)


def multiprocess_directory(data_dir: Path) -> Path:
    """The directory ``serve``'s children share for these metrics, emptied: ``PROMETHEUS_MULTIPROC_DIR``
    when set, else ``metrics`` in the data directory. Emptied at each start, as prometheus_client
    requires (a new run's counters start from zero, which Prometheus reads as a restart); the files
    of a child that died and was started again stay, so its counts are not lost."""
    directory = Path(os.environ.get(MULTIPROCESS_VARIABLE) or data_dir / "metrics")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for leftover in directory.glob("*.db"):
        leftover.unlink()
    return directory


@sync_and_async_middleware
def http_metrics(get_response):
    """Times each request through Django (the other middleware included) by its route. First in
    ``MIDDLEWARE``; a view that raised has been turned into its error response by then."""
    if iscoroutinefunction(get_response):
        async def middleware(request: HttpRequest) -> HttpResponse:
            started = time.perf_counter()
            response = await get_response(request)
            _observe(request, response, time.perf_counter() - started)
            return response
    else:
        def middleware(request: HttpRequest) -> HttpResponse:
            started = time.perf_counter()
            response = get_response(request)
            _observe(request, response, time.perf_counter() - started)
            return response
    return middleware


def _observe(request: HttpRequest, response: HttpResponse, seconds: float) -> None:
    # The route's pattern, not the path: a label value per route, not per request id.
    match = request.resolver_match
    route = match.route if match is not None and match.route else UNMATCHED
    method = request.method if request.method in METHODS else "other"
    HTTP_DURATION.labels(method, route).observe(seconds)
    HTTP_RESPONSES.labels(method, route, str(response.status_code)).inc()


def observe_relay_lag(written: Iterator[datetime | None]) -> None:
    """The lag of each event a relay has just read, from the time its writer stamped it."""
    now = timezone.now()
    for at in written:
        if at is not None:
            RELAY_LAG.observe(max(0.0, (now - at).total_seconds()))
