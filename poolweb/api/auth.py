"""Bearer tokens: ``Authorization: Bearer <token>``; only the token's SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets

from django.utils import timezone
from rest_framework import authentication, exceptions

from poolweb.models import ApiToken


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_create(*, user) -> str:
    """A new token for ``user``; the plain token is returned once and never stored."""
    token = secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, digest=digest(token), prefix=token[:8])
    return token


def token_used(token: str) -> ApiToken | None:
    """The token of an active user, its use noted; None for an unknown token or inactive user."""
    found = ApiToken.objects.select_related("user").filter(digest=digest(token)).first()
    if found is None or not found.user.is_active:
        return None
    ApiToken.objects.filter(pk=found.pk).update(last_used_at=timezone.now())
    return found


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace") != self.keyword:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization: Bearer <token> takes exactly one token")
        try:
            token = header[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("the token is not valid") from None
        found = token_used(token)
        if found is None:
            raise exceptions.AuthenticationFailed("the token is not valid")
        return found.user, found

    def authenticate_header(self, request) -> str:
        return self.keyword
