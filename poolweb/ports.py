"""Is something listening? For ``manage.py serve`` and for the tests and benchmarks that start a
server process. Plain sockets, no Django: a benchmark imports this before setting Django up."""

from __future__ import annotations

import socket


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on (host, port); SO_REUSEADDR as the server uses it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (for tests and benchmarks that start a server)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]
