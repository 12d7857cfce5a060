"""The bridge process (decision 133): every ``poll_seconds``, one ``squeue`` of the gated
partitions and, at the same time, one list of the bridge's live requests, then ``plan`` (plan.py)
and the plan carried out — on Slurm first, where a job is taken back or released, then on
Poolweb, where a request is released only once its job's Slurm action went through::

    bridge = Bridge(load_mapping(), Api(), Slurm(partitions=mapping.pools))
    bridge.run(stop)                    # until stop is set; or bridge.poll() for one round

Between two polls, an allocation the event stream reports is granted at once (decision 193,
allocations.py). It keeps nothing on disk: each poll rebuilds the picture from Slurm and Poolweb
(a request names its job in the label ``slurm_job``; a registration retried after a restart finds
the request its key named). A poll that cannot read either side does nothing and the next one
comes after a backoff; an action that fails for some jobs leaves their requests as they are, for
the next poll.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from poolctl.api import Api
from poolctl.errors import PoolctlError
from poolctl.models import BatchResult, Request

from poolweb_slurm.allocations import Allocations
from poolweb_slurm.comments import Comments
from poolweb_slurm.mapping import Catalogue, Submission, problems
from poolweb_slurm.mapping_file import BridgeMapping
from poolweb_slurm.partitions import partitions
from poolweb_slurm.plan import LIVE, Memory, Plan, comment, early_grants, job_of, plan
from poolweb_slurm.slurm import Job, Slurm, SlurmError

log = logging.getLogger("poolweb_slurm")

CATALOGUE_SECONDS = 5.0  # Poolweb's configuration is read again at most this often, and only to register jobs
REFUSED_SECONDS = 60.0  # a registration Poolweb refused (unknown user, not in the team) is tried again after this
BUSY_SECONDS = 10.0  # ... after 429 (the user's pending cap), sooner
AGAIN_SECONDS = 0.25  # the next poll after one that acted: the pass it asked for has likely run
LONGEST_WAIT = 30.0  # the backoff's cap while Slurm or Poolweb cannot be read
LISTED_MOST = 1_000_000  # live requests the bridge reads a poll: all of them
LISTED_PAGE = 1000  # ... a call: the server's largest page; each page counts the matching requests again
REGISTERED_MOST = 200  # new jobs registered a poll, one batch call (~0.1 ms an item on a quiet server, decision 135); the rest the next poll


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Bridge:
    def __init__(self, mapping: BridgeMapping, api: Api, slurm: Slurm, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self.mapping, self.api, self.slurm, self.clock = mapping, api, slurm, clock
        self.account: str | None = None  # the bridge's Poolweb username: whose requests it follows
        self.ended: dict[str, Request] = {}  # job → its request that Poolweb ended, as a registration answered
        self.signalled: dict[tuple[str, int], datetime] = {}
        # written on a thread of their own, while the queue rests (decision 148)
        self.comments = Comments(slurm, clock, every=mapping.bridge.comment_seconds)
        self.refused: dict[str, datetime] = {}  # job → when to try registering it again
        self.catalogue: Catalogue | None = None
        self.catalogue_read: datetime | None = None
        self.catalogue_version: object = None
        # New jobs are registered on a thread of their own: a batch takes seconds under a burst,
        # and the polls' grants and releases must not wait for it. It writes ended and refused,
        # under this lock.
        self.registering: threading.Thread | None = None
        self.registering_failed: BaseException | None = None
        self.lock = threading.Lock()
        self.woken = threading.Event()  # ends the wait between two polls, or grants what was allocated
        self.poll_wanted = False  # ... the former
        # What the last poll saw, for the grants between two polls (decision 193): its jobs, the
        # requests it read, and the jobs released since.
        self.allocations = Allocations(api, cluster=mapping.cluster, arrived=self.woken.set)
        self.seen: dict[str, Job] = {}
        self.polled: dict[str, Request] = {}
        self.released: set[str] = set()
        self.reader = ThreadPoolExecutor(1, thread_name_prefix="poolweb-slurm read")  # Poolweb's side of a poll

    # --- the loop -------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Polls until ``stop`` is set. Slurm or Poolweb unreachable: logged, and polled again
        after a backoff (doubling to 30 s); anything else is a bug and ends the process loudly,
        for its supervisor (systemd's ``Restart=always``) to start it again."""
        failures = 0
        while not stop.is_set():
            if self.registering_failed is not None:
                raise self.registering_failed
            for thread in (self.comments, self.allocations):
                if thread.broken is not None:
                    raise thread.broken
            try:
                acted = bool(self.poll())
                failures = 0
            except (SlurmError, PoolctlError) as unreadable:
                failures += 1
                acted = False
                log.warning("poll failed, nothing done: %s", unreadable)
            wait = AGAIN_SECONDS if acted else self.mapping.bridge.poll_seconds
            self.pause(stop, min(wait * 2 ** failures, LONGEST_WAIT) if failures else wait)
        if self.registering is not None:
            self.registering.join(timeout=LONGEST_WAIT)  # a batch under way ends, or is retried at start
        self.comments.stop(timeout=LONGEST_WAIT)
        self.allocations.stop(timeout=LONGEST_WAIT)
        self.reader.shutdown()

    def wake(self) -> None:
        """The next poll now, or the loop's end: the process is stopping."""
        self.poll_wanted = True
        self.woken.set()

    def pause(self, stop: threading.Event, seconds: float) -> None:
        """Until ``seconds`` have passed, the bridge is woken, or ``stop`` is set (seen within half
        a second even when nothing wakes the bridge); granting meanwhile what Poolweb allocates."""
        deadline = time.monotonic() + seconds
        while not stop.is_set() and not self.poll_wanted and (left := deadline - time.monotonic()) > 0:
            if self.woken.wait(min(left, 0.5)):
                self.woken.clear()
                self.grant_allocated()
        self.woken.clear()
        self.poll_wanted = False

    def poll(self) -> Plan:
        # Both sides at once (decision 159): under a burst each takes up to seconds, and the grants
        # wait for the slower only. Neither side's order matters to the plan: only the bridge
        # releases a held job, and what either side changes meanwhile the next poll sees.
        listed = self.reader.submit(self.live_requests)
        try:
            jobs = self.slurm.jobs()
        finally:
            live = listed.result()
        self.allocations.follow(self.account)
        with self.lock:
            ended = dict(self.ended)
        requests = {**ended, **live}
        self.seen, self.polled, self.released = {job.id: job for job in jobs}, requests, set()
        now = self.clock()
        catalogue = self.current_catalogue(now) if needs_registration(jobs, requests) else None
        steps = plan(jobs, requests, mapping=self.mapping, catalogue=catalogue,
                     memory=Memory(self.signalled, self.comments.written_at()), now=now)
        self.carry_out(steps, requests, now)
        self.forget({job.id for job in jobs})
        return steps

    def grant_allocated(self) -> None:
        """Between two polls, the jobs whose requests Poolweb allocated since the last read them, as
        far as that poll saw them held (decision 193): one release per partition, as a poll's."""
        allocated = self.allocations.take()
        if not allocated:
            return
        held = {job_id: job for job_id, job in self.seen.items() if job_id not in self.released}
        steps = early_grants(held, self.polled, allocated, mapping=self.mapping, now=self.clock())
        if steps.grants:
            self.comments.moving()
            with self.comments.paused():
                self.act_on_slurm(steps, allocated, self.clock())

    # --- reading Poolweb -----------------------------------------------------------------------

    def live_requests(self) -> dict[str, Request]:
        """The bridge's live requests by job (``job_of``). The newest wins should two name a job."""
        if self.account is None:
            me = self.api.me()
            if me is None:
                raise PoolctlError(f"the Poolweb server at {self.api.url} is older than the bridge: it has no GET /me",
                                   "upgrade it")
            self.account = me.username
        listed = self.api.list(state=sorted(LIVE), labels={"slurm_cluster": self.mapping.cluster}, limit=LISTED_MOST,
                               page=LISTED_PAGE)
        by_job: dict[str, Request] = {}
        for request in sorted(listed, key=lambda request: request.id):
            if job := job_of(request, cluster=self.mapping.cluster, account=self.account):
                by_job[job] = request
        return by_job

    def current_catalogue(self, now: datetime) -> Catalogue:
        fresh = self.catalogue_read and now - self.catalogue_read < timedelta(seconds=CATALOGUE_SECONDS)
        if self.catalogue is None or not fresh:
            document = self.api.config()
            self.catalogue, self.catalogue_read = Catalogue.from_document(document), now
            if document.get("version") != self.catalogue_version:
                self.catalogue_version = document.get("version")
                for problem in problems(self.mapping, self.catalogue):
                    log.warning("the mapping names what Poolweb lacks: %s", problem)
                self.warn_if_partitions_moved(document)
        return self.catalogue

    def warn_if_partitions_moved(self, document: dict) -> None:
        """The partitions are mapped once, at start (``cli.run``): a version whose pools'
        ``slurm_partition`` labels say otherwise is logged, and takes effect when the bridge is
        restarted (``poolweb-slurm check`` shows what it would map)."""
        now = partitions(self.mapping, document)
        if now.conflicts or now.pools != self.mapping.pools:
            log.warning("Poolweb's version %s maps partitions otherwise than the bridge does (%s): restart the bridge "
                        "to use its slurm_partition labels; until then it keeps mapping %s", document.get("version"),
                        "; ".join(now.conflicts) or ", ".join(f"{p} → {pool}" for p, pool in now.pools.items()),
                        ", ".join(f"{p} → {pool}" for p, pool in self.mapping.pools.items()))

    # --- carrying a plan out --------------------------------------------------------------------

    def carry_out(self, steps: Plan, requests: dict[str, Request], now: datetime) -> None:
        """Slurm's part first, taking back before giving: a job is held again before another is
        released. Then Poolweb's: a request is released only when its job's action succeeded.
        Then new jobs, at most ``REGISTERED_MOST`` a poll, on their own thread; the comments go to
        theirs (decision 148): a burst of waiting jobs, each text its own ``scontrol`` call, holds
        up no grant or release."""
        if steps.grants or steps.release or steps.register or steps.requeue or steps.hold or steps.cancel_jobs:
            self.comments.moving()
        with self.comments.paused():
            failed = self.act_on_slurm(steps, requests, now)
        self.on_poolweb("release", [request for job, request in steps.release if job not in failed])
        self.on_poolweb("cancel", steps.cancel_requests)
        self.on_poolweb("heartbeat", steps.heartbeats)
        self.start_registering(steps.register[:REGISTERED_MOST], now)
        taken_back = {job: why for job, why in {**steps.requeue, **steps.hold}.items() if job not in failed}
        self.comments.want({**taken_back, **steps.comments})

    def act_on_slurm(self, steps: Plan, requests: dict[str, Request], now: datetime) -> set[str]:
        """The plan's Slurm actions; the jobs whose taking back failed."""
        failed = self.on_slurm("held again (requeued)", self.slurm.requeue_held, steps.requeue)
        failed |= self.on_slurm("held again", self.slurm.hold, steps.hold)
        for reason, jobs in grouped(steps.cancel_jobs).items():
            failed |= self.on_slurm(f"cancelled ({reason})", lambda jobs, why=reason: self.slurm.cancel(jobs, why),
                                    jobs)
        signalled = {job: requests[job].attempt for job in steps.signals}
        signal_failed = self.on_slurm(f"sent SIG{self.mapping.bridge.preemption_signal}",
                                      lambda jobs: self.slurm.signal(jobs, self.mapping.bridge.preemption_signal),
                                      signalled)
        self.signalled.update({(job, attempt): now for job, attempt in signalled.items() if job not in signal_failed})
        for partition, jobs in steps.grants.items():
            self.released.update(jobs)  # failed or not: the next poll sees which are held
            moving = [job for job in jobs if job in steps.moves]
            self.on_slurm(f"granted on {partition}", lambda jobs, partition=partition, moving=moving: self.slurm.grant(
                jobs, partition=partition, moving=moving), jobs)
        return failed

    def on_slurm(self, done: str, action: Callable[[list[str]], None], jobs: Iterable[str]) -> set[str]:
        """Runs one batched Slurm action; the jobs it failed for (all, when Slurm named none)."""
        jobs = list(jobs)
        if not jobs:
            return set()
        try:
            action(jobs)
        except SlurmError as failure:
            failed = set(jobs) if "*" in failure.failures else set(failure.failures) & set(jobs)
            log.warning("%s: failed for %s: %s", done, listing(failed), failure)
            log.info("%s: %s", done, listing(set(jobs) - failed))
            return failed
        log.info("%s: %s", done, listing(jobs))
        return set()

    def on_poolweb(self, action: str, requests: Sequence[Request]) -> None:
        """``POST /requests/actions``, in batches; a refused item is logged and left for the next
        poll, which sees the request as it is then."""
        if not requests:
            return
        results = self.api.act_many(action, requests)
        refused = [(request, result) for request, result in zip(requests, results) if result.request is None]
        for request, result in refused:
            log.warning("%s of request %s (job %s): %s %s", action, request.id, request.labels.get("slurm_job"),
                        result.status, result.detail or result.errors)
        if action != "heartbeat" or len(refused) < len(requests):
            log.info("%s: requests %s", action, listing(str(request.id) for request in requests))

    def start_registering(self, submissions: Sequence[Submission], now: datetime) -> None:
        """``register`` on its own thread, unless the last batch is still under way: its jobs, and
        those that arrived meanwhile, are planned again by a poll after it."""
        if not submissions or (self.registering is not None and self.registering.is_alive()):
            return
        self.registering = threading.Thread(target=self.register_reported, args=(submissions, now),
                                            name="poolweb-slurm register", daemon=True)
        self.registering.start()

    def register_reported(self, submissions: Sequence[Submission], now: datetime) -> None:
        try:
            self.register(submissions, now)
        except (SlurmError, PoolctlError) as failed:
            log.warning("registration failed, tried again next poll: %s", failed)
        except BaseException as bug:  # the loop raises it: a bug ends the process loudly
            self.registering_failed = bug

    def register(self, submissions: Sequence[Submission], now: datetime) -> None:
        """Each new job as a request owned by its user, in batches of 500; the same key after a
        restart names the same request. A request Poolweb ended (rejected at once, or ended while
        the bridge was away) is remembered for the plan; a refusal goes into the job's comment."""
        with self.lock:
            due = [submission for submission in submissions if self.refused.get(submission.job, now) <= now]
        if not due:
            return
        results = self.api.submit_batch([{**submission.body, "owner": submission.owner,
                                           "idempotency_key": submission.idempotency_key} for submission in due])
        refusals: dict[str, str] = {}
        with self.lock:
            for submission, result in zip(due, results):
                if result.request is not None:
                    if result.request.state not in LIVE:
                        self.ended[submission.job] = result.request
                else:
                    refusals[submission.job] = comment(f"Poolweb refused to register it: {refusal_text(result)}")
                    wait = BUSY_SECONDS if result.status == 429 else REFUSED_SECONDS
                    self.refused[submission.job] = now + timedelta(seconds=wait)
        log.info("registered: %s", listing(submission.job for submission in due if submission.job not in refusals))
        if refusals:
            log.warning("registration refused: %s", "; ".join(f"job {job}: {why}" for job, why in refusals.items()))
            self.comments.write(refusals)

    def forget(self, jobs: set[str]) -> None:
        """What the bridge remembers of jobs Slurm no longer shows."""
        with self.lock:
            for memory in (self.ended, self.refused):
                for job in [job for job in memory if job not in jobs]:
                    del memory[job]
            for key in [key for key in self.signalled if key[0] not in jobs]:
                del self.signalled[key]
        self.comments.forget(jobs)


def needs_registration(jobs: Sequence[Job], requests: dict[str, Request]) -> bool:
    return any(not job.ended and job.id not in requests for job in jobs)


def grouped(reasons: dict[str, str]) -> dict[str, list[str]]:
    """Jobs by reason: one Slurm call for each."""
    groups: dict[str, list[str]] = {}
    for job, reason in reasons.items():
        groups.setdefault(reason, []).append(job)
    return groups


def refusal_text(result: BatchResult) -> str:
    if result.errors:
        return "; ".join(f"{issue.path}: {issue.message}" for issue in result.errors)
    return result.detail or f"status {result.status}"


def listing(jobs: Iterable[str], most: int = 20) -> str:
    jobs = sorted(jobs, key=lambda job: (len(job), job))
    shown = ", ".join(jobs[:most])
    return f"{shown} and {len(jobs) - most} more" if len(jobs) > most else shown
