"""The Slurm bridge's bench (bench/slurm_bridge.py, decision 146): where the gated run's time
goes, the comparison with the peer, and the table. Pure functions of the runs, Poolweb's rows and
the bridge's profile (bench/slurm_bridge_timing.py)."""

from __future__ import annotations

import re
import statistics
import sys
from typing import TYPE_CHECKING

from bench.results import percentile

if TYPE_CHECKING:
    from bench.slurm_bridge import Run

GOAL_FIRST_WAVE_S = 1.0  # the gated run's first wave at most this much behind the peer's
GOAL_ALL_STARTED = 0.20  # ... and all started at most this much longer


def where_the_time_goes(gated: Run, profile: dict) -> dict[str, float]:
    """The gated run's milestones (``milestones``), and the bridge's polls from t0 to the last
    start: their parts and calls (``poll_figures``), their timeline on stderr."""
    end = max(gated.started.values())
    polls = [poll for poll in profile["polls"] if gated.t0 <= poll["start"] <= end]
    between = [(at, seconds) for at, thread, kind, seconds in profile.get("background", [])
               if thread == "between polls" and kind == "part scontrol grant" and gated.t0 <= at <= end]
    print_polls(polls, between, gated.t0)
    return {**milestones(gated, profile["granted"], profile.get("heard", {})), **poll_figures(polls),
            **background_figures(profile.get("background", []), gated.t0, end)}


def milestones(gated: Run, granted: dict[str, float], heard: dict[str, float]) -> dict[str, float]:
    """When the last job of each wave got through each stage: the first wave's from t0 (registered,
    allocated by Poolweb, granted, started by Slurm), the second's from the first's freeing (the
    first wave's requests released, then the second's allocated, granted, started). Poolweb's
    times are its rows' ``submitted_at``, ``allocated_at`` and ``finished_at``; ``heard`` is when
    the bridge's event thread received each allocation (decision 193)."""
    from poolweb.models import Request

    registered, allocated, released = {}, {}, {}
    for labels, submitted_at, allocated_at, finished_at in Request.objects.values_list(
            "labels", "submitted_at", "allocated_at", "finished_at"):
        job = labels.get("slurm_job")
        registered[job] = submitted_at.timestamp()
        if allocated_at is not None:
            allocated[job] = allocated_at.timestamp()
        if finished_at is not None:
            released[job] = finished_at.timestamp()
    first = {job for job, at in gated.started.items() if at <= gated.freed}
    second = set(gated.started) - first
    stages = [(f"wave1_{stage}", first, times, gated.t0) for stage, times in (
        ("registered", registered), ("pool_allocated", allocated), ("granted", granted), ("started", gated.started))]
    stages += [(f"wave2_{stage}", jobs, times, gated.freed) for stage, jobs, times in (
        ("released", first, released), ("pool_allocated", second, allocated),
        ("granted", second, granted), ("started", second, gated.started))]
    figures = {f"gated_{name}_s": max(times[job] for job in jobs) - since for name, jobs, times, since in stages
               if jobs and all(job in times for job in jobs)}
    return {**figures, **stage_latencies("wave1", first, [
        ("registered", gated.submitted, registered), ("allocated", registered, allocated),
        ("heard", allocated, heard), ("granted", allocated, granted), ("started", granted, gated.started),
        ("released", gated.ended, released)])}


def stage_latencies(wave: str, jobs: set[str], stages: list[tuple[str, dict[str, float], dict[str, float]]]
                    ) -> dict[str, float]:
    """Per job of the first wave, how long each stage took: sbatch returned → registered in
    Poolweb → allocated by its pass → granted by the bridge (its scontrol returned) → started by
    Slurm, and once freed, its end in Slurm → its request released; the median and p95 over the
    jobs. Where the gate's time goes, job by job."""
    figures: dict[str, float] = {}
    for stage, since, until in stages:
        spans = [until[job] - since[job] for job in jobs if job in since and job in until]
        if spans:
            figures[f"gated_{wave}_to_{stage}_p50_s"] = statistics.median(spans)
            figures[f"gated_{wave}_to_{stage}_p95_s"] = percentile(spans, 95)
    return figures


def poll_figures(polls: list[dict]) -> dict[str, float]:
    """The polls' wall time by part (the rest is ``other``: Python between the calls), and each
    kind of call's count and seconds."""
    figures: dict[str, float] = {"bridge_polls": len(polls)}
    if not polls:
        return figures
    spent = [poll["seconds"] for poll in polls]
    figures.update(bridge_poll_p50_ms=1000 * statistics.median(spent), bridge_poll_max_ms=1000 * max(spent),
                   bridge_busy_s=sum(spent))
    for part in sorted({part for poll in polls for part in poll["parts"]}):
        figures[f"bridge_s_{slug(part)}"] = sum(poll["parts"].get(part, 0.0) for poll in polls)
    figures["bridge_s_other"] = sum(spent) - sum(sum(poll["parts"].values()) for poll in polls)
    for kind in sorted({kind for poll in polls for kind in poll["calls"]}):
        figures[f"bridge_calls_{slug(kind)}"] = sum(poll["calls"].get(kind, (0, 0))[0] for poll in polls)
        figures[f"bridge_call_s_{slug(kind)}"] = sum(poll["calls"].get(kind, (0, 0.0))[1] for poll in polls)
    return figures


