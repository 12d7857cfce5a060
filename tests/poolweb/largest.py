"""The largest configuration the limits of docs/api.md §1 allow, valid: for the tests that the
console's pages render at the limits, and for bench/config_pages.py that times them.

Every count is at its limit: 200 pools, 500 profiles, 500 policies; 2,000 connections, 5,000
queues and 5,000 quota rows in all, with the first profile at 50 connections and every policy
listed, and the first policy at 64 quota rows. Every profile is connected to the first pool
first, and every pool's execution order lists all the profiles connected to it. Vectors hold
the three or four keys a real pool has, and every text is of a real length.
"""

from __future__ import annotations

from reconcile.document import MAX_CONNECTIONS, MAX_POLICIES, MAX_POOLS, MAX_PROFILES, MAX_QUOTAS
from reconcile.document_checks import MAX_ALL_CONNECTIONS, MAX_ALL_QUEUES, MAX_ALL_QUOTAS

KEYS = ("gpu", "mcpu", "memory_mb", "ephemeral_mb")
CAPACITY = {"gpu": 8, "mcpu": 256_000, "memory_mb": 2_048_000, "ephemeral_mb": 7_000_000}


def largest_document() -> dict:
    pools = [f"pool-{i:03d}" for i in range(MAX_POOLS)]
    policies = [f"team-{i:03d}" for i in range(MAX_POLICIES)]
    links = spread(MAX_ALL_CONNECTIONS, MAX_PROFILES, MAX_CONNECTIONS)
    ranks = spread(MAX_ALL_QUEUES, MAX_PROFILES, MAX_POLICIES)
    connected: dict[str, list[str]] = {pool: [] for pool in pools}
    profile_docs = []
    for r in range(MAX_PROFILES):
        gpus = 1 + r % 8
        name = f"{gpus}xgpu-{r:03d}"
        mine = [pools[0]] + [pools[1 + (r * 7 + j) % (MAX_POOLS - 1)] for j in range(links[r] - 1)]
        for pool in mine:
            connected[pool].append(name)
        profile_docs.append({
            "name": name, "description": f"{gpus} GPUs with {8 * gpus} CPUs and {64 * gpus} GB, for training jobs",
            "resources": {"gpu": gpus, "mcpu": 8000 * gpus, "memory_mb": 64_000 * gpus},
            "connections": [{"pool": pool, "name": f"{gpus} GPU on {pool}"} for pool in mine],
            "policies": [policies[(r + k) % MAX_POLICIES] for k in range(ranks[r])]})
    pool_docs = [{"name": name, "description": f"rack {i}: 8 × H100 80GB, 256 CPUs, 2 TB", "capacity": dict(CAPACITY),
                  "execution_order": connected[name][::-1]} for i, name in enumerate(pools)]
    rows = spread(MAX_ALL_QUOTAS, MAX_POLICIES, MAX_QUOTAS)
    policy_docs = [{"name": name, "group": name, "priority": i % 100, "description": f"the share of team {i}",
                    "quotas": quota_rows(i, pools, rows[i])} for i, name in enumerate(policies)]
    return {"pools": pool_docs, "profiles": profile_docs, "policies": policy_docs}


def spread(total: int, entries: int, most: int) -> list[int]:
    """``total`` items over ``entries``: the first has ``most``, the others share the rest evenly."""
    rest, extra = divmod(total - most, entries - 1)
    return [most] + [rest + (1 if n < extra else 0) for n in range(entries - 1)]


def quota_rows(policy: int, pools: list[str], count: int) -> list[dict]:
    """``count`` rows: every key on "*" with a small reservation, then every key on one pool after
    another with a limit only (so no pool's reservations outgrow its capacity)."""
    scopes = ["*"] + [pools[(policy + s) % len(pools)] for s in range(len(pools))]
    rows = [{"scope": scope, "key": key, "limit": CAPACITY[key] * 100} for scope in scopes for key in KEYS][:count]
    for row in rows[:len(KEYS)]:
        row["reserved"] = CAPACITY[row["key"]] // 8
    return rows
