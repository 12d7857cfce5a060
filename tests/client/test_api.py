"""The Python API against a live server (real HTTP, real websocket, the real worker granting):
submit, wait, the allocation context manager through grant, lease renewal (R-50), preemption
(R-44) and release on exception (R-51)."""

from __future__ import annotations

import threading
import time

import pytest

from poolctl import Client, Preempted, Rejected, WaitTimeout
from poolctl.allocation import Allocation
from poolctl.stream import EventStream
from tests.poolweb.processes import wait_until

from .conftest import People

pytestmark = pytest.mark.slow


@pytest.fixture
def bob(live: People) -> Client:
    with Client(live.server.url, live.bob) as client:
        yield client


@pytest.fixture
def alice(live: People) -> Client:
    with Client(live.server.url, live.alice) as client:
        yield client


def test_a_submission_is_granted_and_waited_for(bob):
    request = bob.submit(policy="dev", profile="one", name="train-1", labels={"team": "nlp"})
    assert request.state in ("pending", "allocated") and request.labels == {"team": "nlp"}
    granted = bob.wait(request, timeout=30)
    assert granted.state == "allocated" and granted.pool == "box" and granted.resources == {"gpu": 1, "step_run": 1}
    assert bob.release(granted).state == "released"
    assert bob.release(granted).state == "released"  # idempotent


class Recording(EventStream):
    """The real stream, noting what it delivers."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.seen: list[tuple[str, dict]] = []

    def receive(self, timeout: float):
        event = super().receive(timeout)
        if event is not None:
            self.seen.append((event.type, event.data))
        return event


class Streaming(Client):
    def event_stream(self) -> EventStream:
        self.stream = Recording(self.url, self.token)
        return self.stream


def test_the_wait_learns_of_the_grant_from_the_event_stream(live, bob):
    blocker = bob.wait(bob.submit(policy="dev", profile="two"), timeout=30)
    streaming = Streaming(live.server.url, live.bob)
    waiting = streaming.submit(policy="dev", profile="one")
    threading.Timer(1.0, bob.release, [blocker]).start()
    assert streaming.wait(waiting, timeout=30).state == "allocated"
    assert ("request.updated", waiting.id, "allocated") in [
        (kind, data.get("id"), data.get("state")) for kind, data in streaming.stream.seen]


class NoStream(Client):
    """A client whose event stream is refused (nothing listens there): it must poll."""

    def event_stream(self) -> EventStream:
        return EventStream("http://127.0.0.1:9", self.token)


def test_without_the_event_stream_the_wait_polls_and_still_sees_the_grant(live, bob):
    blocker = bob.wait(bob.submit(policy="dev", profile="two"), timeout=30)
    polling = NoStream(live.server.url, live.bob)
    waiting = polling.submit(policy="dev", profile="one")
    threading.Timer(1.0, bob.release, [blocker]).start()
    started = time.monotonic()
    granted = polling.wait(waiting, timeout=30)
    assert granted.state == "allocated" and time.monotonic() - started < 15


def test_a_wait_that_runs_out_raises_a_timeout_with_the_reason(bob):
    bob.wait(bob.submit(policy="dev", profile="two"), timeout=30)
    waiting = bob.submit(policy="dev", profile="one")
    with pytest.raises(WaitTimeout) as raised:
        bob.wait(waiting, timeout=1)
    assert "still pending" in raised.value.message and "WaitingFor" in raised.value.message


def test_a_request_that_can_never_fit_is_rejected_with_the_reason_sentence(bob):
    with pytest.raises(Rejected) as raised:
        with bob.allocation(policy="dev", profile="flex", resource_settings={"gpu_count": 5}):
            pytest.fail("the block must not run")
    assert raised.value.reason == "ExceedsPoolCapacity" and "box" in raised.value.message
    assert raised.value.request.state == "rejected"


def test_the_allocation_renews_its_lease_and_is_released_when_the_block_raises(bob):
    with pytest.raises(ValueError, match="the training failed"):
        with bob.allocation(policy="dev", profile="one", lease_seconds=10, timeout=30) as allocation:
            assert allocation.pool == "box"
            first = bob.get(allocation.id).lease_expires_at
            # A heartbeat every third of the lease (10 s): the lease moves on within ~3.4 s.
            wait_until(lambda: bob.get(allocation.id).lease_expires_at > first, 10, "a heartbeat to renew the lease")
            held = allocation.id
            raise ValueError("the training failed")
    after = bob.get(held)
    assert after.state == "released" and after.reason == "Released"


def test_ctrl_c_in_the_block_releases_the_allocation(bob):
    with pytest.raises(KeyboardInterrupt):
        with bob.allocation(policy="dev", profile="one", timeout=30) as allocation:
            held = allocation.id
            raise KeyboardInterrupt
    assert bob.get(held).state == "released"


def test_the_holder_sees_preemption_and_leaving_the_block_releases(bob, alice):
    allocation: Allocation
    with pytest.raises(Preempted) as raised:
        with bob.allocation(policy="dev", profile="two", timeout=30) as allocation:
            urgent = alice.submit(policy="urgent", profile="two")
            assert allocation.preempting.wait(15), "the keeper did not see the preemption"
            allocation.check()
    assert raised.value.reason == "PreemptedByPriority" and f"request {urgent.id}" in raised.value.message
    assert bob.get(allocation.id).state == "preempted"  # acknowledged: no retries were asked for
    assert alice.wait(urgent, timeout=30).state == "allocated"
