"""Who may scrape ``/metrics`` (decision 152): off unless a token or an address list is set; a
refusal is plain text, never a 500."""

from __future__ import annotations

import ipaddress

import pytest
from django.db import DatabaseError
from django.test import Client

from poolweb.env import ImproperlyConfigured, env_token
from poolweb.metrics import views
from tests.poolweb.metrics.conftest import TOKEN

pytestmark = pytest.mark.django_db


def allow(settings, *, token: str = "", networks: str = "", proxies: str = "") -> None:
    parse = lambda text: tuple(ipaddress.ip_network(n.strip()) for n in text.split(",") if n.strip())  # noqa: E731
    settings.POOLWEB = {**settings.POOLWEB, "METRICS_TOKEN": token, "METRICS_ALLOW": parse(networks),
                        "TRUSTED_PROXIES": parse(proxies)}


def get(authorization: str | None = None, address: str = "127.0.0.1", **headers):
    if authorization is not None:
        headers["HTTP_AUTHORIZATION"] = authorization
    return Client().get("/metrics", REMOTE_ADDR=address, **headers)


def test_metrics_are_off_unless_a_token_or_addresses_are_set(settings):
    allow(settings)
    response = get(f"Bearer {TOKEN}")
    assert response.status_code == 404
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert b"POOLWEB_METRICS_TOKEN" in response.content


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer wrong-token-of-length", f"Basic {TOKEN}",
                                           f"Bearer {TOKEN}x", "Bearer \u00e9\u00e9"])
def test_a_scrape_without_the_token_is_401(settings, authorization):
    allow(settings, token=TOKEN)
    response = get(authorization)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert response["Content-Type"] == "text/plain; charset=utf-8"


def test_a_scrape_with_the_token_is_answered(settings):
    allow(settings, token=TOKEN)
    assert get(f"Bearer {TOKEN}").status_code == 200
    assert get(f"bearer  {TOKEN}").status_code == 200  # the scheme's case and spaces are not the secret


def test_an_address_outside_the_list_is_403(settings):
    allow(settings, networks="10.0.0.0/8, ::1")
    assert get(address="192.0.2.1").status_code == 403
    assert get(address="10.1.2.3").status_code == 200
    assert get(address="::1").status_code == 200


def test_the_address_is_read_through_trusted_proxies_only(settings):
    allow(settings, networks="203.0.113.7", proxies="127.0.0.1")
    assert get(HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 200
    assert get(address="192.0.2.1", HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 403  # not a proxy of ours


def test_with_both_both_must_hold(settings):
    allow(settings, token=TOKEN, networks="127.0.0.1")
    assert get(f"Bearer {TOKEN}").status_code == 200
    assert get().status_code == 401
    assert get(f"Bearer {TOKEN}", address="192.0.2.1").status_code == 403


def test_only_get_and_head_are_answered(settings):
    allow(settings, token=TOKEN)
    assert Client().head("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_a_database_that_cannot_be_read_is_503_not_500(settings, monkeypatch):
    allow(settings, token=TOKEN)

    def down():
        raise DatabaseError("the server closed the connection")

    monkeypatch.setattr(views, "metric_readings", down)
    response = get(f"Bearer {TOKEN}")
    assert response.status_code == 503
    assert response["Content-Type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize("value", ["short", "sixteen chars w/ space", "caf\u00e9-token-of-length"])
def test_a_guessable_or_unprintable_token_stops_the_start(monkeypatch, value):
    monkeypatch.setenv("POOLWEB_METRICS_TOKEN", value)
    with pytest.raises(ImproperlyConfigured, match="POOLWEB_METRICS_TOKEN"):
        env_token("POOLWEB_METRICS_TOKEN")


def test_an_unset_token_is_none(monkeypatch):
    monkeypatch.delenv("POOLWEB_METRICS_TOKEN", raising=False)
    assert env_token("POOLWEB_METRICS_TOKEN") == ""
