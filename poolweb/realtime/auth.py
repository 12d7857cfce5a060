"""Who is on the other end of a stream, and whether that still holds: the console's session, or
a bearer token sent as the first message (docs/events.md).

A browser sends its cookies with a websocket from any page, so a session only counts when the
handshake comes from this site, judged as Django's CSRF check judges an ``Origin``: the
handshake's own scheme, host and port (the host one of ``ALLOWED_HOSTS``), or one of
``CSRF_TRUSTED_ORIGINS`` (wildcards included). A program that sends no ``Origin`` at all is not
a browser, so it cannot be another site's page. Another site's page gets an anonymous connection
and would need a token it does not have.

Rights are read at sign-in and checked again while the stream is open (``refusal``): a user
deactivated, a token revoked, a session ended or admin rights gained or lost closes the stream
with the code that says which (``protocol.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from poolweb.addresses import scope_address
from poolweb.realtime.outbox import Viewer
from poolweb.realtime.protocol import (
    AccountDisabled, PermissionsChanged, ProtocolError, SignedOut, TokenRevoked, TooManyFailures,
)
from poolweb.services.directory_recheck import directory_recheck
from poolweb.services.signin import sign_in_failed, sign_in_wait, throttled_message
from poolweb.services.tokens import token_authenticate, token_in_force


@dataclass(frozen=True)
class Credential:
    """What signed a stream in, kept to check it again: one of a token or a session."""

    user_id: int
    is_admin: bool
    token_id: int | None = None
    session_key: str | None = None

    @property
    def viewer(self) -> Viewer:
        return Viewer(user_id=self.user_id, is_admin=self.is_admin)


def session_credential(scope: dict) -> Credential | None:
    """The signed-in user of the handshake's session (AuthMiddlewareStack), if it may be used."""
    user = scope.get("user")
    if user is None or not user.is_authenticated or not user.is_active or not origin_allowed(scope):
        return None
    return Credential(user.pk, user.is_staff, session_key=scope["session"].session_key)


def token_credential(token: str, scope: dict) -> Credential | None:
    """The active user a bearer token belongs to, noting the use as the REST API does. As there,
    a wrong token counts against the client's address, and while it is throttled every token is
    refused unchecked (``TooManyFailures``)."""
    address = scope_address(scope)
    wait = sign_in_wait(address=address)
    if wait is not None:
        raise TooManyFailures(throttled_message(wait), wait)
    found = token_authenticate(token)
    if found is None:
        sign_in_failed(address=address)
        return None
    return Credential(found.user.pk, found.user.is_staff, token_id=found.token_id)


def refusal(credential: Credential) -> ProtocolError | None:
    """Why the stream may no longer go on as it was opened, or None: the account still active,
    the token not revoked, the session not ended, admin rights unchanged."""
    user = get_user_model().objects.filter(pk=credential.user_id).first()
    if user is not None:
        directory_recheck(user)  # a directory user's: at most every POOLWEB_DIRECTORY_RECHECK_MINUTES
    if user is None or not user.is_active:
        return AccountDisabled("the account was deactivated")
    if credential.token_id is not None and not token_in_force(credential.token_id):
        return TokenRevoked("the token was revoked")
    if credential.session_key is not None and not _session_signs_in(credential.session_key, user.pk):
        return SignedOut("the session ended: signed out, or the password changed")
    if user.is_staff != credential.is_admin:
        return PermissionsChanged("your admin rights changed: reconnect, resuming, for the events they allow")
    return None


def _session_signs_in(session_key: str, user_id: int) -> bool:
    # Django's own check, as for a page: the session exists, names the user, and its password hash.
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    return get_user(SimpleNamespace(session=session)).pk == user_id


# --- the origin ----------------------------------------------------------------------------------

def origin_allowed(scope: dict) -> bool:
    """Django's ``CsrfViewMiddleware._origin_verified`` for a handshake: scheme, host and port."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    own = own_origin(scope)
    if own is not None and origin == own:
        return True
    trusted = settings.CSRF_TRUSTED_ORIGINS
    if origin in {o for o in trusted if "*" not in o}:
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    return any(is_same_domain(parsed.netloc, wildcard.netloc.lstrip("*"))
               for wildcard in (urlsplit(o) for o in trusted if "*" in o) if wildcard.scheme == parsed.scheme)


def own_origin(scope: dict) -> str | None:
    """``http[s]://host[:port]`` of the handshake as ``HttpRequest.get_host`` reads it, or None
    when the host is not one of ``ALLOWED_HOSTS`` (a DNS-rebinding page must not match itself)."""
    secure = scope.get("scheme") in ("wss", "https") or _proxy_says_secure(scope)
    host = _header(scope, b"host")
    if host is None:
        server = scope.get("server")
        if not server:
            return None
        name, port = server
        host = name if port == (443 if secure else 80) else f"{name}:{port}"
    try:
        domain, _port = split_domain_port(host)
    except ValueError:
        return None
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return None
    return f"{'https' if secure else 'http'}://{host}"


def _proxy_says_secure(scope: dict) -> bool:
    """``SECURE_PROXY_SSL_HEADER``, as ``HttpRequest.is_secure`` honours it behind a TLS proxy."""
    configured = settings.SECURE_PROXY_SSL_HEADER
    if not configured:
        return False
    name, expected = configured
    header = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
    value = _header(scope, header)
    return value is not None and value.split(",")[0].strip() == expected


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None
