"""What the benches share: the short run, percentiles, and merging figures into results.json."""

from __future__ import annotations

import json
import os
import statistics
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).with_name("results.json")
# BENCH_SHORT=1 (``make bench-smoke``, which CI runs): each module runs all its code at tiny sizes,
# once, and writes nothing to results.json, so that ``make bench`` cannot break unnoticed. Its
# figures mean nothing.
SHORT = os.environ.get("BENCH_SHORT") == "1"


def sized(full, short):
    """``full``, or ``short`` in a short run."""
    return short if SHORT else full


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if p < 100 else max(values)


def merge_runtime(figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into the "runtime" section; other sections and keys are kept."""
    merge_section("runtime", figures, stamp)


def merge_section(name: str, figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into section ``name``, stamped; other sections and keys are kept. Not
    in a short run."""
    if SHORT:
        return
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    section = results.get(name, {})
    section.update({key: None if value is None else round(value, 3) for key, value in figures.items()})
    section[stamp] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results[name] = section
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
