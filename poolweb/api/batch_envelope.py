"""What the calls on many requests share (``POST /requests/batch``, ``POST /requests/actions``;
docs/api.md §3): the envelope ``{"requests": [...], …}`` of at most ``MAX_ITEMS`` items, refused
whole when it is wrong (400 naming the field, nothing done), and the answer, one result per item
in item order, the items refused on reading beside those the service did."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from reconcile.document import Issue

MAX_ITEMS = 500  # a bridge's burst of 1,000 jobs is two calls; one call's items stay a few seconds' work

Item = TypeVar("Item")


def envelope_errors(data: Any, *, fields: Sequence[str], items: str) -> list[Issue]:
    """What is wrong with the envelope itself: a body that is not an object, a field not among
    ``fields`` (``requests`` one of them), ``requests`` missing, not a list, or of more than
    ``MAX_ITEMS``; ``items`` says what its items are, for the messages. Every error at once."""
    shape = ", ".join(f'"{field}": …' for field in fields if field != "requests")
    if not isinstance(data, Mapping):
        return [Issue("", "invalid_type", f"the body must be a JSON object {{{shape + ', ' if shape else ''}"
                                          f'"requests": [...]}}')]
    errors = [Issue(str(field)[:64], "unknown_field", f"is not a field: the body has only {' and '.join(fields)}")
              for field in data if field not in fields]
    found = data.get("requests")
    if "requests" not in data:
        errors.append(Issue("requests", "required", f"requests is required: a list of {items}"))
    elif not isinstance(found, list):
        errors.append(Issue("requests", "invalid_type", f"requests is a list of {items}"))
    elif len(found) > MAX_ITEMS:
        errors.append(Issue("requests", "too_many", f"requests has {len(found):,} items, at most {MAX_ITEMS} "
                                                     "are allowed in one call"))
    return errors


def in_item_order(items: Sequence[Item | Any], kind: type[Item], run: Callable[[list[Item]], Sequence]) -> list:
    """Each item's outcome, in item order: the items of ``kind`` go to ``run`` together (one
    service call, so one pass after them), whose outcomes come back in their order; any other
    item is the outcome already — why it was refused on reading."""
    done = iter(run([item for item in items if isinstance(item, kind)]))
    return [next(done) if isinstance(item, kind) else item for item in items]
