"""Suite-wide options: ``--slow`` runs the property tests with many more examples."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="run property tests with 20,000 examples")


def pytest_configure(config):
    common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile("ci", max_examples=2000, **common)
    settings.register_profile("slow", max_examples=20000, **common)
    settings.load_profile("slow" if config.getoption("--slow") else "ci")
