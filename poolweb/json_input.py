"""JSON from outside — an API body, the console editor's fragments, ``manage.py config import`` —
read within bounds, so that no input turns into a 500 or a traceback (decision 92).

Python's reader fails in two ways that are no syntax error: nesting deeper than the interpreter's
recursion limit (``RecursionError``) and an integer of more than 4,300 digits (``ValueError``
from ``int``). Here nesting is bounded by that limit at the parse, and an integer by
``MAX_DIGITS``; either is a ``JSONRefused`` carrying one ``Issue``, the integer's naming where it
is::

    >>> try:
    ...     read_json('{"pools": [{"capacity": {"gpu": ' + "9" * 101 + '}}]}')
    ... except JSONRefused as refused:
    ...     print(refused.issue)
    Issue(path='pools[0].capacity.gpu', code='invalid_number', message='a number has at most 100 digits')

NaN and Infinity are not JSON, as DRF's strict parser says.
"""

from __future__ import annotations

import json
from typing import Any

from reconcile.document import Issue, child

MAX_DIGITS = 100  # no integer Poolweb reads has more than 19 (a 64-bit id); Python's 4,300 is never reached


class JSONRefused(ValueError):
    def __init__(self, issue: Issue) -> None:
        super().__init__(f"{issue.path}: {issue.message}" if issue.path else issue.message)
        self.issue = issue


class _LongInteger:
    """Stands in for an integer past ``MAX_DIGITS`` until the parse is done and its path is known."""


def read_json(text: str | bytes) -> Any:
    long: list[_LongInteger] = []

    def integer(digits: str) -> int | _LongInteger:
        if len(digits.lstrip("-")) <= MAX_DIGITS:
            return int(digits)
        long.append(_LongInteger())
        return long[-1]

    try:
        value = json.loads(text, parse_int=integer, parse_constant=_not_json)
    except RecursionError:
        raise JSONRefused(Issue("", "malformed_json", "the JSON nests too deeply")) from None
    except ValueError as error:  # a syntax error, NaN, text that is not UTF-8
        raise JSONRefused(Issue("", "malformed_json", str(error).splitlines()[0])) from None
    if long:
        raise JSONRefused(Issue(_path_of(value, long[0]), "invalid_number",
                                f"a number has at most {MAX_DIGITS} digits"))
    return value


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _path_of(value: Any, wanted: object) -> str:
    """Where ``wanted`` is in ``value`` (``pools[0].capacity.gpu``); a walk without recursion,
    since the value may nest as deep as the parse allowed."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if item is wanted:
            return path
        if isinstance(item, dict):
            stack += [(inner, child(path, key)) for key, inner in reversed(item.items())]
        elif isinstance(item, list):
            stack += [(inner, f"{path}[{i}]") for i, inner in reversed(list(enumerate(item)))]
    return ""
