"""Service accounts (decisions 190-192): users that are programs — the Slurm bridge — not people.

A service account is a Django user marked by a ``ServiceAccount`` row. It has no usable password
and may not sign in with one even if someone sets one (``accounts.ThrottledModelBackend``); the
directory never claims, syncs or disables it (``services.directory``); it acts only through API
tokens. Its rights are the ones given here, each explicit: ``admin`` (a Poolweb administrator for
the API: staff, never superuser, so it reads every request and the configuration) and
``submit_for_others`` (``poolweb.submit_for_others``, decision 131).

Revoking one deactivates the user and deletes its tokens in one transaction: every call with them
is 401 at once, and its open event streams close as a deactivated user's do (realtime/auth.py).
The account stays, revoked, so its name still reads in the audit log and in its requests'
``submitted_by``; a new one needs a new name.

Every act is audited in its own transaction: ``service_account.create`` and
``service_account.revoke``, with the ``permission.grant``, ``token.create`` and ``token.revoke``
entries of what they do on the way.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from poolweb.models import ApiToken, ServiceAccount
from poolweb.services import audit
from poolweb.services.submit_for_others import submit_for_others_grant
from poolweb.services.tokens import token_create, tokens_revoke_all

FIRST_TOKEN = "service account"  # the name of the token made with the account
MAX_NAME = 150  # User.username
MAX_DESCRIPTION = 200  # ServiceAccount.description


class ServiceAccountInvalid(ValueError):
    """A name or description that cannot be used; ``field`` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotAServiceAccount(LookupError):
    """No service account has the name (there may be a person of that name)."""


class ServiceAccountRevoked(Exception):
    """The service account was revoked: it gets no new token."""


def target(username: str) -> str:
    return f"user:{username}"


def _checked(name: str, description: str) -> None:
    if not name or len(name) > MAX_NAME:
        raise ServiceAccountInvalid("name", f"name is 1 to {MAX_NAME} characters")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        raise ServiceAccountInvalid("name", "name may hold only letters, digits and @ . + - _") from None
    if len(description) > MAX_DESCRIPTION or not description.isprintable():
        raise ServiceAccountInvalid("description", f"description is at most {MAX_DESCRIPTION} printable characters")
    if get_user_model().objects.filter(username__iexact=name).exists():
        raise ServiceAccountInvalid("name", f"a user named {name!r} exists already: choose another name")


@transaction.atomic
def service_account_create(*, name: str, description: str = "", admin: bool = False,
                           submit_for_others: bool = False, by=None) -> tuple[ServiceAccount, str]:
    """A new service account, ``by`` an account or (None) an operator at the command line, with the
    rights asked for and a first token: the row and the token's secret (returned this once)."""
    _checked(name, description)
    user = get_user_model()(username=name, is_staff=admin)
    user.set_unusable_password()
    user.save()
    row = ServiceAccount.objects.create(user=user, description=description, created_by=_actor_name(by))
    rights = [right for right, given in (("admin", admin), ("submit_for_others", submit_for_others)) if given]
    audit.record(actor=by, action="service_account.create", target=target(name),
                 after=f"{name}: {', '.join(rights) or 'no rights'}" + (f" ({description})" if description else ""),
                 detail={"user_id": user.pk, "description": description, "rights": rights})
    if submit_for_others:
        submit_for_others_grant(username=name, by=by)
    _token, secret = token_create(user=user, name=FIRST_TOKEN, by=by)
    return row, secret


@transaction.atomic
def service_account_token(*, name: str, token_name: str, by=None) -> str:
    """Another token for the service account: its secret, returned this once."""
    row = _found(name)
    if row.revoked_at is not None or not row.user.is_active:
        raise ServiceAccountRevoked(f"the service account {name!r} is revoked: it gets no new token")
    return token_create(user=row.user, name=token_name, by=by)[1]


@transaction.atomic
def service_account_revoke(*, name: str, by=None) -> int | None:
    """Deactivate the service account and delete its tokens; how many tokens it had, or None when
    it was revoked already (nothing changes, nothing is recorded)."""
    row = _found(name, lock=True)
    if row.revoked_at is not None and not row.user.is_active and not ApiToken.objects.filter(user=row.user).exists():
        return None
    now = timezone.now()
    get_user_model().objects.filter(pk=row.user_id).update(is_active=False)
    ServiceAccount.objects.filter(pk=row.pk).update(revoked_at=row.revoked_at or now)
    audit.record(actor=by, action="service_account.revoke", target=target(name), before="active", after="revoked",
                 detail={"user_id": row.user_id})
    return tokens_revoke_all(owner=row.user, by=by)


def _found(name: str, *, lock: bool = False) -> ServiceAccount:
    rows = ServiceAccount.objects.select_related("user")
    row = (rows.select_for_update() if lock else rows).filter(user__username=name).first()
    if row is None:
        raise NotAServiceAccount(f"there is no service account named {name!r}")
    return row


def _actor_name(by) -> str:
    """Who creates it, as the audit names them: an account, else the command's operator."""
    if by is not None:
        return by.get_username()
    here = audit.origin()
    return (here.person or here.where)[:150]
