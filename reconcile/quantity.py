"""Exact quantities and resource vectors (docs/scheduling.md §1).

A quantity is a decimal ≥ 0 with at most three digits after the point and at most 10^12.
Internally it is an ``int`` of milli-units, so arithmetic is exact:

>>> parse_quantity("0.5") + parse_quantity(0.5)
1000
>>> 7 * parse_quantity(0.143)
1001
>>> v = Vector.parse({"gpu": 2, "mcpu": "0"})   # zero entries are dropped
>>> dict(v), str(v + Vector.parse({"gpu": 0.5}))
({'gpu': 2000}, 'gpu=2.5')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

MILLI = 1000
MAX_QUANTITY = 10**12 * MILLI
KEY_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_DECIMAL_STRING = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
_MAX_STRING = 40  # longer than any valid quantity; refuses huge inputs before parsing them

# Keys that a pool does not check unless it lists them in its capacity (§1).
UNMETERED_BY_DEFAULT = frozenset({"mcpu", "memory_mb", "step_run"})


def unmetered_keys(capacity: Mapping[str, Any]) -> frozenset[str]:
    """The keys a pool with this capacity does not meter: those unmetered by default that it does
    not list (§1). Usage of them is never checked there, nor counted against a quota.

    >>> sorted(unmetered_keys({"gpu": 8000, "mcpu": 64000}))
    ['memory_mb', 'step_run']
    """
    return UNMETERED_BY_DEFAULT.difference(capacity)


class QuantityError(ValueError):
    """A quantity or resource vector that docs/scheduling.md §1 does not allow. The message says why."""


def parse_quantity(value: Any) -> int:
    """Parse a JSON number or decimal string into milli-units, refusing anything inexact."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise QuantityError(f"must be a number or a decimal string, not {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError("must be a finite number")
        # repr gives the shortest string that round-trips, so 0.143 stays 0.143.
        value = repr(value)
    if isinstance(value, str):
        if len(value) > _MAX_STRING or not _DECIMAL_STRING.fullmatch(value):
            raise QuantityError("must be a decimal number such as 2 or 0.5")
        value = Decimal(value)
    decimal = Decimal(value)
    if not decimal.is_finite():
        raise QuantityError("must be a finite number")
    if decimal < 0:
        raise QuantityError("must not be negative")
    if decimal > MAX_QUANTITY // MILLI:
        raise QuantityError("must be at most 10^12")
    try:
        milli = decimal * MILLI
        if milli != milli.to_integral_value():
            raise QuantityError("must have at most 3 digits after the decimal point")
    except InvalidOperation as error:  # pragma: no cover - guarded by the bounds above
        raise QuantityError("is not a valid quantity") from error
    return int(milli)


def format_quantity(milli: int) -> int | Decimal:
    """Milli-units → the number shown to people and written to JSON (2, not 2.000)."""
    if milli % MILLI == 0:
        return milli // MILLI
    return (Decimal(milli) / MILLI).normalize()


def quantity_text(milli: int) -> str:
    """Milli-units as a sentence shows them: ``quantity_text(2000)`` is "2", ``quantity_text(500)`` "0.5"."""
    return str(format_quantity(milli))


def check_key(key: Any) -> str:
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise QuantityError("resource keys match ^[a-z][a-z0-9_.-]{0,63}$")
    return key


def sum_resources(holders: Iterable[Any]) -> dict[str, int]:
    """The total of the ``resources`` of several requests, key by key."""
    total: dict[str, int] = {}
    for holder in holders:
        for key, amount in holder.resources.items():
            total[key] = total.get(key, 0) + amount
    return total


class Vector(dict):
    """An immutable resource vector: key → milli-units, zero entries dropped.

    A ``dict`` underneath, so lookups in the planner's hot loops run at C speed; every method
    that would change it raises."""

    __slots__ = ("_signature",)

    def __init__(self, milli: Mapping[str, int] | None = None) -> None:
        # Keys in name order, so equal vectors list their entries alike (see ``signature``).
        super().__init__(sorted((k, v) for k, v in (milli or {}).items() if v))
        self._signature: tuple[tuple[str, int], ...] | None = None

    @classmethod
    def parse(cls, quantities: Any) -> Vector:
        """Parse ``{"gpu": 0.5}``. Errors name the key, as ``gpu: must not be negative``."""
        if not isinstance(quantities, Mapping):
            raise QuantityError("must be an object of resource key → quantity")
        milli: dict[str, int] = {}
        for key, value in quantities.items():
            try:
                milli[check_key(key)] = parse_quantity(value)
            except QuantityError as error:
                raise QuantityError(f"{str(key)[:70]}: {error}") from None
        return cls(milli)

    @classmethod
    def of(cls, **quantities: Any) -> Vector:
        return cls.parse(quantities)

    @property
    def signature(self) -> tuple[tuple[str, int], ...]:
        """A sorted tuple of the entries: hashable and compared in C, for grouping many requests."""
        if self._signature is None:
            self._signature = tuple(self.items())
        return self._signature

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self.signature)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, Vector):
            other = {k: v for k, v in other.items() if v}  # a plain mapping may list zeros
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a Vector cannot be changed; build a new one")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _immutable  # type: ignore

    def __add__(self, other: Mapping[str, int]) -> Vector:
        total = dict(self)
        for key, value in other.items():
            total[key] = total.get(key, 0) + value
        return Vector(total)

    def __sub__(self, other: Mapping[str, int]) -> Vector:
        total = dict(self)
        for key, value in other.items():
            total[key] = total.get(key, 0) - value
        return Vector(total)

    __or__ = __ror__ = _immutable  # type: ignore

    def fits_in(self, capacity: Mapping[str, int]) -> bool:
        """True when every entry is at most the same key of ``capacity`` (absent = 0)."""
        return all(value <= capacity.get(key, 0) for key, value in self.items())

    def to_json(self) -> dict[str, int | Decimal]:
        return {key: format_quantity(value) for key, value in sorted(self.items())}

    def __reduce__(self):
        return (Vector, (dict(self),))

    def __copy__(self) -> Vector:
        return self

    def __deepcopy__(self, memo: dict) -> Vector:
        return self

    def __repr__(self) -> str:
        return f"Vector({self})"

    def __str__(self) -> str:
        return ", ".join(f"{k}={format_quantity(v)}" for k, v in sorted(self.items()))


STEP_RUN = Vector({"step_run": MILLI})  # the one job slot the server adds to every request (§1)
