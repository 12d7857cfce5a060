"""Asking the directory again about a user who uses an API token or keeps a stream open
(decisions 167, 169). A session ends with the user's deactivation, but a token was issued once
and would otherwise outlive the directory's word. When the directory last answered for the user
more than ``POOLWEB_DIRECTORY_RECHECK_MINUTES`` ago, the next use of a token (REST call, stream
sign-in) and the next rights check of an open stream (``EVENT_STREAM["RECHECK_MS"]``) ask again:

- it has the user: their groups and admin rights follow it (services/directory.py);
- it has no such user (LDAP: removed, or disabled and so left out by the user filter; OIDC: the
  refresh grant refused): the user is deactivated, so the token is refused and the stream closes
  as for any deactivated user; a later sign-in through the directory makes them active again;
- it does not answer: the last answer stands, and the next use asks again (refusing would stop
  every API client, the Slurm bridge among them, at once, for an outage of the directory).

One caller asks per interval: it claims the check by moving ``checked_at`` with a conditional
update (others see it fresh and go on), and moves it back when the directory did not answer.

LDAP: the service account searches the user, through the authentication backend that offers
``directory_user`` (poolweb/directory/ldap.py), so this module imports no LDAP library. OIDC: the
refresh token kept at sign-in gets a new access token and the userinfo's claims
(services/oidc_provider.py); a user signed in without one is asked again only at their next
sign-in (docs/sign-in.md says how to have the provider issue one).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_backends
from django.utils import timezone

from poolweb.models import DirectoryAccount
from poolweb.services.directory import DirectoryUnreachable, claim_groups, directory_user_disable, directory_user_sync
from poolweb.services.oidc_provider import ProviderRefused, ProviderUnreachable, refreshed_claims, sealed, unsealed

log = logging.getLogger(__name__)


def directory_recheck(user, now: datetime | None = None) -> None:
    """Ask the directory about ``user`` if it is time (the module's docstring); ``user`` is
    updated in place (``is_active``, ``is_staff``, ``is_superuser``)."""
    if not (settings.LDAP_ENABLED or settings.OIDC) or not user.is_active:
        return  # no query at all without a directory to ask
    now = now or timezone.now()
    account = DirectoryAccount.objects.filter(user=user).first()
    if account is None or now - account.checked_at < timedelta(minutes=settings.POOLWEB["DIRECTORY_RECHECK_MINUTES"]):
        return
    if account.source == DirectoryAccount.Source.OIDC and not (settings.OIDC and account.refresh_token):
        return
    if account.source == DirectoryAccount.Source.LDAP and not settings.LDAP_ENABLED:
        return
    if not DirectoryAccount.objects.filter(pk=account.pk, checked_at=account.checked_at).update(checked_at=now):
        return  # another caller is asking right now
    try:
        answer = _ask_ldap(user) if account.source == DirectoryAccount.Source.LDAP else _ask_oidc(user, account)
    except DirectoryUnreachable as error:
        log.warning("could not re-check %s with the directory: %s", user.get_username(), error.detail)
        DirectoryAccount.objects.filter(pk=account.pk, checked_at=now).update(checked_at=account.checked_at)
        return
    if answer is None:
        directory_user_disable(user=user, now=now)
    user.is_active, user.is_staff, user.is_superuser = (answer.is_active, answer.is_staff, answer.is_superuser) \
        if answer is not None else (False, False, False)


def _ask_ldap(user):
    backend = next((b for b in get_backends() if hasattr(b, "directory_user")), None)
    if backend is None:
        raise DirectoryUnreachable("no LDAP backend in AUTHENTICATION_BACKENDS")
    found = backend.directory_user(user.get_username())
    return found if found is not None and found.pk == user.pk else None


def _ask_oidc(user, account: DirectoryAccount):
    provider = settings.OIDC
    refresh_token = unsealed(account.refresh_token)
    if not refresh_token:
        raise DirectoryUnreachable("the kept refresh token cannot be read (SECRET_KEY changed?)")
    try:
        claims, kept = refreshed_claims(provider, refresh_token)
    except ProviderUnreachable as error:
        raise DirectoryUnreachable(str(error)) from error
    except ProviderRefused as error:
        log.info("the OIDC provider refused to refresh %s's grant (%s)", user.get_username(), error)
        DirectoryAccount.objects.filter(pk=account.pk).update(refresh_token="")
        return None
    if claims.get("sub") != account.subject:
        return None
    directory_user_sync(user=user, source=account.source, subject=account.subject,
                        directory_groups=claim_groups(claims, provider.groups_claim))
    DirectoryAccount.objects.filter(pk=account.pk).update(refresh_token=sealed(kept))
    user.refresh_from_db(fields=["is_active", "is_staff", "is_superuser"])
    return user
