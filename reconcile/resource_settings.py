"""What a request asks for on a dynamic profile: ``resources``, or ``resource_settings`` converted
to resource keys (docs/api.md §3, docs/scheduling.md §1).

``resource_settings`` converts as:

- ``gpu = gpu_count`` (a quantity; 0 removes ``gpu``);
- ``mcpu = ceil(cpu_count × 1000)``;
- ``memory_mb = ceil(bytes / 10^6)``, where ``memory`` is ``<int><unit>`` with units KB, MB, GB,
  TB, PB (powers of 10) or KiB, MiB, GiB, TiB, PiB (powers of 2);
- ``pool_resources`` gives any other keys, like ``resources``; the typed fields override the
  same keys there.

Both readers return milli-units and *keep explicit zeros*, so that a key given as 0 still
overrides the profile's default for it (the service merges, then drops zeros):

>>> converted = resources_from_settings({"gpu_count": 2, "cpu_count": 4, "memory": "16GiB",
...                                      "pool_resources": {"tensorrt_sessions": 1}})
>>> Vector(converted).to_json()
{'gpu': 2, 'mcpu': 4000, 'memory_mb': 17180, 'tensorrt_sessions': 1}
>>> resources_from_settings({"gpu_count": 0, "pool_resources": {"gpu": 3}})
{'gpu': 0}
>>> resources_from_settings({"cpu_count": 0.25, "memory": "2GiB"})
{'mcpu': 250000, 'memory_mb': 2148000}

Every error names the field it is about (``path``) with a stable ``code``:

>>> try:
...     resources_from_settings({"memory": "12XB"})
... except ResourceError as error:
...     print(error.path, error.code)
resource_settings.memory invalid_memory

``step_run`` belongs to the server, which adds ``step_run: 1`` to every request; a request may
repeat that value (so a returned request object's resources can be sent back) but no other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from .document import MAX_KEYS, child
from .document_checks import json_type, show
from .quantity import KEY_PATTERN, MAX_QUANTITY, MILLI, STEP_RUN, QuantityError, parse_quantity

__all__ = ["MAX_KEYS", "ResourceError", "child", "read_resources", "resources_from_settings"]

SETTINGS_FIELDS = ("gpu_count", "cpu_count", "memory", "pool_resources")
MEMORY_UNITS = {
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
}
_MEMORY = re.compile(r"([0-9]{1,30})(" + "|".join(MEMORY_UNITS) + r")")  # matched whole
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?")
_MAX_CPU_COUNT = MAX_QUANTITY // MILLI // 1000  # so that mcpu stays a quantity (≤ 10^12)


class ResourceError(QuantityError):
    """An unacceptable resource input: ``path`` names the field, ``code`` says what is wrong."""

    def __init__(self, path: str, code: str, message: str) -> None:
        super().__init__(message)
        self.path, self.code, self.message = path, code, message


def read_resources(raw: Any, path: str = "resources") -> dict[str, int]:
    """A ``resources`` object → key → milli-units, explicit zeros kept."""
    if not isinstance(raw, Mapping):
        raise ResourceError(path, "invalid_type",
                            f"{path} is an object of resource key → quantity, not {json_type(raw)}")
    if len(raw) > MAX_KEYS:
        raise ResourceError(path, "too_many", f"{path} has {len(raw)} keys, at most {MAX_KEYS} are allowed")
    milli: dict[str, int] = {}
    for key, value in raw.items():
        at = child(path, key)
        if not (isinstance(key, str) and KEY_PATTERN.fullmatch(key)):
            raise ResourceError(at, "invalid_key",
                                f"{show(key)} is not a resource key: keys match {KEY_PATTERN.pattern}")
        milli[key] = _quantity(value, at, key)
        if key in STEP_RUN and milli[key] != STEP_RUN[key]:  # the server's key: only its own value
            raise ResourceError(at, "read_only", "step_run is set by the server to 1 for every request")
    return milli


def resources_from_settings(raw: Any, path: str = "resource_settings") -> dict[str, int]:
    """``resource_settings`` → key → milli-units, explicit zeros kept (see the module docstring)."""
    if not isinstance(raw, Mapping):
        raise ResourceError(path, "invalid_type", f"{path} is an object, not {json_type(raw)}")
    for field in raw:
        if field not in SETTINGS_FIELDS:
            raise ResourceError(child(path, field), "unknown_field",
                                f"{show(field)} is not a field of {path}: use {', '.join(SETTINGS_FIELDS)}")
    milli = read_resources(raw["pool_resources"], f"{path}.pool_resources") if "pool_resources" in raw else {}
    if "gpu_count" in raw:
        milli["gpu"] = _quantity(raw["gpu_count"], f"{path}.gpu_count", "gpu_count")
    if "cpu_count" in raw:
        milli["mcpu"] = _cpu_count(raw["cpu_count"], f"{path}.cpu_count") * MILLI
    if "memory" in raw:
        milli["memory_mb"] = _memory_mb(raw["memory"], f"{path}.memory") * MILLI
    return milli


def _quantity(value: Any, path: str, label: str) -> int:
    try:
        return parse_quantity(value)
    except (QuantityError, ValueError, ArithmeticError) as error:
        raise ResourceError(path, "invalid_quantity", f"{label} {error}") from None


def _cpu_count(value: Any, path: str) -> int:
    """ceil(cpu_count × 1000): any non-negative decimal, rounded up to a whole milli-CPU."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ResourceError(path, "invalid_quantity", f"cpu_count must be a number, not {json_type(value)}")
    text = repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ResourceError(path, "invalid_quantity", "cpu_count must be a finite number")
    if isinstance(value, str) and (len(value) > 40 or not _NUMBER.fullmatch(value)):
        raise ResourceError(path, "invalid_quantity", "cpu_count must be a decimal number such as 4 or 0.25")
    try:
        count = Decimal(text)
    except InvalidOperation:
        raise ResourceError(path, "invalid_quantity", "cpu_count must be a decimal number such as 4 or 0.25") from None
    if count < 0:
        raise ResourceError(path, "invalid_quantity", "cpu_count must not be negative")
    if count > _MAX_CPU_COUNT:
        raise ResourceError(path, "invalid_quantity", f"cpu_count must be at most {_MAX_CPU_COUNT:,}")
    return math.ceil(count * 1000)


def _memory_mb(value: Any, path: str) -> int:
    """ceil(bytes / 10^6) of ``<int><unit>``, e.g. "16GiB" → 17180."""
    if not isinstance(value, str):
        raise ResourceError(path, "invalid_type", f"memory is a string such as \"16GiB\", not {json_type(value)}")
    found = _MEMORY.fullmatch(value)
    if found is None:
        units = ", ".join(MEMORY_UNITS)
        raise ResourceError(path, "invalid_memory", f"memory must be <integer><unit> with a unit of {units}, "
                                                    f"such as \"16GiB\"; got {show(value)}")
    size = int(found.group(1)) * MEMORY_UNITS[found.group(2)]
    megabytes = -(-size // 10**6)
    if megabytes * MILLI > MAX_QUANTITY:
        raise ResourceError(path, "invalid_quantity", "memory must be at most 10^12 MB")
    return megabytes
