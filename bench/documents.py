"""Pieces of configuration documents that the benches and the tests both provision: one place
for both (tests may import bench; bench never imports tests)."""

from __future__ import annotations

from typing import Any


def two_teams() -> list[dict[str, Any]]:
    """The policies of two teams that each reserve 4 GPUs over all pools; research ranks higher and
    may borrow more (limit 12 against dev's 8). A new list each call: callers change theirs."""
    return [
        {"name": "dev", "group": "dev", "quotas": [{"scope": "*", "key": "gpu", "reserved": 4, "limit": 8}]},
        {"name": "research", "group": "research", "priority": 10,
         "quotas": [{"scope": "*", "key": "gpu", "reserved": 4, "limit": 12}]},
    ]
