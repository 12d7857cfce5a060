"""What the bridge does in one poll (decision 133): a pure function of what Slurm shows (the jobs of
the gated partitions), what Poolweb shows (each job's request) and what the bridge remembers, to
the actions that make Slurm obey Poolweb. ``bridge.py`` reads both sides, calls ``plan`` and
carries the plan out; nothing here talks to either.

It is level-triggered, like a Kubernetes controller: it compares the two sides as they are, not
the events that led there, so a poll after a restart of the bridge, of Poolweb or of slurmctld
does what the first poll after the change would have done. The table it follows, per job::

    Slurm job \\ request   none        pending          allocated      preempting           ended (final)
    held                   register    reason, place    release it**   release the request  rejected: reason;
                                                                                            else cancel the job
    released or running    register*   hold it again    heartbeat      signal; at the grace cancel the job
                                                                       end, requeue held
                                                                       (retries left) or
                                                                       cancel; release
    ended or gone          -           cancel request   release        requeue held (retries -
                                                                       left), release

    * a job running without a request the bridge knows: its registration finds the request its
      key named (after a restart), or makes a pending one, which holds the job again.
    ** on the partition of the granted pool: pointed at it first when it asked for others too, or
      waits for a begin time Slurm set when requeueing it; else released alone, one RPC a job, in
      which the gate writes its comment ("granted, released on partition h100"; decision 149).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from poolctl.models import Request
from poolctl.render import starts_text

from poolweb_slurm.mapping import Catalogue, Submission, map_job
from poolweb_slurm.mapping_file import BridgeMapping
from poolweb_slurm.partitions import PARTITION_LABEL
from poolweb_slurm.slurm import Job, printable

LIVE = frozenset({"pending", "allocated", "preempting"})
HEARTBEAT_AT = 2 / 3  # of the lease gone: a heartbeat every third of a lease, so two may be lost


@dataclass(frozen=True)
class Memory:
    """What the bridge knows that neither side shows it: when it signalled a preempted job (per
    job and attempt), and when it last wrote a job's comment. Lost on a restart: a job preempted
    then is signalled once more, and every waiting job's place is written once more."""
    signalled: Mapping[tuple[str, int], datetime] = field(default_factory=dict)
    commented: Mapping[str, datetime] = field(default_factory=dict)


@dataclass
class Plan:
    register: list[Submission] = field(default_factory=list)
    comments: dict[str, str] = field(default_factory=dict)  # job → the comment squeue shows
    grants: dict[str, list[str]] = field(default_factory=dict)  # partition → held jobs to release there
    # ... of which those to point at it first: they asked for other partitions too, or wait for a
    # begin time Slurm set when it requeued them
    moves: set[str] = field(default_factory=set)
    signals: list[str] = field(default_factory=list)  # preempted jobs, signalled once per attempt
    requeue: dict[str, str] = field(default_factory=dict)  # running or ended job → the reason it is held again
    hold: dict[str, str] = field(default_factory=dict)  # released job not started → the reason it is held again
    cancel_jobs: dict[str, str] = field(default_factory=dict)  # job → why Slurm ends it
    # Requests released after their job's Slurm action above succeeded (the job, or None when gone):
    release: list[tuple[str | None, Request]] = field(default_factory=list)
    cancel_requests: list[Request] = field(default_factory=list)  # pending requests whose job is gone
    heartbeats: list[Request] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(vars(self).values())


def plan(jobs: Sequence[Job], requests: Mapping[str, Request], *, mapping: BridgeMapping,
         catalogue: Catalogue | None, memory: Memory, now: datetime) -> Plan:
    """``requests`` maps a job's id to its request: live ones as Poolweb listed them this poll,
    ended ones as a registration answered them. ``catalogue`` is None when Poolweb's
    configuration was not read (no job needed registering): jobs without a request then wait."""
    steps = Plan()
    seen = set()
    for job in sorted(jobs, key=submission_order):  # registered in Slurm's order: Poolweb serves equals by it
        seen.add(job.id)
        request = requests.get(job.id)
        if request is None:
            unknown(steps, job, mapping, catalogue, now)
        elif request.state in LIVE:
            live(steps, job, request, mapping, memory, now)
        else:
            ended(steps, job, request)
    for job_id, request in requests.items():
        if job_id not in seen and request.state in LIVE:
            job_gone(steps, None, request)
    return steps


