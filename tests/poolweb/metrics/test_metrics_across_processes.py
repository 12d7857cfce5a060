"""``/metrics`` as deployed: two uvicorn web processes (``serve``'s web server) answer scrapes on
one socket, and a pass runs in a third process (``manage.py reconcile --once``, standing in for
the pass loop). Every scrape, whichever process answers it, says what that pass decided:
nothing is counted in a process (decision 150); and what the web processes time, each in its
own file, is added up (decision 142)."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.poolweb import processes
from tests.poolweb.conftest import request_row
from tests.poolweb.metrics.conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(transactional_db, tmp_path, settings) -> Iterator[str]:
    settings.POOLWEB = {**settings.POOLWEB, "WEB_PROCESSES": 2}  # the web server's command is made here
    with processes.live_server(tmp_path, web_only=True, POOLWEB_METRICS_TOKEN=TOKEN) as live:
        yield live.url


def grants(url: str) -> tuple[float, frozenset]:
    """The grants counted, and the families, of one scrape on a connection of its own."""
    request = urllib.request.Request(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    families = list(text_string_to_metric_families(text))
    counted = sum(sample.value for family in families if family.name == "poolweb_grants" for sample in family.samples
                  if sample.name == "poolweb_grants_total")
    return counted, frozenset(family.name for family in families)


def test_every_web_process_answers_with_what_a_pass_in_another_process_decided(server, provisioned, bob):
    for _ in range(2):
        request_row(bob, "dev", "4xgpu", 4)
    assert {grants(server)[0] for _ in range(4)} == {0}

    finished = processes.start("manage.py", "reconcile", "--once")
    assert finished.wait(60) == 0, processes.stop(finished)

    answers = {grants(server) for _ in range(8)}  # new connections, which the kernel hands to either process
    assert len(answers) == 1 and next(iter(answers))[0] == 2


@pytest.fixture
def shared_server(transactional_db, tmp_path, settings) -> Iterator[str]:
    """Two web processes sharing a multiprocess directory, as ``serve`` runs them (decision 142)."""
    settings.POOLWEB = {**settings.POOLWEB, "WEB_PROCESSES": 2}
    with processes.live_server(tmp_path, web_only=True, POOLWEB_METRICS_TOKEN=TOKEN,
                               PROMETHEUS_MULTIPROC_DIR=str(tmp_path)) as live:
        yield live.url


def health_checks(url: str) -> float:
    request = urllib.request.Request(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "poolweb_http_request_duration_seconds_count"
               and sample.labels == {"method": "GET", "route": "api/v1/health"})


def timed_by_each_process(directory: Path) -> list[float]:
    """The health checks each web process timed, read from its own file alone."""
    counts = []
    for file in directory.glob("histogram_*.db"):
        alone = directory / f"alone-{file.stem}"
        alone.mkdir()
        shutil.copy(file, alone)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        counts.append(registry.get_sample_value("poolweb_http_request_duration_seconds_count",
                                                {"method": "GET", "route": "api/v1/health"}) or 0)
    return counts


def test_every_web_process_answers_with_the_requests_all_of_them_timed(shared_server, tmp_path):
    for _ in range(20):  # new connections, which the kernel hands to either process
        with pytest.raises(urllib.error.HTTPError, match="401"):  # signed out; timed all the same
            urllib.request.urlopen(f"{shared_server}/api/v1/health", timeout=10)

    each = timed_by_each_process(tmp_path)
    assert len(each) == 2 and min(each) > 0 and sum(each) == 20  # both served, neither saw it all alone
    assert {health_checks(shared_server) for _ in range(8)} == {20}
