"""A holder's action carried out on one request, as the service carries it out (R-51)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from reconcile import Decision, Request
from reconcile.transition import applied


def acted(action: Callable[[Request], Decision | None], request: Request, now: datetime) -> Request:
    """``request`` after ``action`` (``lifecycle.release``, ``cancel``…) decided on it at ``now``."""
    decision = action(request)
    return request if decision is None else applied(request, decision, now)
