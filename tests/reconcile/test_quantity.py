"""Exact quantities and resource vectors (docs/scheduling.md §1, reconcile/quantity.py).

A quantity is a decimal ≥ 0 with at most 3 digits after the point and at most 10^12, kept as
integer milli-units; a vector maps resource keys (^[a-z][a-z0-9_.-]{0,63}$) to quantities and
drops zero entries. Each table row names the rule it covers, here always §1 (ids say "sec1").
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from reconcile.quantity import QuantityError, Vector, check_key, format_quantity, parse_quantity


def _ids(table) -> list[str]:
    return [row[0] for row in table]


# --- exact arithmetic ---------------------------------------------------------------------

ARITHMETIC = [
    ("sec1 0.5 + 0.5 is exactly 1", parse_quantity("0.5") + parse_quantity(0.5), 1000),
    ("sec1 7 x 0.143 is exactly 1.001", 7 * parse_quantity(0.143), 1001),
    ("sec1 6 x 0.143 is 0.858, under one gpu", 6 * parse_quantity("0.143"), 858),
    ("sec1 0.1 + 0.2 is exactly 0.3 (no float drift)", parse_quantity(0.1) + parse_quantity(0.2), parse_quantity("0.3")),
    ("sec1 8 x 0.125 is exactly 1", 8 * parse_quantity(0.125), parse_quantity(1)),
    ("sec1 a vector sum of halves is exact", (Vector.of(gpu=0.5) + Vector.of(gpu="0.5"))["gpu"], 1000),
]


@pytest.mark.parametrize("name, got, expected", ARITHMETIC, ids=_ids(ARITHMETIC))
def test_arithmetic_on_quantities_is_exact(name, got, expected):
    assert (got, type(got)) == (expected, int)


# --- parse_quantity: what it accepts --------------------------------------------------------

ACCEPTED = [
    ("sec1 an int", 2, 2000),
    ("sec1 zero", 0, 0),
    ("sec1 a decimal string", "2.5", 2500),
    ("sec1 a decimal string with three decimals", "0.143", 143),
    ("sec1 a JSON float 0.143 exactly", 0.143, 143),
    ("sec1 a JSON float 0.5", 0.5, 500),
    ("sec1 a float with an integral value", 3.0, 3000),
    ("sec1 a Decimal", Decimal("1.25"), 1250),
    ("sec1 the smallest step 0.001", "0.001", 1),
    ("sec1 exactly 10^12 as an int", 10**12, 10**15),
    ("sec1 exactly 10^12 as a string", "1000000000000", 10**15),
    ("sec1 10^12 - 0.001 as a string", "999999999999.999", 10**15 - 1),
]


@pytest.mark.parametrize("name, value, milli", ACCEPTED, ids=_ids(ACCEPTED))
def test_parse_quantity_accepts_exact_decimals_as_milli_units(name, value, milli):
    assert parse_quantity(value) == milli


# --- parse_quantity: what it refuses, and why -----------------------------------------------

REFUSED = [
    ("sec1 a negative int", -1, "must not be negative"),
    ("sec1 a negative decimal string", "-0.001", "must not be negative"),
    ("sec1 a negative float", -0.5, "must not be negative"),
    ("sec1 NaN", float("nan"), "must be a finite number"),
    ("sec1 infinity", float("inf"), "must be a finite number"),
    ("sec1 minus infinity", float("-inf"), "must be a finite number"),
    ("sec1 a Decimal NaN", Decimal("NaN"), "must be a finite number"),
    ("sec1 the string NaN", "NaN", "must be a decimal number such as 2 or 0.5"),
    ("sec1 the string Infinity", "Infinity", "must be a decimal number such as 2 or 0.5"),
    ("sec1 10^12 + 1", 10**12 + 1, "must be at most 10^12"),
    ("sec1 10^12 + 0.001 as a string", "1000000000000.001", "must be at most 10^12"),
    ("sec1 a float above 10^12", 1e13, "must be at most 10^12"),
    ("sec1 four decimals in a string", "0.1434", "must have at most 3 digits after the decimal point"),
    ("sec1 four decimals in a float", 0.0005, "must have at most 3 digits after the decimal point"),
    ("sec1 float drift 0.1 + 0.2", 0.1 + 0.2, "must have at most 3 digits after the decimal point"),
    ("sec1 True", True, "must be a number or a decimal string, not bool"),
    ("sec1 False", False, "must be a number or a decimal string, not bool"),
    ("sec1 None", None, "must be a number or a decimal string, not NoneType"),
    ("sec1 a list", [1], "must be a number or a decimal string, not list"),
    ("sec1 a dict", {"gpu": 1}, "must be a number or a decimal string, not dict"),
    ("sec1 a huge string", "1" * 10_000, "must be a decimal number such as 2 or 0.5"),
    ("sec1 exponent notation 1e3", "1e3", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a float printed with an exponent", 1e-7, "must be a decimal number such as 2 or 0.5"),
    ("sec1 an empty string", "", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a leading point", ".5", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a trailing point", "1.", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a leading space", " 1", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a unit suffix", "2GiB", "must be a decimal number such as 2 or 0.5"),
    ("sec1 a trailing newline", "1\n", "must be a decimal number such as 2 or 0.5"),
]


@pytest.mark.parametrize("name, value, message", REFUSED, ids=_ids(REFUSED))
def test_parse_quantity_refuses_anything_inexact_and_says_why(name, value, message):
    with pytest.raises(QuantityError) as raised:
        parse_quantity(value)
    assert str(raised.value) == message


# --- format_quantity ------------------------------------------------------------------------

FORMATTED = [
    ("sec1 whole numbers come back as ints", 2000, 2),
    ("sec1 zero is 0", 0, 0),
    ("sec1 halves keep one decimal", 2500, Decimal("2.5")),
    ("sec1 a MIG slice keeps three decimals", 143, Decimal("0.143")),
    ("sec1 trailing zeros are dropped", 1200, Decimal("1.2")),
    ("sec1 10^12 stays an int", 10**15, 10**12),
]


@pytest.mark.parametrize("name, milli, shown", FORMATTED, ids=_ids(FORMATTED))
def test_format_quantity_shows_the_shortest_exact_number(name, milli, shown):
    got = format_quantity(milli)
    assert (got, type(got), str(got)) == (shown, type(shown), str(shown))


# --- resource keys ---------------------------------------------------------------------------

KEYS = [
    ("sec1 gpu", "gpu", True),
    ("sec1 one letter", "a", True),
    ("sec1 digits, dot, dash and underscore after the first letter", "nvidia.com_mig-1g.5gb", True),
    ("sec1 64 characters", "a" * 64, True),
    ("sec1 65 characters", "a" * 65, False),
    ("sec1 an upper-case letter", "GPU", False),
    ("sec1 a leading digit", "1gpu", False),
    ("sec1 a leading underscore", "_gpu", False),
    ("sec1 a leading dash", "-gpu", False),
    ("sec1 a space", "gpu count", False),
    ("sec1 a slash", "nvidia.com/gpu", False),
    ("sec1 empty", "", False),
    ("sec1 not a string", 7, False),
    ("sec1 a trailing newline", "gpu\n", False),
]


@pytest.mark.parametrize("name, key, valid", KEYS, ids=_ids(KEYS))
def test_resource_keys_match_the_key_pattern(name, key, valid):
    try:
        check_key(key)
        accepted = True
    except QuantityError:
        accepted = False
    assert accepted == valid


# --- vectors ---------------------------------------------------------------------------------

VECTORS = [
    ("sec1 zero entries are dropped", Vector.parse({"gpu": 2, "mcpu": "0", "lic": 0.0}), {"gpu": 2000}),
    ("sec1 + adds key by key", Vector.of(gpu=1, mcpu=500) + Vector.of(gpu=0.5, lic=1),
     {"gpu": 1500, "mcpu": 500_000, "lic": 1000}),
    ("sec1 - subtracts and drops what reaches zero", Vector.of(gpu=2, mcpu=500) - Vector.of(gpu=2, mcpu=100),
     {"mcpu": 400_000}),
    ("sec1 - keeps a key absent on the left as negative", Vector.of(gpu=1) - Vector.of(lic=1),
     {"gpu": 1000, "lic": -1000}),
    ("sec1 + of an empty vector changes nothing", Vector.of(gpu=0.143) + Vector(), {"gpu": 143}),
    ("sec1 the empty vector", Vector.parse({}), {}),
]


@pytest.mark.parametrize("name, vector, milli", VECTORS, ids=_ids(VECTORS))
def test_vectors_hold_milli_units_without_zero_entries(name, vector, milli):
    assert (dict(vector), isinstance(vector, Vector)) == (milli, True)


def test_vectors_compare_equal_to_mappings_ignoring_zero_entries_and_hash_alike():
    a, b = Vector.of(gpu=1), Vector.parse({"gpu": "1.000", "mcpu": 0})
    assert (a == b, a == {"gpu": 1000, "lic": 0}, a == {"gpu": 1001}, hash(a) == hash(b)) == (True, True, False, True)


FITS_IN = [
    ("sec1 equal fits", Vector.of(gpu=8), Vector.of(gpu=8), True),
    ("sec1 0.001 over does not fit", Vector.of(gpu=8.001), Vector.of(gpu=8), False),
    ("sec1 every key must fit", Vector.of(gpu=1, lic=3), Vector.of(gpu=8, lic=2), False),
    ("sec1 a key absent from the capacity counts as 0", Vector.of(gpu=1, lic=1), Vector.of(gpu=8), False),
    ("sec1 a key only in the capacity does not matter", Vector.of(gpu=1), Vector.of(gpu=1, lic=4), True),
    ("sec1 the empty vector fits in anything", Vector(), Vector(), True),
    ("sec1 fractions: 0.858 fits in 1", Vector.of(gpu=0.858), Vector.of(gpu=1), True),
    ("sec1 fractions: 1.001 does not fit in 1", Vector.of(gpu=1.001), Vector.of(gpu=1), False),
]


@pytest.mark.parametrize("name, demand, capacity, fits", FITS_IN, ids=_ids(FITS_IN))
def test_fits_in_compares_every_key_against_the_capacity(name, demand, capacity, fits):
    assert demand.fits_in(capacity) is fits


TO_JSON = [
    ("sec1 whole and fractional numbers", Vector.of(mcpu=4000, gpu=0.5), {"gpu": Decimal("0.5"), "mcpu": 4000}),
    ("sec1 keys come out sorted", Vector.of(step_run=1, gpu=2, lic=1), {"gpu": 2, "lic": 1, "step_run": 1}),
    ("sec1 zeros never appear", Vector.parse({"gpu": 0, "lic": 1}), {"lic": 1}),
]


@pytest.mark.parametrize("name, vector, shown", TO_JSON, ids=_ids(TO_JSON))
def test_to_json_writes_exact_numbers_in_key_order(name, vector, shown):
    got = vector.to_json()
    assert (got, list(got)) == (shown, list(shown))


PARSE_ERRORS = [
    ("sec1 a negative amount names its key", {"gpu": 1, "mcpu": -1}, "mcpu: must not be negative"),
    ("sec1 four decimals name the key", {"gpu": "0.1234"}, "gpu: must have at most 3 digits after the decimal point"),
    ("sec1 NaN names the key", {"gpu": float("nan")}, "gpu: must be a finite number"),
    ("sec1 too large names the key", {"lic": 10**13}, "lic: must be at most 10^12"),
    ("sec1 a bool names the key", {"gpu": True}, "gpu: must be a number or a decimal string, not bool"),
    ("sec1 a bad key is named", {"GPU": 1}, "GPU: resource keys match ^[a-z][a-z0-9_.-]{0,63}$"),
    ("sec1 a huge key is cut to 70 characters", {"x" * 200: 1}, "x" * 70 + ": resource keys match ^[a-z][a-z0-9_.-]{0,63}$"),
    ("sec1 not an object", [("gpu", 1)], "must be an object of resource key → quantity"),
    ("sec1 None is not an object", None, "must be an object of resource key → quantity"),
]


@pytest.mark.parametrize("name, quantities, message", PARSE_ERRORS, ids=_ids(PARSE_ERRORS))
def test_vector_parse_errors_name_the_offending_key(name, quantities, message):
    with pytest.raises(QuantityError) as raised:
        Vector.parse(quantities)
    assert str(raised.value) == message


def test_a_vector_cannot_be_changed_in_place():
    vector = Vector.of(gpu=1)
    with pytest.raises(TypeError):
        vector["gpu"] = 2  # type: ignore[index]
    assert dict(vector) == {"gpu": 1000}
