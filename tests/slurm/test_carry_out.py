"""How the bridge carries a plan out when part of it fails (bridge/poolweb_slurm/bridge.py,
decision 133): a request is released only once its job's Slurm action went through, and a
registration Poolweb refuses goes into the job's comment and is tried again later. Slurm and
Poolweb here are recorders that fail on demand — the failures a real cluster gives only by
accident; the real ones are in test_bridge.py."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from poolctl.models import BatchResult, Issue
from poolctl.stream import Event, StreamDown

from poolweb_slurm.allocations import Allocations
from poolweb_slurm.bridge import REFUSED_SECONDS, REGISTERED_MOST, Bridge
from poolweb_slurm.comments import QUIET_SECONDS, Comments
from poolweb_slurm.mapping import Submission
from poolweb_slurm.plan import Plan
from poolweb_slurm.slurm import SlurmError
from tests.slurm.examples import HELD, MAPPED, NOW, request


class RecordingSlurm:
    def __init__(self, failing: dict[str, str] | None = None):
        self.failing = failing or {}
        self.calls: list[tuple[str, list[str]]] = []

    def act(self, name: str, jobs) -> None:
        self.calls.append((name, list(jobs)))
        if failed := {job: self.failing[job] for job in jobs if job in self.failing}:
            raise SlurmError(f"scontrol {name}", failed)

    def requeue_held(self, jobs):
        self.act("requeuehold", jobs)

    def hold(self, jobs):
        self.act("hold", jobs)

    def cancel(self, jobs, reason):
        self.act("scancel", jobs)

    def signal(self, jobs, signal):
        self.act("signal", jobs)

    def grant(self, jobs, *, partition, moving=()):
        self.act(f"grant {partition}", jobs)

    def set_comments(self, comments):
        self.act("comment", comments)
        self.comments = dict(comments)


class RecordingApi:
    def __init__(self, submitted: list[BatchResult] | None = None):
        self.submitted = submitted or []
        self.calls: list[tuple[str, list[int]]] = []

    def act_many(self, action, requests):
        self.calls.append((action, [r.id for r in requests]))
        return [BatchResult(status=200, request=r) for r in requests]

    def submit_batch(self, items):
        self.calls.append(("submit", [item["idempotency_key"] for item in items]))
        return self.submitted


def bridge(slurm: RecordingSlurm, api: RecordingApi) -> Bridge:
    return Bridge(MAPPED, api, slurm, clock=lambda: NOW)  # type: ignore[arg-type]


def test_a_request_is_released_only_once_its_job_is_held_again():
    slurm, api = RecordingSlurm(failing={"12": "Job is currently completing"}), RecordingApi()
    stopped, other = request("preempting", id=41), request("preempting", id=42)
    steps = Plan(requeue={"12": "preempted", "13": "preempted"}, release=[("12", stopped), ("13", other)])

    running = bridge(slurm, api)
    running.carry_out(steps, {}, NOW)

    assert running.comments.settled(timeout=10)
    assert ("requeuehold", ["12", "13"]) in slurm.calls
    assert api.calls == [("release", [42])]  # 41 waits for the next poll, which finds its job as it is then
    assert slurm.comments == {"13": "preempted"}


def test_a_signal_that_failed_is_sent_again_next_poll():
    slurm, api = RecordingSlurm(failing={"12": "Invalid job id"}), RecordingApi()
    running = bridge(slurm, api)
    running.carry_out(Plan(signals=["12", "13"]), {"12": request("preempting"), "13": request("preempting")}, NOW)
    assert running.signalled == {("13", 1): NOW}


def test_a_registration_poolweb_refuses_is_explained_in_the_comment_and_tried_again_later():
    refused = BatchResult(status=400, errors=(Issue("owner", "unknown_user", "no user nobody"),))
    slurm, api = RecordingSlurm(), RecordingApi(submitted=[refused])
    submission = Submission(job="12", owner="nobody", body={"policy": "dev"}, idempotency_key="slurm:clearml:12")
    running = bridge(slurm, api)

    running.register([submission], NOW)
    assert slurm.comments == {"12": "poolweb: Poolweb refused to register it: owner: no user nobody"}

    running.register([submission], NOW + timedelta(seconds=REFUSED_SECONDS - 1))
    assert [call for call in api.calls if call[0] == "submit"] == [("submit", ["slurm:clearml:12"])]
    running.register([submission], NOW + timedelta(seconds=REFUSED_SECONDS))
    assert len([call for call in api.calls if call[0] == "submit"]) == 2


def test_a_registration_that_finds_an_ended_request_is_remembered_for_the_plan():
    expired = request("expired", id=41)
    slurm, api = RecordingSlurm(), RecordingApi(submitted=[BatchResult(status=200, request=expired)])
    running = bridge(slurm, api)
    running.register([Submission(job="12", owner="ann", body={}, idempotency_key="slurm:clearml:12")], NOW)
    assert running.ended == {"12": expired}
    running.forget({"13"})  # job 12 left squeue
    assert running.ended == {}


def test_a_poll_registers_at_most_registered_most_jobs_then_writes_comments_last():
    slurm, api = RecordingSlurm(), RecordingApi()
    submissions = [Submission(job=str(n), owner="ann", body={}, idempotency_key=f"slurm:clearml:{n}")
                   for n in range(REGISTERED_MOST + 50)]
    api.submitted = [BatchResult(status=201, request=request("pending", id=n)) for n in range(REGISTERED_MOST)]
    running = bridge(slurm, api)
    running.carry_out(Plan(register=submissions, comments={"7": "poolweb: #1 in line"}), {}, NOW)
    running.registering.join(timeout=10)
    assert api.calls == [("submit", [f"slurm:clearml:{n}" for n in range(REGISTERED_MOST)])]
    assert running.comments.settled(timeout=10)
    assert ("comment", ["7"]) in slurm.calls


def test_registration_runs_beside_the_polls_one_batch_at_a_time():
    """A slow batch (seconds under a burst) holds up no grant or release: the next poll goes on,
    and hands no new batch over until the last one is done."""
    release = threading.Event()

    class SlowApi(RecordingApi):
        def submit_batch(self, items):
            release.wait(timeout=10)
            return super().submit_batch(items)

    slurm, api = RecordingSlurm(), SlowApi()
    running = bridge(slurm, api)
    first = Submission(job="12", owner="ann", body={}, idempotency_key="slurm:clearml:12")
    granted = request("allocated", id=41)
    running.carry_out(Plan(register=[first]), {}, NOW)
    running.carry_out(Plan(register=[first], release=[(None, granted)]), {}, NOW)  # the next poll, meanwhile
    assert api.calls == [("release", [41])]
    release.set()
    running.registering.join(timeout=10)
    assert api.calls == [("release", [41]), ("submit", ["slurm:clearml:12"])]


class BlockedSlurm(RecordingSlurm):
    """Its comment calls wait until the test lets them go: slurmctld busy launching a wave."""

    def __init__(self):
        super().__init__()
        self.go, self.under_way = threading.Event(), threading.Event()

    def set_comments(self, comments):
        self.under_way.set()
        self.go.wait(timeout=10)
        super().set_comments(comments)


def test_a_slow_comment_call_holds_up_no_grant_or_release():
    slurm, api = BlockedSlurm(), RecordingApi()
    running = bridge(slurm, api)
    waiting = {str(job): f"poolweb: #{job} in line" for job in range(1, 9)}
    running.carry_out(Plan(comments=waiting), {}, NOW)
    granted = request("allocated", id=41)
    assert slurm.under_way.wait(timeout=10)
    # The next poll: its plan wants the comments not written yet again.
    running.carry_out(Plan(grants={"h100": ["30"]}, release=[(None, granted)], comments=waiting), {}, NOW)
    assert ("grant h100", ["30"]) in slurm.calls and api.calls == [("release", [41])]
    slurm.go.set()
    assert running.comments.settled(timeout=10)
    assert running.comments.written_at() == dict.fromkeys(waiting, NOW)


def test_what_the_next_plan_wants_replaces_the_comments_not_yet_written():
    """Four texts a call: while the first call (jobs 1-4) is under way, the next poll's plan
    wants only job 5, with a new place: jobs 6-8, granted meanwhile, are not written as waiting."""
    slurm, api = BlockedSlurm(), RecordingApi()
    running = bridge(slurm, api)
    running.comments.want({str(job): f"poolweb: #{job} in line" for job in range(1, 9)})
    assert slurm.under_way.wait(timeout=10)
    running.comments.want({"1": "poolweb: #1 in line", "5": "poolweb: #1 in line"})
    slurm.go.set()
    assert running.comments.settled(timeout=10)
    assert [jobs for name, jobs in slurm.calls] == [["1", "2", "3", "4"], ["5"]]
    assert slurm.comments == {"5": "poolweb: #1 in line"}


def test_no_comment_call_starts_while_a_poll_acts_on_slurm():
    slurm, api = RecordingSlurm(), RecordingApi()
    running = bridge(slurm, api)
    with running.comments.paused():
        running.comments.want({"7": "poolweb: #1 in line"})
        assert not running.comments.settled(timeout=0.2)
        assert slurm.calls == []
    assert running.comments.settled(timeout=10)
    assert slurm.calls == [("comment", ["7"])]


def test_while_the_queue_moves_comments_wait_but_for_one_call_every_comment_seconds(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("poolweb_slurm.comments.time.monotonic", lambda: clock[0])
    slurm = RecordingSlurm()
    comments = Comments(slurm, lambda: NOW, every=10)  # type: ignore[arg-type]
    comments.want({"7": "poolweb: #1 in line"})
    assert comments.settled(timeout=10)  # the queue rests: written at once

    comments.moving()  # a poll granted: the places change anyway
    comments.want({"8": "poolweb: #2 in line"})
    assert not comments.settled(timeout=0.3)
    clock[0] += QUIET_SECONDS
    assert comments.settled(timeout=10)

    comments.moving()
    comments.want({"9": "poolweb: #3 in line"})
    clock[0] += 9
    comments.moving()  # still moving, 9 s after the last call
    assert not comments.settled(timeout=0.3)
    clock[0] += 1
    comments.moving()  # still moving, 10 s after it: one call anyway
    assert comments.settled(timeout=10)
    assert [jobs for name, jobs in slurm.calls] == [["7"], ["8"], ["9"]]
    comments.stop(timeout=10)


def test_a_bug_on_the_comment_thread_ends_the_bridge_loudly():
    class Buggy(RecordingSlurm):
        def set_comments(self, comments):
            raise ValueError("a bug")

    running = bridge(Buggy(), RecordingApi())
    running.comments.want({"7": "poolweb: #1 in line"})
    running.comments.thread.join(timeout=10)
    with pytest.raises(ValueError, match="a bug"):
        running.run(threading.Event())


def test_between_two_polls_the_bridge_waits_until_woken_or_stopped():
    running, stop = bridge(RecordingSlurm(), RecordingApi()), threading.Event()
    running.wake()
    started = time.monotonic()
    running.pause(stop, 30)  # woken before: returns at once, and is not woken any more
    assert time.monotonic() - started < 5 and not running.woken.is_set()
    stop.set()
    running.pause(stop, 30)
    assert time.monotonic() - started < 5


# --- grants between two polls (decision 193) ------------------------------------------------------

ACCOUNT = "slurm-bridge"


def ours(job: str = "12", state: str = "allocated", **changes) -> object:
    """A request of the bridge's, for one of its cluster's jobs."""
    return request(state, **{"submitted_by": ACCOUNT, "labels": {"slurm_cluster": "clearml", "slurm_job": job},
                             **changes})


def test_an_allocation_reported_between_two_polls_is_granted_at_once_and_once():
    slurm = RecordingSlurm()
    running, stop = bridge(slurm, RecordingApi()), threading.Event()
    running.seen, running.polled = {"12": HELD}, {"12": request("pending")}  # what the last poll saw
    running.allocations.account = ACCOUNT
    running.allocations.keep(ours())
    assert running.woken.is_set()
    started = time.monotonic()
    running.pause(stop, 1)
    assert slurm.calls == [("grant h100", ["12"])]
    assert time.monotonic() - started >= 0.9  # the wait goes on: granting is not polling

    running.allocations.keep(ours())  # the same again, or an event the poll saw first
    running.pause(stop, 0.2)
    assert slurm.calls == [("grant h100", ["12"])]


def test_only_the_bridge_s_own_requests_of_its_cluster_are_kept_and_the_newest_state_wins():
    woken = []
    allocations = Allocations(RecordingApi(), cluster="clearml",  # type: ignore[arg-type]
                              arrived=lambda: woken.append(1))
    allocations.account = ACCOUNT
    allocations.keep(ours("12", submitted_by="someone-else"))
    allocations.keep(request("allocated", owner="ann", labels={"slurm_cluster": "clearml", "slurm_job": "12"}))
    allocations.keep(ours("13", labels={"slurm_cluster": "other", "slurm_job": "13"}))
    allocations.keep(ours("14"))
    allocations.keep(ours("15"))
    allocations.keep(ours("15", state="preempting"))
    assert list(allocations.take()) == ["14"] and woken == [1, 1]
    assert allocations.take() == {}


class ScriptedStream:
    """Gives its events, then is down once, then gives the rest; then nothing."""

    def __init__(self, events: list[Event | str]):
        self.events = events

    def receive(self, timeout: float) -> Event | None:
        if not self.events:
            time.sleep(min(timeout, 0.05))
            return None
        event = self.events.pop(0)
        if event == "down":
            raise StreamDown("connection refused")
        return event

    def close(self) -> None:
        pass


def test_the_event_thread_keeps_allocations_across_a_stream_that_goes_down(caplog):
    def updated(job: str) -> Event:
        data = {"id": int(job), "state": "allocated", "pool": "h100", "attempt": 1, "submitted_by": ACCOUNT,
                "labels": {"slurm_cluster": "clearml", "slurm_job": job}}
        return Event("request.updated", seq=int(job), data=data)

    class StreamingApi(RecordingApi):
        def event_stream(self):
            return ScriptedStream([updated("12"), Event("pool.updated", seq=13, data={"name": "h100"}),
                                   Event("request.updated", seq=14, data={"id": "not a request"}),
                                   "down", updated("15")])

    arrived = threading.Event()
    allocations = Allocations(StreamingApi(), cluster="clearml", arrived=arrived.set)  # type: ignore[arg-type]
    allocations.follow(ACCOUNT)
    try:
        deadline = time.monotonic() + 10
        taken: dict = {}
        while set(taken) != {"12", "15"} and time.monotonic() < deadline:
            arrived.wait(timeout=0.5)
            arrived.clear()
            taken.update(allocations.take())
        assert set(taken) == {"12", "15"}
    finally:
        allocations.stop(timeout=10)
    assert allocations.broken is None
    assert "the event stream is down (connection refused)" in caplog.text
    assert "an event the bridge cannot read" in caplog.text and "the event stream is back" in caplog.text


def test_a_bug_on_the_event_thread_ends_the_bridge_loudly():
    class Buggy(RecordingApi):
        def event_stream(self):
            raise ValueError("a bug")

    running = bridge(RecordingSlurm(), Buggy())
    running.allocations.follow(ACCOUNT)
    running.allocations.thread.join(timeout=10)
    with pytest.raises(ValueError, match="a bug"):
        running.run(threading.Event())

