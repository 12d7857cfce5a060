"""What a client may send on ``/ws/events/`` and how each mistake is refused.

A client sends at most two small JSON objects, then only listens:

- ``{"token": "…"}`` when its connection has no signed-in session, optionally with
  ``"resume_from"``;
- ``{"resume_from": n}``: every event after ``n`` it may see, or ``{"type": "resync"}``;
  ``{"resume_from": null}`` starts from now without waiting for the start window.

The resume point may instead be in the URL, ``/ws/events/?resume_from=n``: it then arrives with
the handshake, however slow the link (see the consumer).

Anything else gets ``{"type": "error", "code": …, "message": …}`` and the connection is closed
with the code of its class below: the stream has no use for other input, and closing is the
clearest answer. An open stream is closed the same way when what signed it in no longer holds.

| close | code | why |
| --- | --- | --- |
| 4400 | ``bad_message`` | a message the protocol does not allow (or a bad ``resume_from`` in the URL) |
| 4401 | ``unauthenticated`` | no valid token or session |
| 4403 | ``account_disabled`` | the user was deactivated or deleted while the stream was open |
| 4408 | ``authentication_timeout`` | no token came within ``AUTH_TIMEOUT_MS`` |
| 4409 | ``permissions_changed`` | the user gained or lost admin rights: reconnect (and resume) |
| 4410 | ``token_revoked`` | the token that signed the stream in was revoked |
| 4411 | ``signed_out`` | the session that signed the stream in ended (signed out, password changed) |
| 4413 | ``message_too_large`` | a message above ``MAX_MESSAGE_CHARS`` |
| 4429 | ``too_many_failures`` | too many failed sign-ins from this address, so no token is checked; ``retry_after`` seconds |
| 1011 | — | an unexpected failure in this connection (logged) |
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import parse_qs

MAX_MESSAGE_CHARS = 4096  # a token and a number fit many times over; uvicorn itself stops at 16 MiB
MAX_TOKEN_CHARS = 256
MAX_SEQ = 2**63 - 1  # seq is a 64-bit signed integer

RESYNC = json.dumps({"type": "resync"})


class ProtocolError(Exception):
    """A refusal: ``close_code`` ends the connection, ``code`` and the message say why."""

    close_code = 4400
    code = "bad_message"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def as_json(self) -> str:
        return json.dumps({"type": "error", "code": self.code, "message": self.message})


class BadMessage(ProtocolError):
    pass


class Unauthenticated(ProtocolError):
    close_code = 4401
    code = "unauthenticated"


class AuthenticationTimeout(ProtocolError):
    close_code = 4408
    code = "authentication_timeout"


class MessageTooLarge(ProtocolError):
    close_code = 4413
    code = "message_too_large"


class AccountDisabled(ProtocolError):
    close_code = 4403
    code = "account_disabled"


class PermissionsChanged(ProtocolError):
    close_code = 4409
    code = "permissions_changed"


class TokenRevoked(ProtocolError):
    close_code = 4410
    code = "token_revoked"


class SignedOut(ProtocolError):
    close_code = 4411
    code = "signed_out"


class TooManyFailures(ProtocolError):
    close_code = 4429
    code = "too_many_failures"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def as_json(self) -> str:
        return json.dumps({"type": "error", "code": self.code, "message": self.message,
                           "retry_after": self.retry_after})


@dataclass(frozen=True)
class ClientMessage:
    token: str | None = None
    resume_from: int | None = None
    starts: bool = False  # "resume_from" was there (a number, or null for "from now")


def parse(text_data: str | None, bytes_data: bytes | None) -> ClientMessage:
    """The client's message, or the ``ProtocolError`` that refuses it."""
    if text_data is None:
        raise BadMessage("send JSON objects in text frames, not binary frames")
    if len(text_data) > MAX_MESSAGE_CHARS:
        raise MessageTooLarge(f"a message may have at most {MAX_MESSAGE_CHARS} characters")
    try:
        value = json.loads(text_data)
    except (ValueError, RecursionError):
        raise BadMessage("the message is not JSON") from None
    if not isinstance(value, dict):
        raise BadMessage('the message must be a JSON object, e.g. {"resume_from": 42}')
    unknown = sorted(set(value) - {"token", "resume_from"})
    if unknown:
        names = ", ".join(repr(name[:40]) for name in unknown[:3])
        raise BadMessage(f"unknown field {names}: a message has only token and resume_from")
    if not value:
        raise BadMessage("an empty message: send token or resume_from")
    return ClientMessage(token=_token(value), resume_from=_resume_from(value), starts="resume_from" in value)


def url_resume_point(query_string: bytes) -> tuple[bool, int | None]:
    """Whether the URL gives ``resume_from``, and the seq it gives; ``BadMessage`` if it is not one."""
    values = parse_qs(query_string.decode("latin-1"), keep_blank_values=True).get("resume_from")
    if values is None:
        return False, None
    seq = values[0]
    if len(values) > 1 or not (seq.isascii() and seq.isdigit() and len(seq) <= 19 and int(seq) <= MAX_SEQ):
        raise BadMessage("resume_from in the URL must be one integer seq, at least 0")
    return True, int(seq)


def _token(value: dict) -> str | None:
    if "token" not in value:
        return None
    token = value["token"]
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise BadMessage(f"token must be a non-empty string of at most {MAX_TOKEN_CHARS} characters")
    return token


def _resume_from(value: dict) -> int | None:
    seq = value.get("resume_from")
    if seq is None:
        return None
    # bool is an int in Python; true is not a seq.
    if type(seq) is not int or not 0 <= seq <= MAX_SEQ:
        raise BadMessage("resume_from must be null or an integer seq, at least 0")
    return seq
