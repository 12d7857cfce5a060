"""What the directory says about a user, applied to Poolweb (decision 166).

``directory_user_sync`` runs at every directory sign-in and re-check: the user is active, in
exactly the managed groups (``DirectoryGroup``) their directory groups map to, and an
administrator (staff and superuser) when one of them ``makes_admin``; groups no mapping names
are the admin's to fill by hand and stay as they are. ``directory_user_disable`` deactivates a
user the directory no longer has (removed, or disabled and so left out by the user filter):
their sessions, tokens and open streams end as for any deactivated user (realtime/auth.py).

``directory_recheck`` asks the directory again about a user who uses an API token or keeps a
stream open (decision 167): a session ends with the user's deactivation, but a token was issued once and
would otherwise outlive the directory's word. When the directory last answered for the user more
than ``POOLWEB_DIRECTORY_RECHECK_MINUTES`` ago, the next use of a token (REST call, stream
sign-in) and the next re-check of an open stream (``EVENT_STREAM["RECHECK_MS"]``) ask it again:

- it has the user: their groups and admin rights follow it;
- it has no such user (removed, or disabled and so left out by the user filter): the user is
  deactivated, so the token is refused and the stream closes as for any deactivated user;
- it does not answer: the last answer stands and the next use asks again (refusing would stop
  every API client, the Slurm bridge among them, at once, for an outage of the directory).

LDAP users are asked with the service account, through the authentication backend that offers
``directory_user`` (poolweb/directory/ldap.py), so this module imports no LDAP library.

Example: with mappings ``ml-team → dev`` and ``gpu-admins → (admin)``, a user whose directory
groups are ``{"ML-Team", "staff"}`` ends in ``dev``, not an administrator; removed from
``ml-team`` in the directory, they leave ``dev`` at their next sign-in or re-check.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_backends, get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from poolweb.models import DirectoryAccount, DirectoryGroup

log = logging.getLogger(__name__)


class DirectoryUnreachable(Exception):
    """The directory (LDAP server or OIDC provider) did not answer; ``detail`` says how, for the log."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("The company directory cannot be reached right now, so directory accounts cannot sign in. "
                         "Try again in a few minutes; if it lasts, tell your administrators.")
        self.detail = detail


class LocalAccountTaken(Exception):
    """A local administrator's account has the directory user's name: the directory may not take
    it over (whoever controls a directory name would become that administrator)."""

    def __init__(self, username: str) -> None:
        super().__init__(f"a local administrator account is named {username!r}: an administrator must rename it "
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
    ``LocalAccountTaken`` for a local administrator's name. Not saved when new."""
    account = DirectoryAccount.objects.select_related("user").filter(source=source, subject=subject).first()
    if account is not None:
        return account.user
    User = get_user_model()
    user = User.objects.filter(username__iexact=username).first()
    if user is None:
        user = User(username=username)
        user.set_unusable_password()
        return user
    linked = DirectoryAccount.objects.filter(user=user).first()
    if (linked is None and (user.is_staff or user.is_superuser)) or (linked is not None and linked.source != source):
        raise LocalAccountTaken(username)
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


@transaction.atomic
def directory_user_disable(*, user, now: datetime | None = None) -> None:
    """The directory no longer has ``user``: deactivated, out of the managed groups, no admin."""
    log.info("the directory no longer has %s: deactivated", user.get_username())
    get_user_model().objects.filter(pk=user.pk).update(is_active=False, is_staff=False, is_superuser=False)
    user.groups.remove(*managed_group_ids())
    DirectoryAccount.objects.filter(user=user).update(checked_at=now or timezone.now())
    user.is_active = user.is_staff = user.is_superuser = False


def directory_user_checked(*, user, now: datetime | None = None) -> None:
    DirectoryAccount.objects.filter(user=user).update(checked_at=now or timezone.now())


def recheck_due(account: DirectoryAccount, now: datetime) -> bool:
    return now - account.checked_at >= timedelta(minutes=settings.POOLWEB["DIRECTORY_RECHECK_MINUTES"])


def directory_recheck(user, now: datetime | None = None) -> None:
    """Ask the directory about ``user`` if it is time (the module's docstring); ``user`` is
    updated in place (``is_active``, ``is_staff``)."""
    if not settings.LDAP_ENABLED:
        return  # no query at all without a directory to ask
    account = DirectoryAccount.objects.filter(user=user, source=DirectoryAccount.Source.LDAP).first()
    now = now or timezone.now()
    if account is None or not user.is_active or not recheck_due(account, now):
        return
    backend = next((b for b in get_backends() if hasattr(b, "directory_user")), None)
    if backend is None:
        return
    try:
        found = backend.directory_user(user.get_username())
    except DirectoryUnreachable as error:
        log.warning("could not re-check %s with the directory: %s", user.get_username(), error.detail)
        return
    if found is None or found.pk != user.pk:
        directory_user_disable(user=user, now=now)
        return
    user.is_active, user.is_staff, user.is_superuser = found.is_active, found.is_staff, found.is_superuser
