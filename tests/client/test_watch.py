"""A position counts every pool's waiting requests in one order (the server's
decision 120), so a grant on any pool may move it: a waiting request is read again on a
``pool.updated`` of any pool, at most once a second. The server is a fake api and stream."""

from __future__ import annotations

from poolctl import watch
from poolctl.models import Request
from poolctl.stream import Event


class FakeStream:
    connection = object()

    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def receive(self, timeout: float) -> Event | None:
        return self.events.pop(0) if self.events else None


class FakeApi:
    def __init__(self, events: list[Event], answers: list[dict]) -> None:
        self.events, self.answers, self.reads = events, answers, 0

    def event_stream(self) -> FakeStream:
        return FakeStream(self.events)

    def get(self, request_id: int) -> Request:
        self.reads += 1
        return Request.from_json(self.answers.pop(0))


def test_a_pool_update_of_another_pool_reads_a_waiting_request_again():
    waiting = {"id": 7, "state": "pending", "position": 3, "queue_pool": "h100"}
    api = FakeApi([Event("pool.updated", 1, {"name": "a100"})], [{**waiting, "position": 2}])
    follower = watch.RequestWatch(api, Request.from_json(waiting))
    follower.next_read = float("inf")  # only the event may cause a read

    assert follower._listen(0.1).position == 2 and api.reads == 1


def test_pool_updates_are_read_at_most_once_a_second():
    waiting = {"id": 7, "state": "pending", "position": 3}
    api = FakeApi([Event("pool.updated", 1, {"name": "a100"}), Event("pool.updated", 2, {"name": "h100"})],
                  [{**waiting, "position": 2}])
    follower = watch.RequestWatch(api, Request.from_json(waiting))
    follower._listen(0.1)
    assert follower._listen(0.1) is None and api.reads == 1
