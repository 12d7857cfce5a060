"""How right is "when it will start" (R-54)? A seeded trace replay through the engine, and the cost
of the estimate. Prints a table and merges a "time_rules" section into results.json.

The trace: four teams over a simulated day submit jobs of 1, 2, 4 and 8 gpu to two pools (h100
{gpu: 16} serves 2, 4 and 8 gpu; a100 {gpu: 8} serves 1 and 2, 2 gpu preferring a100), with Poisson
arrivals (busier in the day), run times log-normal around 30 minutes (2 minutes to 6 hours), one
priority and no quotas (nothing is preempted: the estimate does not foresee preemption, and the
replay measures the estimate, not preemption). Two teams declare run limits (the run rounded up to
5 minutes, times 1 to 1.6: people ask for more than they use), two do not. The pool is some 90 %
busy. A pass runs at every arrival and every end, with ``reconcile.plan`` and ``estimate_starts``
as the service calls them (observed run times: the median of each profile's finished runs, at
least 3, read again every 5 simulated minutes, decision 188).

Each request that waits is judged by the estimate its first pass gave (what its owner first
reads), against when it really started: the error in seconds and as a share of its wait, per
basis. The same trace again with exact limits (declared = the real run) shows what remains
when limits are right: the queue order and the arrivals after it, which no estimate knows.

Protection from churn (R-48): the same day with one team at a higher priority, so it preempts,
re-queued victims, every policy's ``min_runtime_seconds`` at 30 min against none: preemptions,
and those of a run younger than that.

No starvation (R-49): the same day, every team declaring limits (times 1 to 1.6), with every
policy's ``max_wait_seconds`` at 2 h against none: the longest and the median wait of the 8 and
4 gpu jobs, beside the bound the issue sets (the max wait plus the longest run limit declared).

Cost: CPU of ``plan`` against ``plan`` + ``estimate_starts`` at bench/engine.py's scenario A
(10^4 pending, 2,000 live), 70 % of runs and requests with limits, half the profiles observed;
and of ``plan`` with every time rule on every policy against none.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from bench.results import merge_section, percentile, sized
from reconcile import Config, Policy, Pool, Profile, Request, Snapshot, State, Vector, plan
from reconcile.eta import BASES, estimate_starts, percentiles
from reconcile import lifecycle
from reconcile.quota import terms_for
from reconcile.transition import applied, carry_out

START = datetime(2026, 3, 2, tzinfo=timezone.utc)
DAY = sized(86_400, 6 * 3_600)
SHAPES = {"g1": 1, "g2": 2, "g4": 4, "g8": 8}
SHAPE_WEIGHT = {"g1": 35, "g2": 30, "g4": 25, "g8": 10}
LEAST_RUNS, WINDOW, REFRESH = 3, 7 * 86_400, 300  # as poolweb.selectors.runtimes


@dataclass(frozen=True)
class Team:
    name: str
    jobs_per_day: int


TEAMS = (Team("vision", 90), Team("speech", 80), Team("nlp", 80), Team("infra", 70))


@dataclass(frozen=True)
class Limits:
    """Who declares run limits, and how: the run itself, or rounded up to 5 minutes after times
    1 to ``overestimate`` (people ask for more than they use)."""

    name: str
    teams: frozenset[str]
    overestimate: float | None  # None: exactly the run


ALL = frozenset(t.name for t in TEAMS)
LIMITS = (Limits("exact", ALL, None), Limits("declared", ALL, 1.6),
          Limits("half_declared", frozenset({"vision", "speech"}), 1.6), Limits("none", frozenset(), None))


def config(max_wait_seconds: int | None = None) -> Config:
    pools = (Pool("h100", Vector.of(gpu=16)), Pool("a100", Vector.of(gpu=8)))
    connected = {"g1": ("a100",), "g2": ("a100", "h100"), "g4": ("h100",), "g8": ("h100",)}
    teams = tuple(t.name for t in TEAMS)
    profiles = tuple(Profile(name, Vector.of(gpu=gpu), pools=connected[name], policies=teams)
                     for name, gpu in SHAPES.items())
    return Config(pools, profiles, tuple(Policy(name, max_wait_seconds=max_wait_seconds) for name in teams))


@dataclass(frozen=True)
class Job:
    at: int  # seconds after START
    team: str
    profile: str
    run: int  # how long it really runs
    over: float  # 0 to 1: how much more than its run it would ask for, as a share of the overestimate

    def limit(self, limits: Limits) -> int | None:
        if self.team not in limits.teams:
            return None
        if limits.overestimate is None:
            return self.run
        return math.ceil(self.run * (1 + self.over * (limits.overestimate - 1)) / 300) * 300


def trace(seed: int) -> list[Job]:
    """Arrivals of a day, busier from 8 to 20 h."""
    rng = random.Random(seed)
    jobs = []
    for team in TEAMS:
        rate = team.jobs_per_day / 86_400
        t = 0.0
        while True:
            t += rng.expovariate(rate * (1.5 if 8 <= (t / 3600) % 24 < 20 else 0.5))
            if t >= DAY:
                break
            profile = rng.choices(list(SHAPE_WEIGHT), list(SHAPE_WEIGHT.values()))[0]
            run = int(min(6 * 3600, max(120, rng.lognormvariate(math.log(1800), 0.8))))
            jobs.append(Job(int(t), team.name, profile, run, rng.random()))
    return sorted(jobs, key=lambda job: job.at)


@dataclass
class Replay:
    first_eta: dict[int, tuple[datetime | None, str]]
    submitted: dict[int, datetime]
    started: dict[int, datetime]
    plan_s: float = 0.0
    eta_s: float = 0.0
    passes: int = 0


def replay(jobs: list[Job], limits: Limits, cfg: Config | None = None) -> Replay:
    cfg = cfg or config()
    terms = terms_for(cfg, None)
    by_id = {i: job for i, job in enumerate(jobs, 1)}
    arrivals = list(by_id.items())
    ends: list[tuple[int, int]] = []  # (real end, request id)
    requests: dict[int, Request] = {}
    runs: dict[str, list[tuple[int, int]]] = defaultdict(list)  # profile → (ended at, seconds)
    observed: dict[str, int] = {}
    observed_at = -REFRESH
    out = Replay({}, {}, {})
    next_arrival = 0
    while next_arrival < len(arrivals) or ends:
        t = min(arrivals[next_arrival][1].at if next_arrival < len(arrivals) else math.inf,
                ends[0][0] if ends else math.inf)
        new = []
        while next_arrival < len(arrivals) and arrivals[next_arrival][1].at == t:
            request_id, job = arrivals[next_arrival]
            next_arrival += 1
            at = START + timedelta(seconds=t)
            requests[request_id] = Request(request_id, job.team, job.profile, Vector.of(gpu=SHAPES[job.profile], step_run=1),
                                           at, lease_seconds=86_400, max_runtime_seconds=job.limit(limits))
            out.submitted[request_id] = at
            new.append(request_id)
        while ends and ends[0][0] == t:
            _, request_id = heapq.heappop(ends)
            ended = requests.pop(request_id)
            runs[ended.profile].append((t, by_id[request_id].run))
        if t - observed_at >= REFRESH:
            observed_at = t
            recent = {profile: sorted(s for at, s in seen if at > t - WINDOW) for profile, seen in runs.items()}
            observed = {profile: percentiles(seen) for profile, seen in recent.items() if len(seen) >= LEAST_RUNS}
        snapshot = Snapshot(START + timedelta(seconds=t), cfg, tuple(requests[i] for i in sorted(requests)))
        began = time.process_time()
        decided = plan(snapshot, terms)
        planned = time.process_time()
        etas = estimate_starts(snapshot, decided, observed)
        out.plan_s += planned - began
        out.eta_s += time.process_time() - planned
        out.passes += 1
        assert not decided.preemptions and not decided.expiries, "the replay foresees no preemption or end by limit"
        for request_id in new:
            if request_id in etas:
                out.first_eta[request_id] = (etas[request_id].at, etas[request_id].basis)
        for grant in decided.grants:
            requests[grant.request_id] = replace(requests[grant.request_id], state=State.ALLOCATED, pool=grant.pool,
                                                 allocated_at=snapshot.now, time_limit_at=grant.time_limit_at,
                                                 lease_expires_at=snapshot.now + timedelta(days=1))
            out.started[grant.request_id] = snapshot.now
            heapq.heappush(ends, (t + by_id[grant.request_id].run, grant.request_id))
    return out


def errors(result: Replay) -> dict[str, dict[str, float | int]]:
    """Per basis: how many waited, and the median and 90th percentile of the estimate's error, in
    seconds and as a share of the wait; "late" the share of estimates later than the real start."""
    by_basis: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
    for request_id, (eta, basis) in result.first_eta.items():
        start, submitted = result.started.get(request_id), result.submitted[request_id]
        if start is None:
            continue
        wait = (start - submitted).total_seconds()
        if eta is None or wait <= 0:
            by_basis[basis].append((math.nan, math.nan, False))
            continue
        error = abs((eta - start).total_seconds())
        by_basis[basis].append((error, error / wait, eta > start))
    figures = {}
    for basis in BASES:
        rows = by_basis.get(basis, [])
        known = [(e, r, late) for e, r, late in rows if not math.isnan(e)]
        entry: dict[str, float | int] = {"waited": len(rows)}
        if len(known) >= 2:  # a percentile needs two
            seconds, shares = [e for e, _, _ in known], [r for _, r, _ in known]
            entry.update(error_median_s=statistics.median(seconds), error_p90_s=percentile(seconds, 90),
                         error_median_of_wait=statistics.median(shares), error_p90_of_wait=percentile(shares, 90),
                         late_share=sum(late for _, _, late in known) / len(known))
        figures[basis] = entry
    return figures


def by_size(result: Replay, jobs: list[Job]) -> dict[str, dict[str, float | int]]:
    """Per profile (job size): how many waited with an estimate, and the median error as a share
    of the wait, signed (below 0: it started later than estimated)."""
    shares: dict[str, list[float]] = defaultdict(list)
    for request_id, (eta, _) in result.first_eta.items():
        start = result.started.get(request_id)
        wait = (start - result.submitted[request_id]).total_seconds() if start else 0
        if eta is not None and wait > 0:
            shares[jobs[request_id - 1].profile].append((eta - start).total_seconds() / wait)
    return {profile: {"waited": len(found), "signed_error_median_of_wait": statistics.median(found)}
            for profile, found in sorted(shares.items())}


MAX_WAIT = 2 * 3600  # R-49 in the starvation replay and the cost: every team reserves after 2 h


def starvation(jobs: list[Job]) -> dict[str, float]:
    """R-49: the longest wait of an 8 gpu job with every team's max_wait_seconds at 2 h against
    none, all teams declaring limits (times 1 to 1.6); the bound is the max wait plus the longest
    run limit declared."""
    limits = LIMITS[1]
    bound = MAX_WAIT + max(job.limit(limits) for job in jobs)
    figures = {"starvation_bound_h": bound / 3600}
    for name, cfg in (("off", config()), ("on", config(MAX_WAIT))):
        result = replay(jobs, limits, cfg)
        for profile in ("g8", "g4"):
            waits = [(result.started[i] - result.submitted[i]).total_seconds() for i, job in enumerate(jobs, 1)
                     if job.profile == profile and i in result.started]
            figures[f"starvation_{name}_{profile}_longest_wait_h"] = max(waits) / 3600
            figures[f"starvation_{name}_{profile}_median_wait_h"] = statistics.median(waits) / 3600
        figures[f"starvation_{name}_plan_ms_per_pass"] = result.plan_s * 1000 / result.passes
    return figures


PROTECTION = 1800  # R-48 in the churn replay: half an hour


def churn(jobs: list[Job]) -> dict[str, float]:
    """R-48: the same day with one team ("vision") at a higher priority, so it preempts the others,
    with every policy's ``min_runtime_seconds`` at 30 min against none: how many preemptions, and
    how many took a run younger than 30 min (goal with the rule: none). Victims stop at the end of
    the grace (30 s) and are re-queued (3 retries); every change goes through ``carry_out``."""
    figures: dict[str, float] = {}
    for name, protection in (("off", None), ("on", PROTECTION)):
        cfg = config()
        cfg = replace(cfg, policies=tuple(replace(p, priority=10 if p.name == "vision" else 0,
                                                  min_runtime_seconds=protection) for p in cfg.policies))
        preempted, young = _churn_replay(jobs, cfg)
        figures[f"churn_{name}_preemptions"], figures[f"churn_{name}_preempted_young"] = preempted, young
    return figures


def _churn_replay(jobs: list[Job], cfg: Config) -> tuple[int, int]:
    """(preemptions, those of a run younger than PROTECTION) over the day."""
    events = [(job.at, "arrive", i) for i, job in enumerate(jobs, 1)]
    heapq.heapify(events)
    snapshot, terms = Snapshot(START, cfg), terms_for(cfg, None)
    started: dict[int, int] = {}  # request → when its current run started
    preemptions = young = 0
    while events:
        t = events[0][0]
        now = START + timedelta(seconds=t)
        requests = {r.id: r for r in snapshot.requests}
        while events and events[0][0] == t:
            _, kind, request_id = heapq.heappop(events)
            if kind == "arrive":
                job = jobs[request_id - 1]
                requests[request_id] = Request(request_id, job.team, job.profile,
                                               Vector.of(gpu=SHAPES[job.profile], step_run=1), now,
                                               lease_seconds=86_400, max_retries=3)
            elif kind == "end" and requests[request_id].state is State.ALLOCATED and started.get(request_id) == t - jobs[request_id - 1].run:
                requests[request_id] = applied(requests[request_id], lifecycle.release(requests[request_id]), now)
        snapshot = replace(snapshot, now=now, requests=tuple(requests[i] for i in sorted(requests)))
        decided = plan(snapshot, terms)
        for grant in decided.grants:
            started[grant.request_id] = t
            heapq.heappush(events, (t + jobs[grant.request_id - 1].run, "end", grant.request_id))
        for victim in decided.preemptions:  # a grant of this pass may be one (decision 6)
            preemptions += 1
            young += t - started[victim.request_id] < PROTECTION
            heapq.heappush(events, (t + 31, "grace", victim.request_id))
        if decided.wake_at is not None:
            heapq.heappush(events, (math.ceil((decided.wake_at - START).total_seconds()), "wake", 0))
        snapshot = carry_out(snapshot, decided)
    return preemptions, young


def timed_snapshot_at_10k() -> Snapshot:
    """bench/engine.py's scenario A, 70 % of runs and requests with limits."""
    from bench.engine import A, make_snapshot

    snapshot = make_snapshot(A)
    rng = random.Random(7)
    timed = []
    for request in snapshot.requests:
        if rng.random() < 0.7:
            request = (replace(request, time_limit_at=snapshot.now + timedelta(seconds=rng.randint(60, 36_000)))
                       if request.state.live else replace(request, max_runtime_seconds=rng.randint(60, 36_000)))
        timed.append(request)
    return replace(snapshot, requests=tuple(timed))


