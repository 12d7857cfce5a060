"""A policy's time rules in the configuration document (docs/scheduling.md R-48, R-49, R-52, R-53).

Each is optional; absent, a policy keeps the behaviour without it. Durations are whole seconds
from 1 to 366 days:

>>> from reconcile.document_checks import Reading
>>> reading = Reading()
>>> read_time_rules(reading, {"min_runtime_seconds": 600, "on_time_limit": "requeue"}, "policies[0]")
{'min_runtime_seconds': 600, 'max_runtime_seconds': None, 'require_max_runtime': False, 'on_time_limit': 'requeue', 'max_wait_seconds': None}
>>> read_time_rules(reading, {"max_runtime_seconds": 0}, "policies[1]")["max_runtime_seconds"] is None
True
>>> [(issue.path, issue.code) for issue in reading.errors]
[('policies[1].max_runtime_seconds', 'out_of_range')]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .document_checks import Reading, json_type, show

MAX_SECONDS = 366 * 86400  # a duration of the time rules: whole seconds, 1 up to a year
ON_TIME_LIMIT = ("end", "requeue")  # what a run at its limit does; the first is the default


def read_time_rules(reading: Reading, obj: Mapping[Any, Any], path: str) -> dict[str, Any]:
    """The policy fields of the time rules, each reporting its own error (a placeholder then)."""
    return {
        "min_runtime_seconds": _seconds(reading, obj, path, "min_runtime_seconds"),
        "max_runtime_seconds": _seconds(reading, obj, path, "max_runtime_seconds"),
        "require_max_runtime": _flag(reading, obj, path, "require_max_runtime"),
        "on_time_limit": _choice(reading, obj, path, "on_time_limit", ON_TIME_LIMIT),
        "max_wait_seconds": _seconds(reading, obj, path, "max_wait_seconds"),
    }


def _seconds(reading: Reading, obj: Mapping[Any, Any], path: str, field: str) -> int | None:
    """An optional duration in whole seconds, 1 to ``MAX_SECONDS``; None when absent or null."""
    raw, at = obj.get(field), f"{path}.{field}"
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int):
        reading.error(at, "invalid_type", f"{field} is a whole number of seconds, not {json_type(raw)}")
        return None
    if not 1 <= raw <= MAX_SECONDS:
        reading.error(at, "out_of_range", f"{field} must be between 1 and {MAX_SECONDS:,} seconds")
        return None
    return raw


def _flag(reading: Reading, obj: Mapping[Any, Any], path: str, field: str) -> bool:
    """An optional boolean, false when absent."""
    raw = obj.get(field, False)
    if not isinstance(raw, bool):
        reading.error(f"{path}.{field}", "invalid_type", f"{field} is true or false, not {json_type(raw)}")
        return False
    return raw


def _choice(reading: Reading, obj: Mapping[Any, Any], path: str, field: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``, the first when absent."""
    raw = obj.get(field, choices[0])
    if raw not in choices or not isinstance(raw, str):
        reading.error(f"{path}.{field}", "invalid_choice",
                      f"{field} is one of {', '.join(map(repr, choices))}, not {show(raw)}")
        return choices[0]
    return raw
