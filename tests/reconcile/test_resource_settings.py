"""``resources`` and the ``resource_settings`` conversion (api.md §2, S-1, reconcile/resource_settings.py).

Readers return milli-units with explicit zeros kept; each error names its field and a code.
"""

from __future__ import annotations

import pytest

from reconcile.quantity import Vector
from reconcile.resource_settings import ResourceError, read_resources, resources_from_settings


def _ids(table) -> list[str]:
    return [row[0] for row in table]


def _json(milli: dict[str, int]) -> dict:
    """Milli-units → the quantities people read, zeros kept (a zero is an explicit override)."""
    return {key: (value // 1000 if value % 1000 == 0 else value / 1000) for key, value in sorted(milli.items())}


CONVERSIONS = [
    ("S-1 the full example converts to gpu, mcpu, memory_mb and the pool key",
     {"gpu_count": 2, "cpu_count": 4, "memory": "16GiB", "pool_resources": {"tensorrt_sessions": 1}},
     {"gpu": 2, "mcpu": 4000, "memory_mb": 17180, "tensorrt_sessions": 1}),
    ("S-1 gpu_count 0 overrides the gpu of pool_resources with an explicit zero",
     {"gpu_count": 0, "pool_resources": {"gpu": 3}}, {"gpu": 0}),
    ("S-1 1GB is 1000 decimal megabytes", {"memory": "1GB"}, {"memory_mb": 1000}),
    ("S-1 2GiB rounds up to 2148 megabytes", {"memory": "2GiB"}, {"memory_mb": 2148}),
    ("S-1 cpu_count 0.25 is 250 mcpu", {"cpu_count": 0.25}, {"mcpu": 250}),
    ("cpu_count rounds up to a whole milli-CPU", {"cpu_count": "0.0001"}, {"mcpu": 1}),
    ("cpu_count as a decimal string", {"cpu_count": "1.5"}, {"mcpu": 1500}),
    ("a fractional gpu_count is a quantity", {"gpu_count": 0.5}, {"gpu": 0.5}),
    ("3 KB rounds up to one megabyte", {"pool_resources": {}, "memory": "3KB"}, {"memory_mb": 1}),
    ("1 KiB rounds up to one megabyte", {"memory": "1KiB"}, {"memory_mb": 1}),
    ("1 MiB is 1.048576 MB, rounded up to 2", {"memory": "1MiB"}, {"memory_mb": 2}),
    ("1 TB is 10^6 MB", {"memory": "1TB"}, {"memory_mb": 1_000_000}),
    ("1 TiB rounds up", {"memory": "1TiB"}, {"memory_mb": 1_099_512}),
    ("1 PB is 10^9 MB", {"memory": "1PB"}, {"memory_mb": 10**9}),
    ("1 PiB rounds up", {"memory": "1PiB"}, {"memory_mb": 1_125_899_907}),
    ("0 memory is an explicit zero", {"memory": "0GiB"}, {"memory_mb": 0}),
    ("the typed cpu_count overrides mcpu of pool_resources", {"cpu_count": 2, "pool_resources": {"mcpu": 9}},
     {"mcpu": 2000}),
    ("the typed memory overrides memory_mb of pool_resources",
     {"memory": "1GB", "pool_resources": {"memory_mb": 5, "disk": 2}}, {"disk": 2, "memory_mb": 1000}),
    ("pool_resources alone passes its keys through", {"pool_resources": {"gpu": 3, "licence": 1}},
     {"gpu": 3, "licence": 1}),
    ("pool_resources may repeat step_run: 1", {"pool_resources": {"step_run": 1}}, {"step_run": 1}),
    ("empty settings ask for nothing", {}, {}),
]


@pytest.mark.parametrize("name, given, expected", CONVERSIONS, ids=_ids(CONVERSIONS))
def test_resource_settings_convert_to_resource_keys(name, given, expected):
    assert _json(resources_from_settings(given)) == expected


def test_the_s1_example_gives_the_documented_vector_once_zeros_are_dropped():
    converted = resources_from_settings({"gpu_count": 0, "cpu_count": 4, "pool_resources": {"gpu": 3}})
    assert Vector(converted).to_json() == {"mcpu": 4000}


SETTINGS_ERRORS = [
    ("S-1 an unknown memory unit 12XB", {"memory": "12XB"}, "resource_settings.memory", "invalid_memory"),
    ("memory without a unit", {"memory": "16"}, "resource_settings.memory", "invalid_memory"),
    ("memory with a space", {"memory": "16 GiB"}, "resource_settings.memory", "invalid_memory"),
    ("memory with a fraction", {"memory": "1.5GiB"}, "resource_settings.memory", "invalid_memory"),
    ("memory in lower case", {"memory": "16gib"}, "resource_settings.memory", "invalid_memory"),
    ("negative memory", {"memory": "-1GB"}, "resource_settings.memory", "invalid_memory"),
    ("memory as a number", {"memory": 16}, "resource_settings.memory", "invalid_type"),
    ("memory above 10^12 MB", {"memory": "2000000PB"}, "resource_settings.memory", "invalid_quantity"),
    ("memory with a trailing newline", {"memory": "1GB\n"}, "resource_settings.memory", "invalid_memory"),
    ("a negative gpu_count", {"gpu_count": -1}, "resource_settings.gpu_count", "invalid_quantity"),
    ("an over-precise gpu_count", {"gpu_count": "0.0001"}, "resource_settings.gpu_count", "invalid_quantity"),
    ("a boolean gpu_count", {"gpu_count": True}, "resource_settings.gpu_count", "invalid_quantity"),
    ("a NaN gpu_count", {"gpu_count": float("nan")}, "resource_settings.gpu_count", "invalid_quantity"),
    ("a huge gpu_count", {"gpu_count": 10**13}, "resource_settings.gpu_count", "invalid_quantity"),
    ("a negative cpu_count", {"cpu_count": -0.5}, "resource_settings.cpu_count", "invalid_quantity"),
    ("an infinite cpu_count", {"cpu_count": float("inf")}, "resource_settings.cpu_count", "invalid_quantity"),
    ("a cpu_count of 'inf'", {"cpu_count": "inf"}, "resource_settings.cpu_count", "invalid_quantity"),
    ("a cpu_count in exponent notation", {"cpu_count": "1e3"}, "resource_settings.cpu_count", "invalid_quantity"),
    ("a boolean cpu_count", {"cpu_count": False}, "resource_settings.cpu_count", "invalid_quantity"),
    ("a cpu_count whose mcpu passes 10^12", {"cpu_count": 10**10}, "resource_settings.cpu_count", "invalid_quantity"),
    ("an unknown field", {"gpus": 2}, "resource_settings.gpus", "unknown_field"),
    ("settings that are not an object", [1], "resource_settings", "invalid_type"),
    ("pool_resources that are not an object", {"pool_resources": [1]}, "resource_settings.pool_resources",
     "invalid_type"),
    ("a bad key in pool_resources", {"pool_resources": {"GPU": 1}}, "resource_settings.pool_resources.GPU",
     "invalid_key"),
    ("a bad quantity in pool_resources", {"pool_resources": {"trt": "x"}}, "resource_settings.pool_resources.trt",
     "invalid_quantity"),
    ("step_run other than 1 in pool_resources", {"pool_resources": {"step_run": 2}},
     "resource_settings.pool_resources.step_run", "read_only"),
]


@pytest.mark.parametrize("name, given, path, code", SETTINGS_ERRORS, ids=_ids(SETTINGS_ERRORS))
def test_bad_resource_settings_are_refused_naming_the_field(name, given, path, code):
    with pytest.raises(ResourceError) as raised:
        resources_from_settings(given)
    assert (raised.value.path, raised.value.code) == (path, code)
    assert path.rsplit(".", 1)[-1] in raised.value.message  # the sentence names the field too


RESOURCES = [
    ("an int", {"gpu": 2}, {"gpu": 2000}),
    ("a decimal string and a float", {"gpu": "0.5", "mcpu": 0.143}, {"gpu": 500, "mcpu": 143}),
    ("an explicit zero is kept", {"gpu": 0}, {"gpu": 0}),
    ("step_run: 1 may be repeated", {"gpu": 1, "step_run": 1}, {"gpu": 1000, "step_run": 1000}),
    ("nothing", {}, {}),
]


@pytest.mark.parametrize("name, raw, milli", RESOURCES, ids=_ids(RESOURCES))
def test_resources_read_as_milli_units(name, raw, milli):
    assert read_resources(raw) == milli


RESOURCE_ERRORS = [
    ("a negative amount", {"gpu": -1}, "resources.gpu", "invalid_quantity"),
    ("NaN", {"gpu": "NaN"}, "resources.gpu", "invalid_quantity"),
    ("'inf'", {"gpu": "inf"}, "resources.gpu", "invalid_quantity"),
    ("over-precise", {"gpu": "0.0001"}, "resources.gpu", "invalid_quantity"),
    ("above 10^12", {"gpu": 10**12 + 1}, "resources.gpu", "invalid_quantity"),
    ("a boolean", {"gpu": True}, "resources.gpu", "invalid_quantity"),
    ("a list", {"gpu": [1]}, "resources.gpu", "invalid_quantity"),
    ("a key with capitals", {"GPU": 1}, "resources.GPU", "invalid_key"),
    ("a key starting with a digit", {"1gpu": 1}, "resources.1gpu", "invalid_key"),
    ("a key with a space names the object", {"g pu": 1}, "resources", "invalid_key"),
    ("a key of 65 characters", {"a" * 65: 1}, "resources", "invalid_key"),
    ("step_run other than 1", {"step_run": 3}, "resources.step_run", "read_only"),
    ("not an object", "gpu=1", "resources", "invalid_type"),
    ("too many keys", {f"k{i}": 1 for i in range(101)}, "resources", "too_many"),
]


@pytest.mark.parametrize("name, raw, path, code", RESOURCE_ERRORS, ids=_ids(RESOURCE_ERRORS))
def test_bad_resources_are_refused_naming_the_key(name, raw, path, code):
    with pytest.raises(ResourceError) as raised:
        read_resources(raw)
    assert (raised.value.path, raised.value.code) == (path, code)
