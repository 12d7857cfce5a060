"""docs/metrics.md and the Grafana dashboard name only families ``/metrics`` exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.poolweb.metrics.test_metrics_values import FAMILIES

DOCS = Path(__file__).resolve().parents[3] / "docs"
NAME = re.compile(r"\bpoolweb_[a-z_]+")
SUFFIXES = ("_bucket", "_count", "_sum", "_total")


def family(sample: str) -> str:
    for suffix in SUFFIXES:
        if sample.endswith(suffix) and sample.removesuffix(suffix) in FAMILIES:
            return sample.removesuffix(suffix)
    return sample


def test_the_dashboard_queries_exported_families():
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = {family(name) for expr in exprs for name in NAME.findall(expr)}
    assert named and named <= FAMILIES, named - FAMILIES


def test_the_documented_families_and_alerts_are_exported():
    named = {family(name) for name in NAME.findall((DOCS / "metrics.md").read_text())}
    assert named == FAMILIES
