"""Signing in with an OpenID Connect provider (decision 168): the authorization code flow with
PKCE (S256), through Authlib's Django client. ``/accounts/oidc/login/`` sends the browser to the
provider (its endpoints from ``POOLWEB_OIDC_ISSUER``'s discovery document, read once per
process); ``/accounts/oidc/callback/`` takes the code back, exchanges it (with the verifier and
the client's secret), checks the ID token (signature, issuer, audience, nonce) and signs in the
user its claims name, their groups from ``POOLWEB_OIDC_GROUPS_CLAIM`` (services/directory.py),
keeping the refresh token for re-checks (decision 169, services/oidc_provider.py).

Whatever goes wrong is said on the sign-in page, never a 500: a provider that does not answer,
a refusal at the provider, a stale or forged answer.
"""

from __future__ import annotations

import logging

import requests
from authlib.integrations.base_client import OAuthError
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from poolweb.directory_config import OidcProvider
from poolweb.services.directory import DirectoryUnreachable, LocalAccountTaken, directory_oidc_sign_in
from poolweb.services.oidc_provider import provider_client, provider_forget

log = logging.getLogger(__name__)
NEXT = "poolweb_oidc_next"  # the session's key for where to go once signed in
# The session the user's sign-in keeps: Django's model backend, which refuses an inactive user.
SESSION_BACKEND = "poolweb.accounts.ThrottledModelBackend"

def provider_or_404() -> OidcProvider:
    if settings.OIDC is None:
        raise Http404("OpenID Connect sign-in is not configured")
    return settings.OIDC


def back_to_sign_in(request: HttpRequest, message: str) -> HttpResponse:
    messages.error(request, message)
    return HttpResponseRedirect(reverse("login"))


@require_GET
def oidc_login(request: HttpRequest) -> HttpResponse:
    provider = provider_or_404()
    following = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(following, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure())
    request.session[NEXT] = following if safe and following else "/"
    try:
        return provider_client(provider).authorize_redirect(request, request.build_absolute_uri(reverse("oidc_callback")))
    except (requests.RequestException, ValueError) as error:  # no discovery document, or not JSON
        log.warning("the OIDC provider %s did not answer: %r", provider.issuer, error)
        provider_forget(provider)
        return back_to_sign_in(request, str(DirectoryUnreachable()))


@require_GET
def oidc_callback(request: HttpRequest) -> HttpResponse:
    provider = provider_or_404()
    try:
        token = provider_client(provider).authorize_access_token(request)
        claims = checked_claims(provider, token)
    except OAuthError as error:
        log.info("an OIDC sign-in did not complete: %s", error)
        return back_to_sign_in(request, f"The sign-in with {provider.name} did not complete ({error.error}). "
                                        "Try again from this page.")
    except (requests.RequestException, ValueError) as error:
        log.warning("the OIDC provider %s did not answer: %r", provider.issuer, error)
        return back_to_sign_in(request, str(DirectoryUnreachable()))
    try:
        user = directory_oidc_sign_in(claims=claims, groups_claim=provider.groups_claim,
                                      username_claim=provider.username_claim,
                                      refresh_token=token.get("refresh_token") or "")
    except LocalAccountTaken as error:
        return back_to_sign_in(request, str(error))
    following = request.session.pop(NEXT, "/")
    login(request, user, backend=SESSION_BACKEND)
    return HttpResponseRedirect(following)


def checked_claims(provider: OidcProvider, token: dict) -> dict:
    """The ID token's claims (Authlib checked them), with userinfo's added when the groups claim
    is not among them (some providers put groups in userinfo only): userinfo must name the same
    ``sub`` (OIDC Core 5.3.2), and the ID token's claims win."""
    claims = dict(token.get("userinfo") or {})
    if not claims.get("sub"):
        raise OAuthError(error="no_id_token", description="the provider sent no ID token naming the user")
    if provider.groups_claim not in claims:
        extra = dict(provider_client(provider).userinfo(token=token))
        if extra.get("sub") != claims["sub"]:
            raise OAuthError(error="userinfo_subject_mismatch", description="userinfo names another user")
        claims = {**extra, **claims}
    return claims


def oidc_paths() -> list[URLPattern]:
    return [path("oidc/login/", oidc_login, name="oidc_login"),
            path("oidc/callback/", oidc_callback, name="oidc_callback")]