def cost_at_10k() -> dict[str, float]:
    """CPU ms of plan() and of estimate_starts() at scenario A, median of 11 interleaved; and of plan() with
    every time rule on every policy (protection 10 min, a cap of 10 h, a max wait of 2 h: about
    half the pending requests are past it) against none, interleaved."""
    snapshot = timed_snapshot_at_10k()
    ruled = replace(snapshot, config=replace(snapshot.config, policies=tuple(
        replace(p, min_runtime_seconds=600, max_runtime_seconds=36_000, max_wait_seconds=MAX_WAIT)
        for p in snapshot.config.policies)))
    observed = {profile.name: (600, 1200, 1800, 3600, 7200) for profile in snapshot.config.profiles[::2]}
    terms, ruled_terms = terms_for(snapshot.config, None), terms_for(ruled.config, None)
    decided = plan(snapshot, terms)
    plan_ms, eta_ms, ruled_ms = [], [], []
    for _ in range(sized(11, 1)):
        began = time.process_time()
        plan(snapshot, terms)
        plan_ms.append((time.process_time() - began) * 1000)
        began = time.process_time()
        estimate_starts(snapshot, decided, observed)
        eta_ms.append((time.process_time() - began) * 1000)
        began = time.process_time()
        plan(ruled, ruled_terms)
        ruled_ms.append((time.process_time() - began) * 1000)
    plan_median, eta_median, ruled_median = map(statistics.median, (plan_ms, eta_ms, ruled_ms))
    overdue = sum(1 for r in ruled.requests if not r.state.live and ruled.now - r.submitted_at > timedelta(seconds=MAX_WAIT))
    return {"plan_10k_ms": plan_median, "eta_10k_ms": eta_median, "pass_ratio_10k": (plan_median + eta_median) / plan_median,
            "plan_10k_rules_on_ms": ruled_median, "rules_on_ratio_10k": ruled_median / plan_median,
            "overdue_10k": overdue}


