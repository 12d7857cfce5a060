"""What the directory says about a user, applied to Poolweb (decision 166).

``directory_user_sync`` runs at every directory sign-in and re-check: the user is active, in
exactly the managed groups (``DirectoryGroup``) their directory groups map to, and an
administrator (staff and superuser) when one of them ``makes_admin``; groups no mapping names
are the admin's to fill by hand and stay as they are. ``directory_user_disable`` deactivates a
user the directory no longer has (removed, or disabled and so left out by the user filter):
their sessions, tokens and open streams end as for any deactivated user (realtime/auth.py).

Example: with mappings ``ml-team → dev`` and ``gpu-admins → (admin)``, a user whose directory
groups are ``{"ML-Team", "staff"}`` ends in ``dev``, not an administrator; removed from
``ml-team`` in the directory, they leave ``dev`` at their next sign-in or re-check.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from poolweb.models import DirectoryAccount, DirectoryGroup
from poolweb.selectors.service_accounts import is_service_account
from poolweb.services.oidc_provider import sealed

log = logging.getLogger(__name__)


class DirectoryUnreachable(Exception):
    """The directory (LDAP server or OIDC provider) did not answer; ``detail`` says how, for the log."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("The company directory cannot be reached right now, so directory accounts cannot sign in. "
                         "Try again in a few minutes; if it lasts, tell your administrators.")
        self.detail = detail


class LocalAccountTaken(Exception):
    """The directory user's name is another account's that the directory may not take over: a
    local administrator's (whoever controls a directory name would become that administrator), or
    another OIDC identity's (``sub`` is the identity; a name can be given to someone else)."""

    def __init__(self, username: str, whose: str = "a local administrator account") -> None:
        super().__init__(f"{whose} is named {username!r}: an administrator must rename it "
                         "before the directory user of that name can sign in")
        self.username = username


@dataclass(frozen=True)
class Mapped:
    """Where a user's directory groups lead."""

    group_ids: frozenset[int]
    admin: bool


def directory_groups_mapped(names: Iterable[str]) -> Mapped:
    wanted = {name.casefold() for name in names}
    rows = [row for row in DirectoryGroup.objects.all() if row.name.casefold() in wanted]
    return Mapped(frozenset(row.group_id for row in rows if row.group_id is not None),
                  any(row.makes_admin for row in rows))


def managed_group_ids() -> set[int]:
    return set(Group.objects.filter(directory_groups__isnull=False).values_list("pk", flat=True))


def directory_user_claim(*, username: str, source: str, subject: str):
    """The user a directory identity signs in as: the one linked to it before, else the account
    of that username (a local non-administrator's is adopted), else a new one with no password.
    ``LocalAccountTaken`` for a local administrator's or a service account's name. Not saved when new."""
    account = DirectoryAccount.objects.select_related("user").filter(source=source, subject=subject).first()
    if account is not None:
        return account.user
    User = get_user_model()
    user = User.objects.filter(username__iexact=username).first()
    if user is None:
        user = User(username=username)
        user.set_unusable_password()
        return user
    if is_service_account(user):
        raise LocalAccountTaken(username, "a service account")  # a program's: never the directory's (decision 191)
    linked = DirectoryAccount.objects.filter(user=user).first()
    if linked is None and (user.is_staff or user.is_superuser):
        raise LocalAccountTaken(username)
    # An LDAP entry moved to another OU keeps its name and changes its DN: the same person. An
    # OIDC subject is stable, so another one under the name is another person.
    if linked is not None and (linked.source != source or source == DirectoryAccount.Source.OIDC):
        raise LocalAccountTaken(username, f"an account of {linked.get_source_display()}")
    return user


@transaction.atomic
def directory_user_sync(*, user, source: str, subject: str, directory_groups: Iterable[str],
                        now: datetime | None = None) -> Mapped:
    """Apply the directory's answer for ``user`` (saved here, created if new); what it mapped to."""
    now = now or timezone.now()
    mapped = directory_groups_mapped(directory_groups)
    user.is_active = True
    user.is_staff = user.is_superuser = mapped.admin
    if user.has_usable_password():
        user.set_unusable_password()  # an adopted local account: the directory's password from now on
    user.save()
    managed = managed_group_ids()
    current = set(user.groups.values_list("pk", flat=True))
    user.groups.set((current - managed) | mapped.group_ids)
    DirectoryAccount.objects.update_or_create(user=user, defaults={"source": source, "subject": subject,
                                                                   "checked_at": now})
    return mapped


def claim_text(claims: dict, name: str, limit: int) -> str:
    value = claims.get(name)
    return value[:limit] if isinstance(value, str) else ""


def claim_groups(claims: dict, name: str) -> set[str]:
    """The groups claim: a list of names (Keycloak, Okta, Entra ID), or one name."""
    value = claims.get(name)
    if isinstance(value, str):
        return {value}
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()


@transaction.atomic
def directory_oidc_sign_in(*, claims: dict, groups_claim: str, username_claim: str, refresh_token: str = ""):
    """The user an OIDC provider's checked claims name, synced: found by ``sub`` (stable), named
    by ``username_claim`` (``sub`` when it has none) when new; ``LocalAccountTaken`` as for LDAP.
    ``refresh_token`` is kept, encrypted, for the re-checks (services/directory_recheck.py)."""
    subject = claims["sub"]
    username = claim_text(claims, username_claim, 150) or subject[:150]
    user = directory_user_claim(username=username, source=DirectoryAccount.Source.OIDC, subject=subject)
    user.first_name = claim_text(claims, "given_name", 150) or user.first_name
    user.last_name = claim_text(claims, "family_name", 150) or user.last_name
    user.email = claim_text(claims, "email", 254) or user.email
    directory_user_sync(user=user, source=DirectoryAccount.Source.OIDC, subject=subject,
                        directory_groups=claim_groups(claims, groups_claim))
    # Kept for re-checks (decision 169); none offered: the last one is no longer good either.
    DirectoryAccount.objects.filter(user=user).update(refresh_token=sealed(refresh_token))
    return user


@transaction.atomic
def directory_user_disable(*, user, now: datetime | None = None) -> None:
    """The directory no longer has ``user``: deactivated, out of the managed groups, no admin."""
    log.info("the directory no longer has %s: deactivated", user.get_username())
    get_user_model().objects.filter(pk=user.pk).update(is_active=False, is_staff=False, is_superuser=False)
    user.groups.remove(*managed_group_ids())
    DirectoryAccount.objects.filter(user=user).update(checked_at=now or timezone.now())
    user.is_active = user.is_staff = user.is_superuser = False


