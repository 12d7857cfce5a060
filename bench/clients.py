"""The front-door bench's clients: separate processes, each with one keep-alive HTTP connection
(``http.client``) and its own bearer token, as a pipeline's submitter would be.

A ``Clients`` object starts them once and hands each a command; every command runs on all
clients at once and the answers come back together. Times are ``time.time()``, so they compare
with the server's timestamps and across processes.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import time
from collections.abc import Sequence
from typing import NamedTuple


class Call(NamedTuple):
    """One HTTP call as a client saw it."""

    started: float
    ended: float
    status: int
    id: int | None
    state: str | None
    locked: bool  # the answer mentions "database is locked"


class Connection:
    """A keep-alive connection that reconnects once if the server closed it between calls."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port = host, port
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.http = http.client.HTTPConnection(host, port, timeout=60)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            try:
                self.http.request(method, path, body=data, headers=self.headers)
                response = self.http.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.http.close()
                self.http = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def timed(self, method: str, path: str, body: dict | None = None) -> Call:
        started = time.time()
        status, raw = self.call(method, path, body)
        ended = time.time()
        try:
            found = json.loads(raw)
        except ValueError:
            found = {}
        found = found if isinstance(found, dict) else {}
        return Call(started, ended, status, found.get("id"), found.get("state"), b"database is locked" in raw)


def _serve(pipe, host: str, port: int, token: str) -> None:
    """A client process: run each command it is sent until told to stop."""
    connection = Connection(host, port, token)
    while True:
        command, args = pipe.recv()
        if command == "stop":
            return
        if command == "calls":  # [(method, path, body)], one after another
            pipe.send([connection.timed(*call) for call in args])
        elif command == "hold":
            pipe.send(_hold(connection, *args))
        elif command == "reconnect":  # the next call opens a new connection
            connection.http.close()
            pipe.send(None)


def _hold(connection: Connection, url: str, token: str, resume_from: int, ids: Sequence[int],
          seconds: float) -> list[tuple[int, float]]:
    """Follow the event stream from ``resume_from``; release each of ``ids`` when it is told it is
    being preempted (api.md §3 ``request.updated`` with state ``preempting``), as a job's holder
    does. Returns (id, when released) until all are released or ``seconds`` pass."""
    from websockets.sync.client import connect

    waiting, released = set(ids), []
    deadline = time.time() + seconds
    with connect(url, open_timeout=10) as stream:
        stream.send(json.dumps({"token": token, "resume_from": resume_from}))
        while waiting and time.time() < deadline:
            try:
                message = json.loads(stream.recv(timeout=max(0.01, deadline - time.time())))
            except TimeoutError:
                break
            data = message.get("data") or {}
            if message.get("type") == "request.updated" and data.get("state") == "preempting" and data["id"] in waiting:
                waiting.discard(data["id"])
                connection.call("POST", f"/api/v1/requests/{data['id']}/release")
                released.append((data["id"], time.time()))
    return released


class Clients:
    """``len(tokens)`` client processes against ``host:port`` (or, with several ports, client n
    against the n-th, round-robin: several hosts)."""

    def __init__(self, host: str, port: int | Sequence[int], tokens: Sequence[str]) -> None:
        context = multiprocessing.get_context("spawn")  # nothing of the bench's Django in them
        ports = [port] if isinstance(port, int) else list(port)
        self.pipes, self.processes = [], []
        for n, token in enumerate(tokens):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, host, ports[n % len(ports)], token), daemon=True)
            process.start()
            self.pipes.append(ours)
            self.processes.append(process)

    def __len__(self) -> int:
        return len(self.pipes)

    def run(self, command: str, per_client: Sequence) -> list:
        """Send each client its arguments, then wait for every answer (in client order)."""
        for pipe, args in zip(self.pipes, per_client):
            pipe.send((command, args))
        return [pipe.recv() for pipe in self.pipes[:len(per_client)]]

    def reconnect(self) -> None:
        """Each client's next call comes on a new connection (and may land on another web process)."""
        self.run("reconnect", [None] * len(self))

    def calls(self, per_client: Sequence[Sequence[tuple]]) -> list[Call]:
        return [call for answers in self.run("calls", per_client) for call in answers]

    def close(self) -> None:
        for pipe in self.pipes:
            pipe.send(("stop", None))
        for process in self.processes:
            process.join(10)


def split(items: Sequence, parts: int) -> list[list]:
    """``items`` dealt round-robin into ``parts`` lists."""
    return [list(items[n::parts]) for n in range(parts)]
