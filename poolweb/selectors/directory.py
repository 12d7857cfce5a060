"""Which users and groups the directory manages, as the admin and the console show it."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group

from poolweb.models import DirectoryAccount

MANAGED = "the directory"  # a group's marker; a user's names the way they sign in


def managed_by_label(row) -> str:
    """"LDAP" or "OpenID Connect" for a directory user, "the directory" for a group a mapping
    names, "" for what Poolweb manages itself (a prefetched ``directory_groups`` is used)."""
    if isinstance(row, Group):
        return MANAGED if row.directory_groups.all() else ""
    account = getattr(row, "directory_account", None) if row.pk else None
    return account.get_source_display() if isinstance(account, DirectoryAccount) else ""


def directory_configured() -> bool:
    """Whether a directory signs people in: else the console reads nothing to mark (no query)."""
    return bool(settings.LDAP_ENABLED or settings.OIDC)


def console_managed_by(user) -> str:
    return managed_by_label(user) if directory_configured() else ""


def managed_group_names() -> set[str]:
    if not directory_configured():
        return set()
    return set(Group.objects.filter(directory_groups__isnull=False).values_list("name", flat=True))
