"""Scraping /metrics in tests: the samples of a scrape by name and labels."""

from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "a-scrape-token-of-some-length"


@pytest.fixture
def metrics_on(settings):
    """Scrapes allowed with ``TOKEN``."""
    settings.POOLWEB = {**settings.POOLWEB, "METRICS_TOKEN": TOKEN, "METRICS_ALLOW": ()}


def scrape(**headers) -> dict[tuple[str, frozenset], float]:
    """(sample name, its labels) → value, of one authorised scrape."""
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples}


def families() -> set[str]:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return {family.name for family in text_string_to_metric_families(response.content.decode())}


def labels(**pairs) -> frozenset:
    return frozenset(pairs.items())
