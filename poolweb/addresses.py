"""The client's address, for the sign-in throttle and the logs: one rule for requests and streams.

The peer (``REMOTE_ADDR``, a stream's ``client``) is the client, unless it is one of
``POOLWEB_TRUSTED_PROXIES``. Then ``X-Forwarded-For`` is read from the right: each proxy appends
the address it heard from, so the client is the right-most address that is not itself a trusted
proxy, and whatever stands left of it the client wrote itself. With 10.0.0.0/8 trusted, a peer of
10.0.0.5 and ``X-Forwarded-For: 1.2.3.4, 203.0.113.7, 10.0.0.9``, the client is 203.0.113.7; from
a peer that is not trusted the header is ignored, so nobody names their own address. An entry
that is not an address ends the walk at the proxy that passed it on, so no text of a client's
choosing becomes its address (a key in the database, a word in the log).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

UNKNOWN = "unknown"  # no peer address (a Unix socket); such clients share one allowance


def client_address(*, peer: str | None, forwarded_for: str | None) -> str:
    address = peer or UNKNOWN
    if not forwarded_for or not _trusted_proxy(address):
        return address
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        ip = _ip(hop)
        if ip is None:
            break  # the proxy that passed it on is as near to the client as can be told
        address = str(ip)
        if not _trusted_proxy(address):
            break
    return address


def request_address(request: HttpRequest) -> str:
    """The client of a Django request (several ``X-Forwarded-For`` headers arrive joined by commas)."""
    return client_address(peer=request.META.get("REMOTE_ADDR"), forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR"))


def scope_address(scope: dict) -> str:
    """The client of an ASGI connection (the event stream's handshake)."""
    client = scope.get("client")
    forwarded = [value.decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == b"x-forwarded-for"]
    return client_address(peer=client[0] if client else None, forwarded_for=",".join(forwarded))


def _trusted_proxy(address: str) -> bool:
    ip = _ip(address)
    return ip is not None and any(ip in network for network in settings.POOLWEB["TRUSTED_PROXIES"])


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