def early_grants(jobs: Mapping[str, Job], polled: Mapping[str, Request], allocations: Mapping[str, Request], *,
                 mapping: BridgeMapping, now: datetime) -> Plan:
    """The grants of requests Poolweb allocated after the last poll read them (the event stream
    said so, decision 193), to jobs that poll saw held (``jobs``, less those released since): the
    ``allocated`` row of the table, ahead of the next poll. An allocation no newer than what the
    poll read (``polled``) is left to the polls: an attempt only grows, and within one attempt
    only ``pending`` comes before ``allocated``."""
    steps = Plan()
    for job in sorted((jobs[job_id] for job_id in allocations if job_id in jobs), key=submission_order):
        request, before = allocations[job.id], polled.get(job.id)
        if not job.held or job.ended:
            continue
        if before is None or request.attempt > before.attempt or (request.attempt == before.attempt
                                                                  and before.state == "pending"):
            allocated(steps, job, request, mapping, now)
    steps.comments.clear()  # a pool no partition maps to: the poll says so
    return steps


def job_of(request: Request, *, cluster: str, account: str | None) -> str | None:
    """The job a request is for, when the bridge of ``cluster`` submitted it as ``account``: a
    request that only carries the labels, submitted by someone else, is not a job's."""
    job = request.labels.get("slurm_job")
    if job and request.labels.get("slurm_cluster") == cluster and (request.submitted_by or request.owner) == account:
        return job
    return None


def submission_order(job: Job) -> tuple[datetime, int, int]:
    """Oldest first; squeue lists newest first. ``12_3`` after ``12_2``, both after ``11``."""
    base, _, task = job.id.partition("_")
    return job.submitted, int(base) if base.isdigit() else 0, int(task) if task.isdigit() else -1


def unknown(steps: Plan, job: Job, mapping: BridgeMapping, catalogue: Catalogue | None, now: datetime) -> None:
    """A job Poolweb has no request for that the bridge knows of: register it, or say why not.
    A job held until a time of its user's (``sbatch --begin``) is registered at that time."""
    if job.ended or catalogue is None or (job.held and job.eligible is not None and job.eligible > now):
        return
    mapped = map_job(mapping, catalogue, job)
    if isinstance(mapped, Submission):
        steps.register.append(mapped)
        return
    reason = comment(mapped.reason)
    if job.held:
        write(steps, job, reason)
    else:
        take_back(steps, job, reason)


def live(steps: Plan, job: Job, request: Request, mapping: BridgeMapping, memory: Memory, now: datetime) -> None:
    if job.ended:
        job_gone(steps, job, request)
    elif request.state == "pending":
        pending(steps, job, request, mapping, memory, now)
    elif request.state == "allocated":
        allocated(steps, job, request, mapping, now)
    else:
        preempting(steps, job, request, mapping, memory, now)


def pending(steps: Plan, job: Job, request: Request, mapping: BridgeMapping, memory: Memory,
            now: datetime) -> None:
    """The job waits for Poolweb: held, its reason and place in its comment. A job that is not
    held (its grant ended after the grace, an operator released it) is held again.

    The comment is rewritten at most every ``comment_seconds``: the place, and the numbers in the
    reason, change at every grant, and each waiting job's text is its own ``scontrol`` call."""
    place = f"#{request.position} in line for {request.queue_pool}" if request.position else ""
    if place and request.eta is not None:  # R-54, in the bridge host's time
        place += ", " + starts_text(request, today=now.astimezone().date(), short=True)
    reason = comment(f"{place}{': ' if place else ''}{request.message or request.reason or 'waiting'}")
    if not job.held:
        take_back(steps, job, comment(f"{request.message or 'its grant ended'}: held again until Poolweb grants it"))
        return
    last = memory.commented.get(job.id)
    if last is None or now - last >= timedelta(seconds=mapping.bridge.comment_seconds):
        write(steps, job, reason)


