"""API tokens (``Authorization: Bearer <token>``, and the event stream's first message): issued
once, stored only as their SHA-256, noted when used (to the minute)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.utils import timezone

from poolweb.models import ApiToken

# How stale a token's last_used_at may grow before a use writes it again. A write per request was
# a second write transaction on every call (on SQLite one more wait for the write lock, 40 % of a
# submission's time behind a pass, measured); to the minute is what a person reading it needs.
LAST_USED_PRECISION = timedelta(minutes=1)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_issue(*, user) -> str:
    """A new token for ``user``; the plain token is returned once and never stored."""
    token = secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, digest=digest(token), prefix=token[:8])
    return token


def token_authenticate(token: str) -> ApiToken | None:
    """The token of an active user, its use noted; None for an unknown token or inactive user."""
    found = ApiToken.objects.select_related("user").filter(digest=digest(token)).first()
    if found is None or not found.user.is_active:
        return None
    now = timezone.now()
    if found.last_used_at is None or now - found.last_used_at >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return found
