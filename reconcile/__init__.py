"""Poolweb's scheduling engine: a frozen snapshot in, a plan out. Standard library only.

The rules are those of docs/scheduling.md; rule ids (R-…) are cited where they are implemented.
Each module opens with a worked example; the examples run (tests/reconcile/test_doctests.py) with
the names below, ``datetime``, ``timedelta``, ``timezone`` and ``t0`` (1 January 2026, UTC) in scope.
"""

from .model import ALL_POOLS, LIVE_STATES, UNFINISHED_STATES, Config, Policy, Pool, Profile, Quota, Request, Snapshot, State
from .plan import Decision, Plan, Waiting
from .planner import plan
from .quantity import STEP_RUN, QuantityError, Vector, format_quantity, parse_quantity
from .reasons import Reason

__all__ = [
    "ALL_POOLS", "LIVE_STATES", "UNFINISHED_STATES", "Config", "Decision", "Plan", "Policy", "Pool", "Profile", "QuantityError", "Quota",
    "Reason", "Request", "STEP_RUN", "Snapshot", "State", "Vector", "Waiting", "format_quantity", "parse_quantity",
    "plan",
]
