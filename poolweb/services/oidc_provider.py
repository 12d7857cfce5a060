"""Talking to the OpenID Connect provider outside a browser's visit: Authlib's client of the
configured provider (one per process and provider; its discovery document read at first use),
the refresh grant a re-check uses (decision 169), and the refresh token kept encrypted.

A refresh token lets Poolweb ask the provider, without the user, whether it still vouches for
them and what their groups are now: a disabled user's grant is refused (Keycloak ends a disabled
user's sessions, so their refresh tokens with them). It is a credential, so it is stored
encrypted (Fernet, a key derived from SECRET_KEY): a copy of the database alone does not give it.
"""

from __future__ import annotations

import base64
import hashlib

import requests
from authlib.integrations.base_client import OAuthError
from authlib.integrations.django_client import OAuth
from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

from poolweb.directory_config import OidcProvider

TIMEOUT_SECONDS = 10
_clients: dict[OidcProvider, object] = {}


class ProviderRefused(Exception):
    """The provider refused the refresh grant: it no longer vouches for the user."""


class ProviderUnreachable(Exception):
    pass


def provider_client(provider: OidcProvider):
    """Authlib's client of ``provider``: the authorization code flow with PKCE (S256)."""
    if provider not in _clients:
        _clients[provider] = OAuth().register(
            "directory", client_id=provider.client_id, client_secret=provider.client_secret,
            server_metadata_url=provider.discovery_url,
            client_kwargs={"scope": provider.scopes, "code_challenge_method": "S256", "default_timeout": TIMEOUT_SECONDS})
    return _clients[provider]


def provider_forget(provider: OidcProvider) -> None:
    """Read the discovery document again at the next use (it could not be read)."""
    _clients.pop(provider, None)


def refreshed_claims(provider: OidcProvider, refresh_token: str) -> tuple[dict, str]:
    """The user's claims as the provider's userinfo gives them now, and the refresh token to keep
    (a provider may rotate it). ``ProviderRefused``, or ``ProviderUnreachable``."""
    app = provider_client(provider)
    try:
        token = app.fetch_access_token(grant_type="refresh_token", refresh_token=refresh_token)
        claims = dict(app.userinfo(token=token))
    except OAuthError as error:
        if error.error in ("invalid_grant", "unauthorized_client", "invalid_client"):
            raise ProviderRefused(error.error) from error
        raise ProviderUnreachable(repr(error)) from error
    except (requests.RequestException, ValueError) as error:
        provider_forget(provider)
        raise ProviderUnreachable(repr(error)) from error
    return claims, token.get("refresh_token") or refresh_token


def _fernet() -> Fernet:
    digest = hashlib.sha256(f"poolweb directory refresh token {settings.SECRET_KEY}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def sealed(refresh_token: str) -> str:
    return _fernet().encrypt(refresh_token.encode()).decode() if refresh_token else ""


def unsealed(stored: str) -> str:
    """The refresh token, or "" (none kept, or sealed under another SECRET_KEY)."""
    if not stored:
        return ""
    try:
        return _fernet().decrypt(stored.encode()).decode()
    except InvalidToken:
        return ""