def allocated(steps: Plan, job: Job, request: Request, mapping: BridgeMapping, now: datetime) -> None:
    if not job.held:
        heartbeat_if_due(steps, request, now)
        return
    if request.pool not in mapping.pools.values():
        write(steps, job, comment(f"granted on pool {request.pool}, which no partition maps to: give it the label "
                                  f"{PARTITION_LABEL}=<partition> in Poolweb's editor, or add it to [pools] in "
                                  f"{mapping.source}"))
        return
    partition = mapping.partition_of(request.pool)
    steps.grants.setdefault(partition, []).append(job.id)
    if job.partitions != (partition,) or (job.eligible is not None and job.eligible > now):
        steps.moves.add(job.id)


def preempting(steps: Plan, job: Job, request: Request, mapping: BridgeMapping, memory: Memory,
               now: datetime) -> None:
    """Signal the job once; when it stops running or its grace ends, requeue it held with retries
    left (R-46: ``attempt ≤ max_retries``), else cancel it; then release its request."""
    if job.held:
        steps.release.append((None, request))  # stopped already: a release that did not get through
        return
    heartbeat_if_due(steps, request, now)
    signalled = memory.signalled.get((job.id, request.attempt))
    if job.running and signalled is None:
        steps.signals.append(job.id)
        return
    if job.running and now < grace_end(request, mapping, signalled):
        return
    stop(steps, job, request)


def grace_end(request: Request, mapping: BridgeMapping, signalled: datetime) -> datetime:
    """The bridge's grace ends before Poolweb's (one poll early, so Poolweb never evicts a job that
    still runs) and after ``grace_seconds`` when that is shorter."""
    ends = []
    if request.grace_ends_at is not None:
        ends.append(request.grace_ends_at - timedelta(seconds=mapping.bridge.poll_seconds))
    if mapping.bridge.grace_seconds is not None:
        ends.append(signalled + timedelta(seconds=mapping.bridge.grace_seconds))
    return min(ends, default=signalled)


def stop(steps: Plan, job: Job, request: Request) -> None:
    retries_left = request.max_retries is not None and request.attempt <= request.max_retries
    why = comment(f"preempted by Poolweb ({request.reason}): "
                  + ("held until Poolweb grants it again" if retries_left else "no retries left"))
    if retries_left:
        take_back(steps, job, why)
    elif not job.ended:
        steps.cancel_jobs[job.id] = why
    steps.release.append((job.id, request))


def job_gone(steps: Plan, job: Job | None, request: Request) -> None:
    """The job ended in Slurm (or left the gated partitions): its request ends too — released,
    or withdrawn while pending. A preempted job that exited within its grace is requeued held
    when it has retries left, as if the grace had ended."""
    if request.state == "pending":
        steps.cancel_requests.append(request)
    elif request.state == "preempting" and job is not None:
        stop(steps, job, request)
    else:
        steps.release.append((None, request))


def ended(steps: Plan, job: Job, request: Request) -> None:
    """Poolweb ended the request (cancelled, expired, preempted without retries, rejected): the job
    does not run. A rejected job stays held with the reason, for its user to read and scancel."""
    if job.ended:
        return
    why = comment(f"request {request.id} is {request.state}: {request.message or request.reason}")
    if request.state == "rejected" and job.held:
        write(steps, job, why)
    else:
        steps.cancel_jobs[job.id] = why


def take_back(steps: Plan, job: Job, reason: str) -> None:
    """Hold again a job that is not held: requeued when it runs (or ran), held when not started."""
    (steps.requeue if job.running or job.ended else steps.hold)[job.id] = reason


def heartbeat_if_due(steps: Plan, request: Request, now: datetime) -> None:
    if request.lease_expires_at is None or request.lease_seconds is None:
        return
    if request.lease_expires_at - now <= timedelta(seconds=request.lease_seconds * (1 - HEARTBEAT_AT)):
        steps.heartbeats.append(request)


def write(steps: Plan, job: Job, text: str) -> None:
    if text != job.comment:
        steps.comments[job.id] = text


def comment(text: str) -> str:
    """As Slurm will keep it, so that the next poll finds it unchanged."""
    return printable(f"poolweb: {text}")