def background_figures(calls: list[list], start: float, end: float) -> dict[str, float]:
    """What the bridge's other threads did from ``start`` to ``end``: count and seconds of each
    part and call, by thread (the Slurm commands ``set_comments`` runs four at a time are the
    workers')."""
    figures: dict[str, float] = {}
    for at, thread, kind, seconds in calls:
        if start <= at <= end:
            who = "workers" if thread.startswith("ThreadPoolExecutor") else thread.removeprefix("poolweb-slurm ")
            key = slug(f"{who} {kind}")
            figures[f"bridge_background_calls_{key}"] = figures.get(f"bridge_background_calls_{key}", 0) + 1
            figures[f"bridge_background_s_{key}"] = figures.get(f"bridge_background_s_{key}", 0.0) + seconds
    return figures


def print_polls(polls: list[dict], between: list[tuple[float, float]], t0: float) -> None:
    """Each poll of the gated run, to stderr: when, how long, what it planned, its longest parts;
    and the grants between two polls (decision 193): when, how long."""
    print("the bridge's polls in the gated run: start from t0, seconds, planned, parts over 0.1 s", file=sys.stderr)
    lines = [(poll["start"], poll["seconds"], ", ".join(f"{count} {what}" for what, count in
                                                        poll.get("planned", {}).items() if count) or "-",
              ", ".join(f"{part} {seconds:.2f}" for part, seconds in
                        sorted(poll["parts"].items(), key=lambda item: -item[1]) if seconds >= 0.1)) for poll in polls]
    lines += [(at, seconds, "grants between polls", "") for at, seconds in between]
    for start, seconds, planned, parts in sorted(lines):
        print(f"  +{start - t0:6.2f} s {seconds:6.2f} s  {planned}  [{parts}]", file=sys.stderr)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def compared(figures: dict[str, float]) -> dict[str, float]:
    """Gated minus peer (``first_wave_extra_s`` …), and gated / peer on all started."""
    extra = {f"{key.removesuffix('_s')}_extra_s": figures[f"gated_{key}"] - figures[f"peer_{key}"] for key in
             ("first_wave_s", "second_wave_s", "all_started_s", "wave1_latency_p50_s", "wave1_latency_p95_s",
              "wave2_latency_p50_s", "wave2_latency_p95_s") if f"gated_{key}" in figures and f"peer_{key}" in figures}
    return {**extra, "all_started_ratio": figures["gated_all_started_s"] / figures["peer_all_started_s"]}


# --- the table ----------------------------------------------------------------------------------------

STAGES = (("registered", "registered in Poolweb"), ("released", "the first wave's requests released"),
          ("pool_allocated", "allocated by Poolweb"), ("granted", "granted by the bridge (its scontrol returned)"),
          ("started", "started by Slurm"))
NAN = float("nan")


