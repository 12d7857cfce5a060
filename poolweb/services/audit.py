"""The audit log (decisions 154–158): who did what, when, from where, to what.

``record`` writes one entry, and is called by the service that does the act, inside the act's own
transaction: an act rolled back leaves no entry, and an entry never exists without its act (a
batch's one entry follows its items' transactions, decision 156). The
services are shared by the API, the console (which calls the API) and the commands, so each act
is recorded once whoever asked for it.

Who: the account the service acts for (its username then, and its id), or, for a command run
without an account, the operator's ``user@host``. From where: the client's address
(``addresses.request_address``), set for the length of each HTTP request by
``accounts.AuditOrigin``; commands set ``manage.py`` (``acting_from``). Outside both — a Django
shell, a script importing the services — it is ``manage.py`` too: nothing else runs the services
outside an HTTP request.

What is recorded (``ACTIONS``): provisions, draft resets, restores, management switches, API
tokens created and revoked, the permission to submit for others granted and revoked, service
accounts created and revoked, and acts on
another user's request — a submission for them, a heartbeat, a release or a cancel that did
something (an admin's, or a service account's). A batch of such acts (``POST /requests/batch``,
``POST /requests/actions``) is one entry listing its items (decision 156).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any, NamedTuple

from django.db import connection

from poolweb.models import AuditEntry
from poolweb.selectors.audit import ACTIONS
from poolweb.services.payloads import api_time

COMMAND_LINE = "manage.py"
TEXT = 200  # AuditEntry.target, before, after


class Origin(NamedTuple):
    """Where the acts of this context come from: an address or ``manage.py``, and for a command
    the operator's ``user@host``, who acts when no account does."""

    where: str
    person: str = ""


_origin: ContextVar[Origin | None] = ContextVar("poolweb_audit_origin", default=None)


@contextlib.contextmanager
def acting_from(where: str, person: str = "") -> Iterator[None]:
    """The acts recorded inside come from ``where`` (and ``person`` when no account acts)."""
    token = _origin.set(Origin(where[:64], person[:150]))
    try:
        yield
    finally:
        _origin.reset(token)


def origin() -> Origin:
    return _origin.get() or Origin(COMMAND_LINE)


def record(*, actor, action: str, target: str, before: Any = "", after: Any = "",
           request_ids: Sequence[int] = (), detail: dict | None = None, actor_name: str = "") -> AuditEntry:
    """One entry for an act done in the caller's transaction. ``actor`` is the account that acted,
    or None for an operator at the command line: ``actor_name`` when the act names one (a
    version's author), else ``acting_from``'s person."""
    if action not in ACTIONS:
        raise ValueError(f"{action!r} is not an audited action")
    if not connection.in_atomic_block:
        # Outside a transaction the entry and the act could part: one committed, the other not.
        raise RuntimeError("an audit entry is written in the transaction of its act")
    here = origin()
    if actor is not None:
        name, actor_id = actor.get_username(), actor.pk
    else:
        name, actor_id = (actor_name or here.person or here.where)[:150], None
    return AuditEntry.objects.create(
        actor=name, actor_id=actor_id, origin=here.where, action=action, target=target[:TEXT],
        before=str(before)[:TEXT], after=str(after)[:TEXT], request_ids=list(request_ids), detail=detail or {})


def on_off(enabled: bool) -> str:
    return "on" if enabled else "off"


def request_target(request_id: int) -> str:
    return f"request:{request_id}"


def token_target(prefix: str) -> str:
    return f"token:{prefix}"


def token_detail(token) -> dict:
    return {"name": token.name, "owner": token.user.get_username(), "owner_id": token.user_id, "token_id": token.pk}


class BatchItem(NamedTuple):
    """One request a batch acted on for another user: its id, its owner, and what it became."""

    request_id: int
    owner: str
    state: str


def record_batch(*, actor, action: str, items: Sequence[BatchItem]) -> AuditEntry | None:
    """One entry for the items of a batch done for other users (decision 156), none when there is
    none. ``action`` is the single act's (``heartbeat``, ``release``, ``cancel``, ``submit``)."""
    if not items:
        return None
    owners = sorted({item.owner for item in items})
    return record(actor=actor, action=f"requests.{action}", target="requests",
                  after=f"{len(items)} request{'s' if len(items) != 1 else ''} of {', '.join(owners)}",
                  request_ids=[item.request_id for item in items],
                  detail={"items": [{"request": i.request_id, "owner": i.owner, "state": i.state} for i in items]})


def entry_data(entry: AuditEntry) -> dict:
    """An entry as ``GET /audit`` and ``manage.py audit --json`` write it."""
    return {"id": entry.pk, "at": api_time(entry.at), "actor": entry.actor, "actor_id": entry.actor_id,
            "origin": entry.origin, "action": entry.action, "object": entry.target, "before": entry.before,
            "after": entry.after, "request_ids": entry.request_ids, "detail": entry.detail}
