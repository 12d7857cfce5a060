"""What the service benches share: percentiles, and merging figures into results.json."""

from __future__ import annotations

import json
import statistics
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).with_name("results.json")


def percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if p < 100 else max(values)


def merge_runtime(figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into the "runtime" section; other sections and keys are kept."""
    merge_section("runtime", figures, stamp)


def merge_section(name: str, figures: dict[str, float | None], stamp: str) -> None:
    """Merge ``figures`` into section ``name``, stamped; other sections and keys are kept."""
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    section = results.get(name, {})
    section.update({key: None if value is None else round(value, 3) for key, value in figures.items()})
    section[stamp] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    results[name] = section
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
