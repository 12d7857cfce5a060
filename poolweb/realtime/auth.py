"""Who is on the other end of a stream: the console's session, or a bearer token sent as the
first message (api.md §3).

A browser sends its cookies with a websocket from any page, so a session only counts when the
handshake comes from this site (``Origin`` matching ``ALLOWED_HOSTS`` or
``CSRF_TRUSTED_ORIGINS``) or from a program that sends no ``Origin`` at all; another site's page
gets an anonymous connection and would need a token it does not have.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http.request import split_domain_port, validate_host

from poolweb.services.tokens import token_authenticate


def session_user(scope: dict) -> AbstractBaseUser | None:
    """The signed-in user of the handshake's session (AuthMiddlewareStack), if it may be used."""
    user = scope.get("user")
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    return user if origin_allowed(scope.get("headers", [])) else None


def origin_allowed(headers: list[tuple[bytes, bytes]]) -> bool:
    origins = [value for name, value in headers if name.lower() == b"origin"]
    if not origins:
        return True
    origin = origins[0].decode("latin-1")
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    try:
        domain, _port = split_domain_port(urlsplit(origin).netloc)
    except ValueError:  # not a URL at all
        return False
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def token_user(token: str) -> AbstractBaseUser | None:
    """The active user a bearer token belongs to, noting the use as the REST API does."""
    found = token_authenticate(token)
    return found.user if found else None
