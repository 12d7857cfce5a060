"""HTTP to the REST API: JSON in and out, keep-alive, and every failure as an error to act on.

One connection per thread (the allocation's heartbeat thread has its own), reused between calls.
A call that fails because the server closed an idle kept-alive connection is sent once more on a
fresh one: every call the client makes is safe to repeat (heartbeat, release and cancel are
idempotent, R-51; a submission carries an ``Idempotency-Key``), except provision, which says so.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from typing import Any
from urllib.parse import urlencode, urlsplit

from poolctl.config import token_source
from poolctl.errors import (AuthenticationFailed, Conflict, InvalidInput, NotFound, PermissionRefused, PoolctlError,
                            ServerError, Unreachable)
from poolctl.version import USER_AGENT

API = "/api/v1"
TIMEOUT = 30.0
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
URL_HINT = "check POOLWEB_URL (or run `poolctl login`): the server's root URL, like http://127.0.0.1:8000"
INPUT_HINTS = {
    "unknown_policy": "`poolctl policies` lists the policies",
    "unknown_profile": "ask an admin which profiles your policy may use",
    "unknown_queue": "the profile does not list that policy; ask an admin which profiles it may use",
    "fixed_profile": "drop --gpu, --cpu, --memory and --resource: this profile's amounts are fixed",
}


class Transport:
    def __init__(self, url: str, token: str, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        self.url, self.token, self.timeout = url, token, timeout
        self.secure, self.netloc, self.prefix = parts.scheme == "https", parts.netloc, parts.path.rstrip("/")
        self.local = threading.local()

    def call(self, method: str, path: str, body: Any = None, *, params: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None, retry: bool = True) -> Any:
        """The parsed JSON answer (None for an empty one) of ``method`` on ``/api/v1`` + ``path``;
        the text of a CSV one, which ``headers`` may ask for (``Accept: text/csv``)."""
        target = self.prefix + API + path
        if params:
            # A list is the parameter repeated (``label=a=1&label=b=2``).
            target += "?" + urlencode({key: value for key, value in params.items() if value is not None}, doseq=True)
        payload = json.dumps(body).encode() if body is not None else None
        sent = {"Authorization": f"Bearer {self.token}", "Accept": "application/json",
                "User-Agent": USER_AGENT, **(headers or {})}
        if payload is not None:
            sent["Content-Type"] = "application/json"
        status, content_type, data = self._exchange(method, target, payload, sent, retry)
        return answer(method, path, status, content_type, data, self.url)

    def _exchange(self, method: str, target: str, payload: bytes | None, headers: dict[str, str],
                  retry: bool) -> tuple[int, str, bytes]:
        reused = getattr(self.local, "connection", None) is not None
        try:
            connection = self._connection()
            connection.request(method, target, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except BaseException as error:
            # Never reuse a connection an exchange broke off — a Ctrl-C half-way included: its
            # next request would fail (CannotSendRequest) or read the old answer.
            self.close()
            if isinstance(error, STALE) and reused and retry:  # the server dropped an idle connection
                return self._exchange(method, target, payload, headers, retry=False)
            if isinstance(error, (OSError, http.client.HTTPException)):
                raise self._unreachable(error) from None
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, response.getheader("Content-Type", ""), data

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self.local, "connection", None)
        if connection is None:
            kind = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            connection = kind(self.netloc, timeout=self.timeout)
            self.local.connection = connection
        return connection

    def _unreachable(self, error: BaseException) -> Unreachable:
        if isinstance(error, ssl.SSLError):
            why = f"TLS failed: {error.reason or error}"
        elif isinstance(error, socket.gaierror):
            why = "no such host"
        elif isinstance(error, TimeoutError):
            why = f"no answer within {self.timeout:.0f} s"
        elif isinstance(error, ConnectionRefusedError):
            why = "connection refused"
        else:
            why = str(error) or type(error).__name__
        return Unreachable(f"cannot reach the Poolweb server at {self.url} ({why})", f"is it running? {URL_HINT}")

    def close(self) -> None:
        connection = getattr(self.local, "connection", None)
        self.local.connection = None
        if connection is not None:
            connection.close()


def answer(method: str, path: str, status: int, content_type: str, data: bytes, url: str) -> Any:
    """The JSON of a 2xx answer; otherwise the error for the status, in the server's words."""
    is_json = content_type.split(";")[0].strip() == "application/json"
    try:
        parsed = json.loads(data) if data and is_json else None
    except ValueError:
        is_json, parsed = False, None
    if 200 <= status < 300 and (is_json or not data):
        return parsed
    if 200 <= status < 300 and content_type.split(";")[0].strip() == "text/csv":  # asked for by Accept
        return data.decode("utf-8")
    if not is_json:  # not a Poolweb answer: a proxy, a login page, another program on the port
        raise ServerError(f"{url} answered {status} to {method} {API}{path} with {content_type or 'no content type'}, "
                          "not as a Poolweb server", URL_HINT)
    raise error_for(status, parsed if isinstance(parsed, dict) else {}, url)


def error_for(status: int, body: dict[str, Any], url: str) -> PoolctlError:
    detail = str(body.get("detail", "")).rstrip(".")
    if status == 401:
        return AuthenticationFailed(f"the server at {url} refused the token ({detail or 'not valid'})",
                                    f"make a token on {token_source(url)}, then run `poolctl login`")
    if status == 403:
        if "group" in detail:
            return PermissionRefused(detail, "ask an admin to add you to that group")
        return PermissionRefused(f"permission refused ({detail})", "this needs an admin account")
    if status in (400, 413):
        return invalid_input(body.get("errors") or [{"path": "", "code": "invalid", "message": detail}])
    if status == 404:
        return NotFound(detail or "not found")
    if status == 409:
        return Conflict(detail or "the request changed meanwhile", "try again")
    if status >= 500:
        return ServerError(f"the server at {url} failed ({status})", "try again; if it persists, see the server's log")
    return PoolctlError(f"the server at {url} answered {status}: {detail or body}")


def invalid_input(errors: list[dict[str, str]]) -> InvalidInput:
    """One line for the first error, how many more there are, and the fix for its code."""
    first = errors[0]
    where = f"{first.get('path')}: " if first.get("path") else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return InvalidInput(f"{where}{first.get('message', 'invalid')}{more}", INPUT_HINTS.get(first.get("code", "")),
                        errors)