def report(name: str, result: Replay, figures: dict) -> None:
    print(f"\n{name}: {len(result.submitted)} jobs, {result.passes} passes; plan {result.plan_s * 1000:.0f} ms, "
          f"estimate {result.eta_s * 1000:.0f} ms CPU in all")
    print(f"  {'basis':<18} {'waited':>6} {'median s':>9} {'p90 s':>8} {'median/wait':>12} {'p90/wait':>9} {'late':>5}")
    for basis, entry in figures.items():
        if "error_median_s" in entry:
            print(f"  {basis:<18} {entry['waited']:>6} {entry['error_median_s']:>9.0f} {entry['error_p90_s']:>8.0f} "
                  f"{entry['error_median_of_wait']:>12.0%} {entry['error_p90_of_wait']:>9.0%} {entry['late_share']:>5.0%}")
        else:
            print(f"  {basis:<18} {entry['waited']:>6}")


def flat(prefix: str, figures: dict) -> dict[str, float]:
    return {f"{prefix}_{basis}_{key}": value for basis, entry in figures.items() for key, value in entry.items()}


def main() -> None:
    results: dict[str, float] = {}
    jobs = trace(20260302)
    for limits in LIMITS:
        result = replay(jobs, limits)
        figures = errors(result)
        report(f"limits {limits.name}", result, figures)
        results.update(flat(limits.name, figures))
        results[f"{limits.name}_pass_ratio"] = (result.plan_s + result.eta_s) / result.plan_s
        if limits.name == "exact":
            sizes = by_size(result, jobs)
            print("  by size, the median signed error as a share of the wait: " + ", ".join(
                f"{profile} {entry['signed_error_median_of_wait']:+.0%} ({entry['waited']})" for profile, entry in sizes.items()))
            results.update(flat("exact_size", sizes))
    starved = starvation(jobs)
    print(f"\nR-49, max wait {MAX_WAIT // 3600} h, limits declared (bound: max wait + longest limit = "
          f"{starved['starvation_bound_h']:.1f} h): longest wait of an 8 gpu job "
          f"{starved['starvation_on_g8_longest_wait_h']:.1f} h, without R-49 {starved['starvation_off_g8_longest_wait_h']:.1f} h; "
          f"4 gpu {starved['starvation_on_g4_longest_wait_h']:.1f} h against {starved['starvation_off_g4_longest_wait_h']:.1f} h; "
          f"median 8 gpu wait {starved['starvation_on_g8_median_wait_h']:.2f} h against "
          f"{starved['starvation_off_g8_median_wait_h']:.2f} h")
    results.update(starved)
    churned = churn(jobs)
    print(f"R-48, vision at a higher priority: {churned['churn_on_preemptions']:.0f} preemptions with a protection of "
          f"{PROTECTION // 60} min, {churned['churn_on_preempted_young']:.0f} of a run younger than that (goal: 0); "
          f"without it {churned['churn_off_preemptions']:.0f}, {churned['churn_off_preempted_young']:.0f} of them young")
    results.update(churned)
    cost = cost_at_10k()
    print(f"\nat 10^4 pending: plan {cost['plan_10k_ms']:.1f} ms, estimate {cost['eta_10k_ms']:.1f} ms CPU: "
          f"the pass x{cost['pass_ratio_10k']:.2f} (goal <= 1.5); plan with every time rule on every policy "
          f"({cost['overdue_10k']} requests past their max wait) {cost['plan_10k_rules_on_ms']:.1f} ms: "
          f"x{cost['rules_on_ratio_10k']:.2f} (goal <= 1.5)")
    results.update(cost)
    merge_section("time_rules", results, "eta_timestamp")


if __name__ == "__main__":
    main()
