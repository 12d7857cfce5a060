"""API tokens (``Authorization: Bearer <token>``, and the event stream's first message): issued
once, stored only as their SHA-256, noted when used (to the minute), revoked by deleting them
(docs/api.md §5)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from poolweb.models import ApiToken
from poolweb.services import audit
from poolweb.services.directory_recheck import directory_recheck
from poolweb.sql.api_calls import Bearer, bearer

MAX_NAME = 100  # ApiToken.name
COMMAND_NAME = "create_api_token"  # the name of a token made by the command without --name
# How stale a token's last_used_at may grow before a use writes it again. A write per request was
# a second write transaction on every call (on SQLite one more wait for the write lock, 40 % of a
# submission's time behind a pass, measured); to the minute is what a person reading it needs.
LAST_USED_PRECISION = timedelta(minutes=1)


class TokenNotFound(LookupError):
    """No such token, or another user's (for a caller who is not an admin)."""


class TooManyTokens(Exception):
    """The user has ``POOLWEB_MAX_TOKENS_PER_USER`` tokens already."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"you have {cap} API tokens, the most one may have (POOLWEB_MAX_TOKENS_PER_USER): "
                         "revoke one you no longer use, then create this one")
        self.cap = cap


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


OWNER = object()  # ``token_create``'s ``by`` when the owner makes it


@transaction.atomic
def token_create(*, user, name: str, by=OWNER) -> tuple[ApiToken, str]:
    """A new token for ``user``, and its secret: returned this once and never stored;
    ``TooManyTokens`` when ``user`` has the most one may have. ``by`` makes it: ``user`` itself
    unless given, None for an operator at the command line (the audit's actor)."""
    # The owner's row stays locked from the count to the insert, so two creations at the cap
    # cannot both see room. SQLite ignores FOR UPDATE, but its transactions take the write lock
    # at BEGIN (IMMEDIATE), which queues them all the same.
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").first()
    cap = settings.POOLWEB["MAX_TOKENS_PER_USER"]
    if tokens_held(owner=user) >= cap:
        raise TooManyTokens(cap)
    token = secrets.token_urlsafe(32)
    row = ApiToken.objects.create(user=user, name=name, digest=digest(token), prefix=token[:8])
    audit.record(actor=user if by is OWNER else by, action="token.create", target=audit.token_target(row.prefix),
                 after=f"{name} ({row.prefix}…) of {user.get_username()}", detail=audit.token_detail(row))
    return row, token


def token_issue(*, user, name: str = COMMAND_NAME, by=OWNER) -> str:
    """The secret of a new token for ``user`` (scripts and tests need no more)."""
    return token_create(user=user, name=name, by=by)[1]


def token_authenticate(token: str) -> Bearer | None:
    """The token of an active user, its use noted; None for an unknown token or inactive user."""
    if not token.isascii():
        return None  # a secret is URL-safe base64; a lone surrogate could not even be hashed
    found = bearer(digest(token))
    if found is not None:
        directory_recheck(found.user)  # a directory user's: still in the directory? (decision 167)
    if found is None or not found.user.is_active:
        return None
    now = timezone.now()
    if found.last_used_at is None or now - found.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=found.token_id).update(last_used_at=now)
    return found


def token_in_force(token_id: int) -> bool:
    """Whether the token still exists (not revoked); an open stream asks this again and again."""
    return ApiToken.objects.filter(pk=token_id).exists()


def tokens_held(*, owner) -> int:
    return ApiToken.objects.filter(user=owner).count()


def token_list(*, owner=None) -> QuerySet[ApiToken]:
    """``owner``'s tokens (everyone's when None), newest first."""
    rows = ApiToken.objects.select_related("user").order_by("-created_at", "-id")
    return rows if owner is None else rows.filter(user=owner)


@transaction.atomic
def token_revoke(*, token_id: int, user=None) -> None:
    """Delete a token: one of ``user``'s (an admin: anyone's), or any when ``user`` is None (an
    operator at the command line). It stops working at once, and open streams signed in with it
    close at their next check (``EVENT_STREAM["RECHECK_MS"]``). ``TokenNotFound`` otherwise."""
    rows = ApiToken.objects.filter(pk=token_id) if 0 < token_id < 2**63 else ApiToken.objects.none()
    if user is not None and not user.is_staff:
        rows = rows.filter(user=user)
    if not _revoke(list(rows.select_related("user").select_for_update()), by=user):
        raise TokenNotFound(f"there is no token {token_id}")


@transaction.atomic
def tokens_revoke_all(*, owner, by=None) -> int:
    """Delete every token of ``owner`` (someone leaving), ``by`` an account or (None) an operator at
    the command line; how many there were."""
    return _revoke(list(ApiToken.objects.filter(user=owner).select_related("user").select_for_update()), by=by)


def _revoke(tokens: list[ApiToken], *, by) -> int:
    """Delete ``tokens`` that are still there, each audited; how many were."""
    deleted = 0
    for token in tokens:
        if ApiToken.objects.filter(pk=token.pk).delete()[0]:
            deleted += 1
            audit.record(actor=by, action="token.revoke", target=audit.token_target(token.prefix),
                         before=f"{token.name} ({token.prefix}…) of {token.user.get_username()}", after="revoked",
                         detail=audit.token_detail(token))
    return deleted
