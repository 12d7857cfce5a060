"""Failed sign-ins, counted per client address and per account: a wrong bearer token (REST API or
event stream) or a wrong password (``/accounts/login/``, the admin's login).

An address with ``AUTH_FAILURES`` failures within ``AUTH_FAILURE_WINDOW_SECONDS``, or a username
with ``AUTH_ACCOUNT_FAILURES`` from any addresses, is throttled until the oldest of them leaves
the window. Callers ask ``sign_in_wait`` before they check a credential and refuse a throttled
attempt unchecked, so the answer (429, the same whether the credential was right or not) tells a
guesser nothing; after a failed check they call ``sign_in_failed``. A token names no account:
only its address counts. An administrator lifts a lockout early with ``sign_in_failures_clear``
(``manage.py clear_sign_in_failures``, or deleting the rows in the admin).

An account's allowance is the larger because anyone who knows a username can use it up and lock
the real user out: it bounds a guesser spread over many addresses, while one address meets its
own limit first (decision 85). Counts are rows in the database, which every web process shares;
a throttled attempt writes nothing, and each failure forgets rows that left the window.

Asks to mail a password reset link (offered only when mail is configured) are counted the same
way, per address and per address asked for, so that nobody can flood a mailbox or the mail server.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from poolweb.models import PasswordResetAsk, SignInFailure

log = logging.getLogger(__name__)

MAX_ADDRESS = 64  # SignInFailure.address; an IPv6 address has at most 45 characters
MAX_USERNAME = 150  # SignInFailure.username, as Django's User.username
MAX_EMAIL = 254  # PasswordResetAsk.email
RESET_WINDOW = timedelta(hours=1)
RESETS_PER_ADDRESS = 5
RESETS_PER_EMAIL = 3  # mails to one address an hour: a reset that did not arrive, asked again twice


def sign_in_wait(*, address: str, username: str | None = None, now: datetime | None = None) -> int | None:
    """Seconds until ``address`` — and ``username``, for a password — may try again (Retry-After),
    or None when neither is throttled."""
    now, window = now or timezone.now(), _window()
    waits = [_wait(SignInFailure.objects.filter(address=address[:MAX_ADDRESS]),
                   settings.POOLWEB["AUTH_FAILURES"], now, window)]
    if username:
        waits.append(_wait(SignInFailure.objects.filter(username=username[:MAX_USERNAME]),
                           settings.POOLWEB["AUTH_ACCOUNT_FAILURES"], now, window))
    return max((wait for wait in waits if wait is not None), default=None)


def sign_in_failed(*, address: str, username: str | None = None, now: datetime | None = None) -> None:
    """Note a failed sign-in from ``address`` (for ``username``, with a password)."""
    now = now or timezone.now()
    SignInFailure.objects.filter(at__lte=now - _window()).delete()
    SignInFailure.objects.create(address=address[:MAX_ADDRESS], username=(username or "")[:MAX_USERNAME], at=now)
    wait = sign_in_wait(address=address, username=username, now=now)
    if wait is not None:  # this one used up an allowance: say whose, for whoever is asked to clear it
        log.warning("sign-ins throttled for %d s after a failure from %s%s", wait, address,
                    f" for the account {username!r}" if username else "")


def sign_in_failures_clear(*, username: str | None = None, address: str | None = None) -> int:
    """Forget the failures for ``username`` and from ``address`` (either or both): its lockout ends
    now. How many there were."""
    rows = SignInFailure.objects.none()
    if username:
        rows |= SignInFailure.objects.filter(username=username[:MAX_USERNAME])
    if address:
        rows |= SignInFailure.objects.filter(address=address[:MAX_ADDRESS])
    deleted, _ = rows.delete()
    return deleted


def password_reset_asked(*, address: str, email: str, now: datetime | None = None) -> int | None:
    """Note an ask to mail a reset link to ``email`` from ``address``: None when within both
    allowances, else the seconds to wait, and nothing noted (nor mailed)."""
    now = now or timezone.now()
    email = email.lower()[:MAX_EMAIL]  # Django finds the account by email case-insensitively
    waits = [_wait(PasswordResetAsk.objects.filter(address=address[:MAX_ADDRESS]), RESETS_PER_ADDRESS, now,
                   RESET_WINDOW),
             _wait(PasswordResetAsk.objects.filter(email=email), RESETS_PER_EMAIL, now, RESET_WINDOW)]
    wait = max((wait for wait in waits if wait is not None), default=None)
    if wait is None:
        PasswordResetAsk.objects.filter(at__lte=now - RESET_WINDOW).delete()
        PasswordResetAsk.objects.create(address=address[:MAX_ADDRESS], email=email, at=now)
    return wait


def throttled_message(wait: int) -> str:
    """What a throttled attempt is told, whoever sent it: when to try again, and who can help."""
    return f"Too many failed sign-ins: try again in {_minutes(wait)}, or ask an administrator to clear the lockout."


def reset_throttled_message(wait: int) -> str:
    return f"Too many password resets asked: try again in {_minutes(wait)}, or ask an administrator for one."


def _minutes(seconds: int) -> str:
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes > 1 else ''}"


def _wait(rows: QuerySet, allowed: int, now: datetime, window: timedelta) -> int | None:
    """Seconds until the ``allowed``-th newest of ``rows`` in ``window`` leaves it; None with fewer."""
    nth = list(rows.filter(at__gt=now - window).order_by("-at").values_list("at", flat=True)[allowed - 1:allowed])
    return max(1, math.ceil((nth[0] + window - now).total_seconds())) if nth else None


def _window() -> timedelta:
    return timedelta(seconds=settings.POOLWEB["AUTH_FAILURE_WINDOW_SECONDS"])
