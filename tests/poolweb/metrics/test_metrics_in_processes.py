"""What ``/metrics`` measures inside a web process (decision 142): Django's time per route, the
responses by status, the event relay's lag; and the directory ``serve`` shares among its children."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from poolweb.instruments import multiprocess_directory
from poolweb.realtime.outbox import Viewer
from poolweb.realtime.relay import current_relay
from tests.poolweb.events.streams import TIMEOUT, in_event_loop, pool, write
from tests.poolweb.events.streams import quick_stream  # noqa: F401 (autouse: the stream polls often)
from tests.poolweb.metrics.conftest import labels, scrape

ROUTE = "api/v1/requests/<int:id>"


def count(name: str, **pairs) -> float:
    return scrape().get((name, labels(**pairs)), 0)


def test_a_request_is_timed_by_its_route_not_its_path(db, metrics_on, bob):
    before = count("poolweb_http_request_duration_seconds_count", method="GET", route=ROUTE)
    client = Client()
    client.force_login(bob)
    for pk in (1, 2, 3):
        assert client.get(f"/api/v1/requests/{pk}").status_code == 404

    after = count("poolweb_http_request_duration_seconds_count", method="GET", route=ROUTE)
    assert after - before == 3
    assert count("poolweb_http_responses_total", method="GET", route=ROUTE, status="404") >= 3


def test_a_path_no_route_matches_and_an_odd_method_are_one_label_each(db, metrics_on):
    before = count("poolweb_http_responses_total", method="other", route="(unmatched)", status="404")
    Client().generic("BREW", "/no/such/path/1")
    Client().generic("BREW", "/no/such/path/2")

    assert count("poolweb_http_responses_total", method="other", route="(unmatched)", status="404") - before == 2


def test_the_scrape_itself_is_counted_by_the_next_one(db, metrics_on):
    first = count("poolweb_http_request_duration_seconds_count", method="GET", route="metrics")
    assert count("poolweb_http_request_duration_seconds_count", method="GET", route="metrics") == first + 1


@pytest.mark.django_db(transaction=True)
@in_event_loop
async def test_the_relay_observes_the_lag_of_each_event_it_reads(bob, metrics_on):
    """Through the relay itself: a stream that connects may catch up from the outbox instead."""
    before = await sync_to_async(count)("poolweb_event_relay_lag_seconds_count")
    relay = current_relay()
    subscription = await relay.subscribe(Viewer(bob.pk, is_admin=False))
    try:
        await write([pool(1), pool(2)])
        taken = await asyncio.wait_for(subscription.take(), TIMEOUT)
        while len(taken) < 2:
            taken += await asyncio.wait_for(subscription.take(), TIMEOUT)
    finally:
        relay.unsubscribe(subscription)

    assert await sync_to_async(count)("poolweb_event_relay_lag_seconds_count") - before == 2


def test_serve_empties_the_shared_directory_at_its_start(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "histogram_123.db").write_bytes(b"left by an earlier run")
    (directory / "notes.txt").write_text("not ours")

    assert multiprocess_directory(tmp_path) == directory
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt"]


def test_an_operators_directory_is_used_when_given(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "theirs"))
    assert multiprocess_directory(tmp_path / "data") == tmp_path / "theirs"
