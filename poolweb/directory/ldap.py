"""Signing in with the directory's LDAP password (django-auth-ldap, decision 165): the service
account (``POOLWEB_LDAP_BIND_DN``, or anonymous) searches the user with
``POOLWEB_LDAP_USER_FILTER``, the user's DN binds with the password typed, the group search says
which groups they are in, and services/directory.py applies the admin's mapping.

A directory that cannot be reached is ``DirectoryUnreachable`` (the sign-in page says so, and a
local administrator may still sign in, settings.LOCAL_SIGN_IN) instead of a wrong password:
django-auth-ldap reports LDAP errors only through its ``ldap_error`` signal, caught here for the
call in progress.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import TypeVar

import ldap
from django_auth_ldap.backend import LDAPBackend, ldap_error

from poolweb.addresses import request_address
from poolweb.models import DirectoryAccount
from poolweb.services.directory import DirectoryUnreachable, directory_user_claim, directory_user_sync
from poolweb.services.signin import sign_in_failed

log = logging.getLogger(__name__)
T = TypeVar("T")
SOURCE = DirectoryAccount.Source.LDAP

# The errors that mean "the directory did not answer", not "no such user or password".
UNREACHABLE = (ldap.SERVER_DOWN, ldap.TIMEOUT, ldap.CONNECT_ERROR, ldap.UNAVAILABLE, ldap.BUSY)


_errors: contextvars.ContextVar[list[Exception] | None] = contextvars.ContextVar("ldap_errors", default=None)


def _note_error(sender, context, exception, **kwargs) -> None:
    errors = _errors.get()
    if errors is not None:
        errors.append(exception)


ldap_error.connect(_note_error, dispatch_uid="poolweb.directory.ldap")


def raising_unreachable(call: Callable[[], T]) -> T:
    """``call()``, raising ``DirectoryUnreachable`` when an LDAP error it met says the server did
    not answer (signal handlers run in the sending thread, so a context variable keeps calls in
    different threads apart)."""
    errors: list[Exception] = []
    token = _errors.set(errors)
    try:
        result = call()
    finally:
        _errors.reset(token)
    down = [error for error in errors if isinstance(error, UNREACHABLE)]
    if down:
        log.warning("the LDAP directory did not answer: %r", down[0])
        raise DirectoryUnreachable(repr(down[0]))
    if errors:
        log.warning("the LDAP directory answered with an error: %r", errors[0])
    return result


class DirectoryLdapBackend(LDAPBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or username is None or password is None:
            return None
        try:
            user = raising_unreachable(lambda: super(DirectoryLdapBackend, self).authenticate(
                request, username=username, password=password, **kwargs))
        except DirectoryUnreachable:
            # Counted all the same: a down directory must not open local passwords to guessing.
            sign_in_failed(address=request_address(request), username=username)
            raise
        if user is None:
            sign_in_failed(address=request_address(request), username=username)
        return user

    def get_or_build_user(self, username, ldap_user):
        # Lower case, as django-auth-ldap's own: a directory compares names without case.
        user = directory_user_claim(username=username.lower(), source=SOURCE, subject=ldap_user.dn)
        return user, user.pk is None

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is not None:
            directory_user_sync(user=user, source=SOURCE, subject=ldap_user.dn, directory_groups=directory_groups(ldap_user))
        return user

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_group_permissions(self, user, obj=None):
        return set()  # permissions come from Poolweb's groups (ModelBackend), not the directory's

    def directory_user(self, username: str):
        """The user as the directory has them now (searched with the service account, groups
        applied), or None when it has no such user; ``DirectoryUnreachable`` when it is down."""
        ldap_user_found = []

        def populate():
            user = super(DirectoryLdapBackend, self).populate_user(username)
            if user is not None:
                ldap_user_found.append(user.ldap_user)
            return user

        user = raising_unreachable(populate)
        if user is None:
            return None
        found = ldap_user_found[0]
        directory_user_sync(user=user, source=SOURCE, subject=found.dn, directory_groups=directory_groups(found))
        return user


def directory_groups(ldap_user) -> set[str]:
    """The user's groups as the mapping may name them: each group's cn and its DN. The group
    search runs here, outside django-auth-ldap's own error handling."""
    try:
        return set(ldap_user.group_names) | set(ldap_user.group_dns)
    except UNREACHABLE as error:
        raise DirectoryUnreachable(repr(error)) from error
