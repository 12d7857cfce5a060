"""Grants between two polls (decision 193): Poolweb's event stream says the moment it allocates one
of the bridge's requests, and the bridge releases its job then, not at the next poll::

    allocations = Allocations(api, cluster="clearml", arrived=bridge.woken.set)
    allocations.follow("slurm-bridge")     # once the bridge knows its account: starts the thread
    allocations.take()                     # job → its request, allocated since the last take

A poll is an ``squeue`` of every gated job and a list of every live request, 0.3-1.5 s apart under
a burst; a request allocated just after one waited for the next, and then for its release. The
stream (``/ws/events/``, poolctl's ``EventStream``) carries each request object as it changes,
within the server's relay interval of its pass's commit. Only ``allocated`` is acted on here, and
only for a job the last poll saw held (``plan.early_grants``): every other change, and every
check, stays the poll's. While the stream is down (refused, a server without it, an account that
may not see others' requests) nothing arrives and the polls grant as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from poolctl.api import Api
from poolctl.backoff import Backoff
from poolctl.models import Request
from poolctl.stream import StreamDown

from poolweb_slurm.plan import job_of

log = logging.getLogger("poolweb_slurm")

LISTEN_SECONDS = 0.5  # a receive's timeout: how soon the thread sees it should stop
RETRY_CAP = 30.0  # the longest wait before the stream is tried again


class Allocations:
    def __init__(self, api: Api, *, cluster: str, arrived: Callable[[], None]) -> None:
        """``arrived`` is called after an allocation of one of the bridge's requests is kept."""
        self.api, self.cluster, self.arrived = api, cluster, arrived
        self.account: str | None = None
        self.allocated: dict[str, Request] = {}  # job → its request, as the newest event showed it
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.broken: BaseException | None = None  # a bug on the thread: the loop raises it
        self.thread: threading.Thread | None = None

    def follow(self, account: str) -> None:
        """Listen for the requests ``account`` submitted (the first call starts the thread)."""
        if self.thread is None:
            self.account = account
            self.thread = threading.Thread(target=self.run, name="poolweb-slurm events", daemon=True)
            self.thread.start()

    def take(self) -> dict[str, Request]:
        with self.lock:
            taken, self.allocated = self.allocated, {}
        return taken

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def run(self) -> None:
        try:
            self.listen()
        except BaseException as bug:  # the loop raises it: a bug ends the process loudly
            self.broken = bug

    def listen(self) -> None:
        stream, backoff, down = self.api.event_stream(), Backoff(cap=RETRY_CAP), False
        while not self.stopping.is_set():
            try:
                event = stream.receive(LISTEN_SECONDS)
            except StreamDown as why:
                if not down:
                    log.warning("the event stream is down (%s): grants wait for the polls until it is back", why)
                down = True
                self.stopping.wait(backoff.next())
                continue
            if down:
                log.info("the event stream is back: grants go out as Poolweb makes them")
                down, backoff = False, Backoff(cap=RETRY_CAP)
            if event is not None and event.type == "request.updated":
                try:
                    request = Request.from_json(event.data)
                except (TypeError, ValueError) as unreadable:  # a server newer than this client, say
                    log.warning("an event the bridge cannot read, left to the polls: %s", unreadable)
                    continue
                self.keep(request)
        stream.close()

    def keep(self, request: Request) -> None:
        """The newest state of each of the bridge's jobs; a job no longer allocated is dropped."""
        job = job_of(request, cluster=self.cluster, account=self.account)
        if job is None:
            return
        with self.lock:
            if request.state != "allocated":
                self.allocated.pop(job, None)
                return
            self.allocated[job] = request
        self.arrived()
