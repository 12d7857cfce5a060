"""Errors a person can act on, each with its exit code (the table ``poolctl --help`` prints).

Every error's message is one line that says what happened; ``hint`` names the fix. The codes
are distinct per cause so a script can branch on them; ``poolctl run`` exits with its command's
own code whenever the command ran to its end, and writes ``--result-file`` because a command's
codes can collide with these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from poolctl.models import Request

FAILURE = 1  # something not listed below, e.g. a request that changed under an action (409)
USAGE = 2
UNREACHABLE = 3
REFUSED = 4
REJECTED = 5
ENDED = 6
PREEMPTED = 7
TIMEOUT = 8
INTERRUPTED = 130  # what a shell reports for a program stopped by Ctrl-C (128 + SIGINT)

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "success (poolctl run: the command's own exit code whenever it ran to its end)"),
    (FAILURE, "another failure, e.g. a request that changed meanwhile (try again)"),
    (USAGE, "usage error: bad arguments, or input the server refused (unknown policy or profile, no such request)"),
    (UNREACHABLE, "the server is unreachable, or failed to answer"),
    (REFUSED, "authentication or permission refused (bad token, not in the policy's group, not an admin)"),
    (REJECTED, "the request was rejected: it can never run under the current configuration"),
    (ENDED, "the request was cancelled or its lease expired"),
    (PREEMPTED, "the request was preempted and no retries are left"),
    (TIMEOUT, "the wait timed out (--timeout)"),
    (INTERRUPTED, "interrupted (Ctrl-C or SIGTERM) before the command ran"),
)


class PoolctlError(Exception):
    """Base of every error poolctl raises on purpose."""

    exit_code = FAILURE
    kind = "failure"  # the ``type`` of the JSON error document

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def line(self) -> str:
        """The one line for stderr: what happened, then the fix."""
        return f"{self.message}: {self.hint}" if self.hint else self.message

    def as_json(self) -> dict[str, Any]:
        return {"type": self.kind, "message": self.message, "hint": self.hint, "exit_code": self.exit_code}


class UsageError(PoolctlError):
    exit_code = USAGE
    kind = "usage"


class InvalidInput(UsageError):
    """The server refused the input (400); ``errors`` are its {path, code, message} items."""

    kind = "invalid_input"

    def __init__(self, message: str, hint: str | None = None, errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(message, hint)
        self.errors = errors or []

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "errors": self.errors}


class NotFound(UsageError):
    kind = "not_found"


class Conflict(PoolctlError):
    """The server could not apply the action to the request as it is now (409)."""

    kind = "conflict"


class Unreachable(PoolctlError):
    exit_code = UNREACHABLE
    kind = "unreachable"


class ServerError(Unreachable):
    """The server answered, but with a failure (5xx) or with something that is not Poolweb."""

    kind = "server_error"


class Refused(PoolctlError):
    exit_code = REFUSED
    kind = "refused"


class AuthenticationFailed(Refused):
    kind = "authentication_failed"


class PermissionRefused(Refused):
    kind = "permission_refused"


class WaitTimeout(PoolctlError):
    exit_code = TIMEOUT
    kind = "timeout"


class Interrupted(PoolctlError):
    exit_code = INTERRUPTED
    kind = "interrupted"


class RequestEnded(PoolctlError):
    """A request that will not (or no longer) hold capacity; carries it, its reason and sentence."""

    exit_code = ENDED
    kind = "ended"

    def __init__(self, request: Request, hint: str | None = None) -> None:
        self.request = request
        self.reason = request.reason
        super().__init__(f"request {request.id} is {request.state} ({request.reason}: {request.message})", hint)

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "reason": self.reason, "request": self.request.to_json()}


class Rejected(RequestEnded):
    exit_code = REJECTED
    kind = "rejected"


class Cancelled(RequestEnded):
    kind = "cancelled"


class Expired(RequestEnded):
    kind = "expired"


class Preempted(RequestEnded):
    """Preempted: out of retries (state ``preempted``), or evicted while the caller held it."""

    exit_code = PREEMPTED
    kind = "preempted"


HINTS = {
    "rejected": "it can never run as asked: ask for less (see `poolctl pools` and `poolctl policies`) "
                "or ask an admin to change the configuration",
    "cancelled": "submit it again if it is still wanted",
    "expired": "its lease ran out without a heartbeat; submit it again",
    "preempted": "higher-priority work took its capacity; submit again, with --max-retries to be re-queued",
}


FAILED_STATES = {"rejected": Rejected, "cancelled": Cancelled, "expired": Expired, "preempted": Preempted}


def ended(request: Request) -> RequestEnded | None:
    """The error for a request that ended without doing its work; None for any other state.

    ``released`` is not here: it is how a request that ran ends. A holder that finds its request
    released by someone else (an admin's cancel of a live request ends it so) raises ``lost``.
    """
    kind = FAILED_STATES.get(request.state)
    return kind(request, HINTS[request.state]) if kind else None


def lost(request: Request) -> RequestEnded:
    """The error for a holder whose allocation ended under it: evicted (queued again, or out of
    retries) is ``Preempted``; else how it ended, or ``Cancelled`` when someone else released it."""
    if request.state in ("pending", "preempted"):
        return Preempted(request, "its capacity went to higher-priority work; use the next attempt, or submit again")
    return ended(request) or Cancelled(request, "it was released by someone else (an admin, or "
                                                "`poolctl release`) while it was in use")
