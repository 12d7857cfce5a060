"""The client's address (poolweb/addresses.py): the peer's, unless the peer is one of
``POOLWEB_TRUSTED_PROXIES``; then the right-most ``X-Forwarded-For`` address that is not itself
one. The sign-in throttle counts by it, so a forged header gets nobody fresh tries."""

from __future__ import annotations

import ipaddress

import pytest
from rest_framework.test import APIClient

from poolweb.addresses import client_address, scope_address
from poolweb.env import ImproperlyConfigured, env_networks
from poolweb.management.commands.serve import web_server_command

PROXIES = "10.0.0.0/8, ::1"


@pytest.fixture
def proxies(settings):
    settings.POOLWEB = {**settings.POOLWEB, "TRUSTED_PROXIES": tuple(
        ipaddress.ip_network(p.strip()) for p in PROXIES.split(","))}


@pytest.mark.parametrize("peer, forwarded_for, expected", [
    ("203.0.113.7", "1.2.3.4", "203.0.113.7"),  # not a proxy: its header is its own word
    ("10.0.0.5", None, "10.0.0.5"),
    ("10.0.0.5", "1.2.3.4, 203.0.113.7, 10.0.0.9", "203.0.113.7"),  # left of the first stranger: forged
    ("10.0.0.5", "203.0.113.7,,10.9.9.9 ", "203.0.113.7"),
    ("::1", "2001:db8::1", "2001:db8::1"),
    ("10.0.0.5", "10.1.1.1, 10.2.2.2", "10.1.1.1"),  # proxies all the way: the farthest
    ("10.0.0.5", "203.0.113.7, evil\n", "10.0.0.5"),  # not an address: the proxy that passed it on
    ("10.0.0.5", "203.0.113.7, 10.1.1.1, 198.51.100.1:443", "10.0.0.5"),  # nor is one with a port
    (None, "1.2.3.4", "unknown"),
])
def test_the_client_is_the_peer_or_the_right_most_address_no_trusted_proxy_wrote(proxies, peer, forwarded_for,
                                                                                  expected):
    assert client_address(peer=peer, forwarded_for=forwarded_for) == expected


def test_without_trusted_proxies_the_header_is_never_read():
    assert client_address(peer="127.0.0.1", forwarded_for="1.2.3.4") == "127.0.0.1"


def test_a_stream_reads_its_handshake_the_same_way(proxies):
    scope = {"client": ("10.0.0.5", 5000), "headers": [(b"x-forwarded-for", b"1.2.3.4"),
                                                       (b"X-Forwarded-For", b"203.0.113.7")]}
    assert scope_address(scope) == "203.0.113.7"


@pytest.mark.django_db
def test_clients_behind_a_trusted_proxy_are_throttled_apart_and_a_forged_header_counts_nothing(proxies, settings):
    settings.POOLWEB = {**settings.POOLWEB, "AUTH_FAILURES": 2}

    def wrong_token(peer: str, forwarded_for: str) -> int:
        return APIClient().get("/api/v1/pools", HTTP_AUTHORIZATION="Bearer wrong", REMOTE_ADDR=peer,
                               HTTP_X_FORWARDED_FOR=forwarded_for).status_code

    assert [wrong_token("10.0.0.5", "198.51.100.1") for _ in range(3)] == [401, 401, 429]
    assert wrong_token("10.0.0.5", "198.51.100.2") == 401  # another client behind the same proxy
    assert [wrong_token("203.0.113.9", f"198.51.100.{n}") for n in range(10, 13)] == [401, 401, 429]


def test_the_setting_takes_addresses_and_networks_and_refuses_anything_else(monkeypatch):
    monkeypatch.setenv("POOLWEB_TRUSTED_PROXIES", " 127.0.0.1, 10.0.0.0/8 ,::1")
    assert env_networks("POOLWEB_TRUSTED_PROXIES") == tuple(
        ipaddress.ip_network(n) for n in ("127.0.0.1/32", "10.0.0.0/8", "::1/128"))
    monkeypatch.setenv("POOLWEB_TRUSTED_PROXIES", "10.0.0.0/8, proxy.example")
    with pytest.raises(ImproperlyConfigured, match="POOLWEB_TRUSTED_PROXIES must be comma-separated"):
        env_networks("POOLWEB_TRUSTED_PROXIES")


def test_no_proxy_is_trusted_unless_configured_not_even_by_the_web_server(settings):
    assert settings.POOLWEB["TRUSTED_PROXIES"] == ()
    assert "--no-proxy-headers" in web_server_command("127.0.0.1", 8000, 1)  # uvicorn trusts 127.0.0.1 itself
