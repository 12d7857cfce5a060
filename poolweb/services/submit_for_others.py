"""Who may submit requests for other users (decision 131): the permission
``poolweb.submit_for_others``, granted to an account (a bridge's service account) by
``manage.py grant_submit_for_others`` or in the admin (Users → user permissions, or a group's).

Only an explicit grant counts — to the account or to one of its groups. Not staff, and not
superuser either, although Django's ``has_perm`` gives a superuser every permission: the accounts
that may act for others are then exactly those a grant lists, which is what an audit reads.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction
from django.db.models import Q

from poolweb.services import audit
from poolweb.sql.api_calls import SUBMIT_FOR_OTHERS


class NoSuchAccount(Exception):
    """No user has the name."""


def submit_for_others_permission() -> Permission:
    app_label, codename = SUBMIT_FOR_OTHERS
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@transaction.atomic
def submit_for_others_grant(*, username: str, granted: bool = True, by=None) -> bool:
    """Grant (or with ``granted`` False, revoke) the permission to the account itself, ``by`` an
    account or (None) an operator at the command line; whether that changed anything (a change
    is audited). A grant through a group is the group's, changed where groups are."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NoSuchAccount(f"there is no user named {username!r}")
    permission = submit_for_others_permission()
    held = user.user_permissions.filter(pk=permission.pk).exists()
    if held == granted:
        return False
    (user.user_permissions.add if granted else user.user_permissions.remove)(permission)
    audit.record(actor=by, action="permission.grant" if granted else "permission.revoke",
                 target=f"user:{user.get_username()}", before="may not" if granted else "may",
                 after="may" if granted else "may not",
                 detail={"permission": ".".join(SUBMIT_FOR_OTHERS), "user_id": user.pk})
    return True


def submit_for_others_holders() -> list[str]:
    """The usernames granted the permission, themselves or by a group, in name order."""
    permission = submit_for_others_permission()
    holders = get_user_model().objects.filter(Q(user_permissions=permission) | Q(groups__permissions=permission))
    return sorted(set(holders.values_list("username", flat=True)))
