"""The event stream (docs/events.md): ``/ws/events/``, signed in with ``{"token": …}`` as the first
message, resumed with ``resume_from`` after a drop so no event in between is lost.

``receive`` gives the next event, None when ``timeout`` passes first, or raises ``StreamDown``;
the caller polls the REST API meanwhile and calls ``receive`` again later, which reconnects.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from poolctl.version import USER_AGENT

PATH = "/ws/events/"
OPEN_TIMEOUT = 10.0
RESYNC = "resync"


class StreamDown(Exception):
    """The stream is not available now (refused, closed, unreachable); poll instead."""


@dataclass(frozen=True)
class Event:
    type: str
    seq: int | None = None
    data: dict[str, Any] = field(default_factory=dict)


def stream_url(url: str) -> str:
    """The server's root URL → the stream's: http → ws, https → wss, any path prefix kept."""
    parts = urlsplit(url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + PATH, "", ""))


class EventStream:
    def __init__(self, url: str, token: str, open_timeout: float = OPEN_TIMEOUT) -> None:
        self.url, self.token, self.open_timeout = stream_url(url), token, open_timeout
        self.connection: Any = None
        self.stack = ExitStack()
        self.last_seq: int | None = None  # resume from here after a drop

    def receive(self, timeout: float) -> Event | None:
        if self.connection is None:
            self._open()
        try:
            text = self.connection.recv(timeout=max(0.0, timeout))
        except TimeoutError:
            return None
        except Exception as error:  # closed by the server, a reset, a bad frame: all mean "down"
            self.close()
            raise StreamDown(str(error) or type(error).__name__) from None
        return self._read(text)

    def _open(self) -> None:
        try:
            from websockets.sync.client import connect

            # Entered as a context (websockets 17 deprecates holding a bare connection); closing
            # the stack closes it.
            self.connection = self.stack.enter_context(connect(
                self.url, open_timeout=self.open_timeout, close_timeout=1, user_agent_header=USER_AGENT))
            # resume_from null starts at once from now; a number replays what a drop missed.
            self.connection.send(json.dumps({"token": self.token, "resume_from": self.last_seq}))
        except Exception as error:  # no websockets, refused, timed out, not a websocket server
            self.close()
            raise StreamDown(str(error) or type(error).__name__) from None

    def _read(self, text: str | bytes) -> Event:
        try:
            message = json.loads(text)
        except ValueError:
            raise StreamDown("the stream sent something that is not JSON") from None
        kind = message.get("type", "")
        if kind == "error":  # refused (a revoked token, say): the REST calls will say why
            self.close()
            raise StreamDown(message.get("message", "refused"))
        seq = message.get("seq")
        if isinstance(seq, int):
            self.last_seq = seq
        elif kind == RESYNC:
            self.last_seq = None  # what was missed is gone: the caller re-reads the state
        return Event(type=kind, seq=seq if isinstance(seq, int) else None, data=message.get("data") or {})

    def close(self) -> None:
        self.connection = None
        try:
            self.stack.close()
        except Exception:  # closing a broken connection may fail again; it is gone either way
            pass