def report(figures: dict[str, float]) -> None:
    jobs, gpus = int(figures["jobs"]), int(figures["gpus"])
    first = min(jobs, gpus)
    rows = (("submit_per_s", "sbatch/s, 4 clients"), ("burst_s", f"the burst of {jobs} (s)"),
            ("first_wave_s", f"first {first} started, from t0 (s)"),
            ("wave1_latency_p50_s", "  their submit → start, median (s)"),
            ("wave1_latency_p95_s", "  their submit → start, p95 (s)"),
            ("freed_s", "first wave freed, from t0 (s)"),
            ("wave1_ended_s", "  its last end in Slurm, from then (s)"),
            ("second_wave_s", f"the other {jobs - first} started, from then (s)"),
            ("wave2_latency_p50_s", "  their start, median from then (s)"),
            ("all_started_s", f"all {jobs} started, from t0 (s)"))
    comparable = comparable_bursts(figures)
    goals = {"first_wave_s": f"<= +{GOAL_FIRST_WAVE_S:g} s  "
                             + verdict(figures["first_wave_extra_s"] <= GOAL_FIRST_WAVE_S, comparable),
             "all_started_s": f"<= +{GOAL_ALL_STARTED:.0%}  {figures['all_started_ratio'] - 1:+.0%} "
                              + verdict(figures["all_started_ratio"] <= 1 + GOAL_ALL_STARTED, comparable)}
    print(f"{f'slurm bridge: {jobs} jobs, {gpus} GPUs':<44}"
          f"{'peer':>8}{'gated':>8}{'gated-peer':>12}  goal")
    for key, label in rows:
        peer, gated = figures.get(f"peer_{key}", NAN), figures.get(f"gated_{key}", NAN)
        print(f"{label:<44}{peer:>8.3g}{gated:>8.3g}{gated - peer:>+12.3g}  {goals.get(key, '')}")
    print("\ngated run, when the last job of a wave got there (s): wave 1 from t0, wave 2 from its freeing")
    for stage, label in STAGES:
        print(f"  {label:<42}{figures.get(f'gated_wave1_{stage}_s', NAN):>8.3g}"
              f"{figures.get(f'gated_wave2_{stage}_s', NAN):>8.3g}")
    print("  per job of wave 1, median / p95 (s): " + ", ".join(
        f"{label} {figures[f'gated_wave1_to_{stage}_p50_s']:.2f} / {figures[f'gated_wave1_to_{stage}_p95_s']:.2f}"
        for stage, label in (("registered", "→ registered"), ("allocated", "→ allocated"),
                             ("heard", "(→ its event heard)"), ("granted", "→ granted"),
                             ("started", "→ started"), ("released", "its end → request released"))
        if f"gated_wave1_to_{stage}_p50_s" in figures))
    if figures.get("bridge_polls"):
        report_polls(figures)
    print(f"\nidle, polling every {figures['poll_seconds']:g} s (% of a core): " + ", ".join(
        f"{name} {figures[f'idle_cpu_pct_{name}']:.1f}" for name in ("bridge", "server", "slurmctld")))
    print("CPU seconds during each run, peer / gated: " + ", ".join(
        f"{name} {figures.get(f'peer_cpu_s_{name}', NAN):.1f} / {figures.get(f'gated_cpu_s_{name}', NAN):.1f}"
        for name in ("slurmctld", "munged", "server", "bridge")))
    print(f"CPUs: {figures['cpus_controller']:.0f} for the controller host (slurmctld, Poolweb, the bridge), "
          f"{figures['cpus_elsewhere']:.0f} for the nodes, their jobs and sbatch; munged on all"
          if figures.get("cpus_split") else f"CPUs: every process on all {figures['cpus']:.0f} (BENCH_CPUS=shared)")
    print(f"load (1 min): {figures['load_1m_start']:.1f} at the start, {figures['load_1m_between']:.1f} between the "
          f"runs, {figures['load_1m_end']:.1f} at the end")


def report_polls(figures: dict[str, float]) -> None:
    busy = figures["bridge_busy_s"]
    print(f"\nthe bridge's {figures['bridge_polls']:.0f} polls during the gated run (t0 → last start): "
          f"busy {busy:.2f} s, poll median {figures['bridge_poll_p50_ms']:.0f} ms, "
          f"longest {figures['bridge_poll_max_ms']:.0f} ms")
    for key in sorted((key for key in figures if key.startswith("bridge_s_")), key=lambda key: -figures[key]):
        print(f"  {key.removeprefix('bridge_s_'):<42}{figures[key]:>8.2f} s {figures[key] / busy:>5.0%}")
    print("  its calls (Slurm's run four at a time where they are many: their seconds overlap):")
    for key in sorted((key for key in figures if key.startswith("bridge_call_s_")), key=lambda key: -figures[key]):
        kind = key.removeprefix("bridge_call_s_")
        count = figures[f"bridge_calls_{kind}"]
        print(f"    {kind:<48}{count:>5.0f} calls{figures[key]:>8.2f} s{1000 * figures[key] / count:>7.0f} ms each")
    print("  beside the polls, its other threads (registration, comments; Slurm's workers):")
    for key in sorted((key for key in figures if key.startswith("bridge_background_s_")), key=lambda key: -figures[key]):
        kind = key.removeprefix("bridge_background_s_")
        count = figures[f"bridge_background_calls_{kind}"]
        print(f"    {kind:<48}{count:>5.0f} calls{figures[key]:>8.2f} s{1000 * figures[key] / count:>7.0f} ms each")


BURSTS_APART = 1.25  # beyond this ratio of the two bursts' sbatch rates, from-t0 figures compare the load


def comparable_bursts(figures: dict[str, float]) -> bool:
    """Whether the two bursts ran at about the same rate: the from-t0 figures include the burst,
    and on a shared machine another session's load can make one burst several times slower."""
    rates = figures["peer_submit_per_s"], figures["gated_submit_per_s"]
    return max(rates) / min(rates) <= BURSTS_APART


def verdict(met: bool, comparable: bool = True) -> str:
    if not comparable:
        return "not comparable: the bursts ran at different rates (see the submit → start latencies)"
    return "ok" if met else "MISS"
