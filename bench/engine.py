"""How fast is one reconcile pass? Prints a table and merges an "engine" section into results.json.

A: 10,000 pending + 2,000 live requests, 100 pools, 50 policies, 40 profiles; B: 100,000 + 20,000,
1,000 pools, 80 policies, 400 profiles. Seeded: pools of 2-9 nodes (8 gpu, 96 cpu, 1 TB each; all
three keys metered), fixed profiles of 0.5-8 gpu plus dynamic ones, four priority tiers, quotas
reserving at "*" or pool scope, limits only, or none. Live requests are placed with the engine's
fit check (so I-1…I-3 hold) and fill most capacity. The floor is what any planner must do: one
Ledger.fits per pending request (its first pool, live usage) and one sort by a service-like key.
Snapshots, the floor's ledger and its quota terms are built outside the timed region; one process.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from bench.results import now, sized, update_results
from poolweb.collector import collector_paused
from reconcile import Config, Plan, Policy, Pool, Profile, Quota, Reason, Request, Snapshot, State, Vector, plan
from reconcile.ledger import Ledger
from reconcile.model import ALL_POOLS
from reconcile.quota import TermsCache, pool_terms

NOW = datetime(2026, 1, 10, tzinfo=timezone.utc)
SHAPES = (0.5, 1, 2, 4, 8)  # gpu per job of the fixed profiles
SHAPE_WEIGHT = {0.5: 15, 1: 30, 2: 25, 4: 20, 8: 10}  # how often each shape is submitted
DYNAMIC_WEIGHT = 12
PRIORITY_TIERS = (0, 0, 0, 0, 10, 10, 10, 50, 50, 100)


@dataclass(frozen=True)
class Scenario:
    pools: int
    policies: int
    profiles: int
    pending: int
    live: int  # placed while they fit; sanity reports how many were
    seed: int = 20260110


# A short run's are about as small as the generator allows: a profile takes up to 8 policies, and
# fewer pools make limits a large profile never fits (a provision refuses such a document).
A = sized(Scenario(pools=100, policies=50, profiles=40, pending=10_000, live=2_000),
          Scenario(pools=20, policies=8, profiles=8, pending=200, live=40))
A_DOUBLED = replace(A, pending=2 * A.pending)  # same pools, policies, profiles and live requests
B = sized(Scenario(pools=1_000, policies=80, profiles=400, pending=100_000, live=20_000),
          Scenario(pools=30, policies=8, profiles=16, pending=400, live=80))


# --- generation ------------------------------------------------------------------------

def vec(gpu: float, cpus: float, mem_gb: float, step_run: int = 0) -> Vector:
    """Milli-units: gpu as is, cpus → mcpu, decimal GB → memory_mb."""
    return Vector({"gpu": round(gpu * 1000), "mcpu": round(cpus * 1_000_000),
                   "memory_mb": round(mem_gb * 1_000_000), "step_run": step_run * 1000})


def make_config(sc: Scenario, rng: random.Random) -> Config:
    pool_names = [f"pool-{i:04d}" for i in range(sc.pools)]
    nodes = {name: rng.randint(2, 9) for name in pool_names}
    policy_names = [f"team-{i:03d}" for i in range(sc.policies)]
    # Connections walk a shuffled ring of pools, so (40 profiles × 1-3 pools ≈ 100) nearly all are used.
    ring, at = rng.sample(pool_names, len(pool_names)), 0
    profiles, connected = [], {name: [] for name in pool_names}
    for i in range(sc.profiles):
        dynamic, gpu = i % 8 == 7, SHAPES[i % len(SHAPES)]
        k = rng.choice((1, 2, 3, 3, 3))
        pools = [ring[(at + j) % len(ring)] for j in range(k)]
        at += k
        name = f"{'dyn' if dynamic else 'fix'}-{i:03d}-{gpu}g"
        for p in pools:
            connected[p].append(name)
        policies = tuple(rng.sample(policy_names, rng.randint(3, 8)))
        profiles.append(Profile(name, vec(gpu, 10 * gpu, 100 * gpu), dynamic, tuple(pools), policies))
    pools = tuple(
        Pool(name, vec(8 * n, 96 * n, 1000 * n),
             execution_order=tuple(rng.sample(connected[name], len(connected[name]))) if rng.random() < 0.5 else ())
        for name, n in nodes.items())
    reach = {name: sorted({p for prof in profiles if name in prof.policies for p in prof.pools}) for name in policy_names}
    total_gpu = 8 * sum(nodes.values())
    policies = tuple(Policy(name, priority=rng.choice(PRIORITY_TIERS),
                            quotas=make_quotas(i % 5, reach[name], nodes, total_gpu, rng))
                     for i, name in enumerate(policy_names))
    return Config(pools=pools, profiles=tuple(profiles), policies=policies)


def make_quotas(kind: int, reach: list[str], nodes: dict[str, int], total_gpu: int, rng: random.Random) -> tuple[Quota, ...]:
    """0, 1: reservation over all pools; 2: reservation on one or two pools; 3: limits only; 4: none."""
    gpu = lambda n: max(1, round(n)) * 1000  # whole GPUs, in milli-units
    if kind in (0, 1):
        reserved, times = gpu(total_gpu * rng.uniform(0.005, 0.02)), rng.choice((2, 3, 4))
        return reservation(ALL_POOLS, reserved, reserved * times)
    if kind == 2 and reach:
        rows: list[Quota] = []
        for pool in rng.sample(reach, min(len(reach), rng.randint(1, 2))):
            capacity = 8 * nodes[pool]
            rows += reservation(pool, gpu(capacity * rng.uniform(0.2, 0.5)), gpu(capacity * 0.8))
        return (*rows, Quota(ALL_POOLS, "gpu", None, gpu(total_gpu * 0.1)))
    if kind == 3:
        return (Quota(ALL_POOLS, "gpu", None, gpu(total_gpu * rng.uniform(0.03, 0.1))),
                Quota(ALL_POOLS, "mcpu", None, gpu(total_gpu * 12 * rng.uniform(0.03, 0.1)) * 1000))
    return ()


def reservation(scope: str, gpu: int, gpu_limit: int) -> tuple[Quota, ...]:
    """Rows for all three metered keys: a request is in share only if every metered key is (R-32.2).
    Per GPU: 12 cpus and 125 GB reserved, 16 cpus and 200 GB allowed (milli-units × 1000)."""
    return (Quota(scope, "gpu", gpu, gpu_limit), Quota(scope, "mcpu", gpu * 12_000, gpu_limit * 16_000),
            Quota(scope, "memory_mb", gpu * 125_000, gpu_limit * 200_000))


def draw(rng: random.Random, profiles: tuple[Profile, ...], weights: list[int]) -> tuple[Profile, str, Vector, bool]:
    """One submission: profile, one of its policies, resources (varied if dynamic), preemptible."""
    profile = rng.choices(profiles, cum_weights=weights)[0]
    policy = rng.choice(profile.policies)
    if profile.dynamic:
        g = rng.choice((1, 2, 3, 4, 6))
        resources = vec(g, g * rng.choice((4, 8, 12, 16)), g * rng.choice((50, 100, 150, 200)), 1)
    else:
        resources = profile.resources + {"step_run": 1000}
    return profile, policy, resources, rng.random() > 0.03


def make_snapshot(sc: Scenario) -> Snapshot:
    """Live requests are placed on their first pool that fits now, so the snapshot is consistent."""
    rng = random.Random(sc.seed)
    config = make_config(sc, rng)
    weights, running = [], 0
    for p in config.profiles:
        running += DYNAMIC_WEIGHT if p.dynamic else SHAPE_WEIGHT[p.resources["gpu"] / 1000]
        weights.append(running)
    # Teams reserving over all pools use 85% of it at most, lending the rest: their queued work reclaims.
    lent = {pol.name: 0.85 * q.reserved for pol in config.policies for q in pol.quotas
            if q.scope == ALL_POOLS and q.key == "gpu" and q.reserved}
    ledger, live, terms = Ledger(), [], TermsCache(config)
    for _ in range(20 * sc.live):
        if len(live) == sc.live:
            break
        profile, policy, resources, preemptible = draw(rng, config.profiles, weights)
        preemptible = preemptible and rng.random() > 0.08  # some live work is not preemptible
        if ledger.policy_used[(policy, ALL_POOLS)].get("gpu", 0) + resources["gpu"] > lent.get(policy, 1e18):
            continue
        for pool in profile.pools:
            if ledger.fits(terms(policy, pool), resources, preemptible):
                ledger.charge(policy, pool, resources, preemptible)
                allocated = NOW - timedelta(seconds=rng.randrange(1, 2 * 86400))
                live.append(Request(len(live) + 1, policy, profile.name, resources, allocated - timedelta(minutes=5),
                                    State.ALLOCATED, preemptible, pool=pool, allocated_at=allocated,
                                    lease_seconds=3600, lease_expires_at=NOW + timedelta(minutes=30)))
                break
    # A separate stream, so A's 10k pending are the first half of the doubled scenario's 20k.
    rng = random.Random(sc.seed + 1)
    pending = []
    while len(pending) < sc.pending:
        profile, policy, resources, preemptible = draw(rng, config.profiles, weights)
        # The backlog is mostly low priority: higher tiers are served or preempt soon after submitting.
        urgent = config.policy[policy].priority > 0
        if urgent and rng.random() > 0.02:
            continue
        submitted = NOW - timedelta(seconds=rng.randrange(1, 600 if urgent else 3 * 86400))
        pending.append(Request(10**8 + len(pending), policy, profile.name, resources, submitted, preemptible=preemptible))
    return Snapshot(NOW, config, tuple(live + pending))


# --- measurement -----------------------------------------------------------------------

def floor_task(snapshot: Snapshot) -> Callable[[], list]:
    """The floor (module doc). The in-share slot holds the fit result: one ledger check per request."""
    config = snapshot.config
    pending = [r for r in snapshot.requests if r.state == State.PENDING]
    ledger = Ledger.of_live(snapshot.requests, snapshot.config)
    first = {p.name: p.pools[0] for p in config.profiles}
    terms = {(r.policy, first[r.profile]): None for r in pending}
    terms = {(pol, pool): pool_terms(config.policy[pol], config.pool[pool]) for pol, pool in terms}
    priority = {p.name: p.priority for p in config.policies}
    execution, rank = config.execution_index, config.policy_rank

    def run() -> list:
        fits, keys = ledger.fits, []
        for r in pending:
            pool = first[r.profile]
            fit = fits(terms[(r.policy, pool)], r.resources, r.preemptible)
            keys.append((-priority[r.policy], 0 if fit else 1, execution[(pool, r.profile)],
                         rank[(r.profile, r.policy)], r.submitted_at, r.id))
        keys.sort()
        return keys
    return run


def measure(task: Callable[[], object], warmup: int, repeat: int) -> tuple[float, float]:
    """Median wall and CPU ms of ``repeat`` runs after ``warmup``; CPU shows what neighbours took."""
    for _ in range(warmup):
        task()
    wall, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        task()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000


def sanity(sc: Scenario, snapshot: Snapshot, result: Plan) -> dict:
    reasons = [d.reason for d in result.preemptions]
    return {"pools": sc.pools, "policies": sc.policies, "profiles": sc.profiles, "pending": sc.pending,
            "live": sum(1 for r in snapshot.requests if r.state.live), "grants": len(result.grants),
            "preemptions": len(reasons), "by_priority": reasons.count(Reason.PREEMPTED_BY_PRIORITY),
            "reclaims": reasons.count(Reason.RECLAIMED), "rejections": len(result.rejections),
            "still_pending": len(result.waiting)}


def bench(sc: Scenario, warmup: int, repeat: int, floor: bool = True) -> dict:
    """Plan (and floor) of one scenario; only its snapshot is in memory while it is timed. The
    passes share one TermsCache, as the service keeps one beside its configuration."""
    snapshot = make_snapshot(sc)
    terms = TermsCache(snapshot.config)

    def planned() -> Plan:  # as the service plans: with the collector paused
        with collector_paused():
            return plan(snapshot, terms)
    return {"sanity": sanity(sc, snapshot, planned()),
            "plan": measure(planned, warmup, repeat),
            "floor": measure(floor_task(snapshot), warmup, repeat) if floor else None}


# --- report ----------------------------------------------------------------------------

ROWS = (  # figure key, label, target
    ("plan_10k_ms", "plan A, 10k pending (ms)", 100), ("plan_20k_ms", "plan A, 20k pending (ms)", None),
    ("doubling_ratio", "doubling 20k / 10k", 2.3), ("floor_10k_ms", "floor A (ms)", None),
    ("floor_ratio", "plan / floor A", 4), ("plan_100k_ms", "plan B, 100k pending (ms)", 1000),
    ("floor_100k_ms", "floor B (ms)", None), ("floor_ratio_100k", "plan / floor B", 4),
)


def report(figures: dict[str, float], cpu: dict[str, float], checks: dict[str, dict]) -> None:
    print(f"{'figure':<28}{'median':>10}{'(cpu)':>10}{'target':>10}  verdict")
    for key, label, target in ROWS:
        verdict = "-" if target is None else ("ok" if figures[key] <= target else "OVER")
        print(f"{label:<28}{figures[key]:>10.2f}{f'({cpu[key]:.2f})':>10}"
              f"{'' if target is None else f'<= {target}':>10}  {verdict}")
    for name, c in checks.items():
        print(f"{name}: {c['pools']} pools, {c['live']} live, {c['pending']} pending -> {c['grants']} grants, "
              f"{c['preemptions']} preemptions ({c['by_priority']} by priority, {c['reclaims']} reclaims), "
              f"{c['rejections']} rejections, {c['still_pending']} still pending")


def write_results(figures: dict[str, float], cpu: dict[str, float], checks: dict[str, dict], load: tuple) -> None:
    """Merge the engine section into results.json; other sections (e.g. "runtime") are kept."""

    def merge(results: dict) -> None:
        results["engine"] = {**{k: round(v, 3) for k, v in figures.items()},
                             "cpu_ms": {k: round(v, 3) for k, v in cpu.items()}, "scenarios": checks}
        results["machine"] = {"python": f"{platform.python_implementation()} {platform.python_version()}",
                              "platform": platform.platform(), "cpu_count": os.cpu_count(),
                              "load_average_1min": [round(x, 2) for x in load]}  # at start and end
        results["timestamp"] = now()

    update_results(merge)


def main() -> None:
    load = [os.getloadavg()[0]]
    a, a2 = bench(A, *sized((3, 11), (0, 1))), bench(A_DOUBLED, *sized((2, 11), (0, 1)), floor=False)
    b = bench(B, *sized((1, 5), (0, 1)))
    load.append(os.getloadavg()[0])
    figures, cpu = {}, {}
    for i, out in enumerate((figures, cpu)):  # wall, then CPU
        out.update(plan_10k_ms=a["plan"][i], plan_20k_ms=a2["plan"][i], plan_100k_ms=b["plan"][i],
                   floor_10k_ms=a["floor"][i], floor_100k_ms=b["floor"][i])
        out.update(doubling_ratio=out["plan_20k_ms"] / out["plan_10k_ms"],
                   floor_ratio=out["plan_10k_ms"] / out["floor_10k_ms"],
                   floor_ratio_100k=out["plan_100k_ms"] / out["floor_100k_ms"])
    checks = {"A": a["sanity"], "A_20k": a2["sanity"], "B": b["sanity"]}
    report(figures, cpu, checks)
    write_results(figures, cpu, checks, tuple(load))


if __name__ == "__main__":
    main()
