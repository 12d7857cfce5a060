"""``GET /metrics`` for Prometheus, and who may scrape it (decision 152).

Off (404) unless ``POOLWEB_METRICS_TOKEN`` or ``POOLWEB_METRICS_ALLOW`` is set: the numbers name
policies and pools, which a deployment may not want public. With an address list, a client
outside it gets 403 (its address as ``poolweb.addresses`` reads it, trusted proxies included);
with a token, a request without ``Authorization: Bearer <token>`` gets 401. With both, both must
hold. Refusals are plain text (Prometheus shows the body in its target's error), and a database
that cannot be read is a 503, never a 500.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from poolweb.addresses import request_address
from poolweb.metrics.exposition import exposition
from poolweb.selectors.metrics import metric_readings

log = logging.getLogger(__name__)


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = scrape_refusal(request)
    if refusal is not None:
        return refusal
    try:
        body = exposition(metric_readings())
    except DatabaseError:
        log.exception("reading the metrics failed")
        return _text(503, "the database cannot be read\n")
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


def scrape_refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer to a scrape that may not have the metrics, or None when it may."""
    token, allowed = settings.POOLWEB["METRICS_TOKEN"], settings.POOLWEB["METRICS_ALLOW"]
    if not token and not allowed:
        return _text(404, "metrics are off: set POOLWEB_METRICS_TOKEN or POOLWEB_METRICS_ALLOW\n")
    if allowed and not _address_allowed(request_address(request), allowed):
        return _text(403, "this address may not read the metrics\n")
    if token and not _bearer_matches(request.headers.get("Authorization", ""), token):
        response = _text(401, "a bearer token is needed to read the metrics\n")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return None


def _address_allowed(address: str, allowed: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # "unknown": no peer address (a Unix socket)
        return False
    return any(ip in network for network in allowed)


def _bearer_matches(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    # Compared in constant time, as bytes: a header may hold any text.
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _text(status: int, text: str) -> HttpResponse:
    return HttpResponse(text, status=status, content_type="text/plain; charset=utf-8")
