"""Failed sign-ins per client address: a wrong bearer token (REST API or event stream) or a wrong
password (``/accounts/login/``, the admin's login).

Once an address has ``AUTH_FAILURES`` failures within ``AUTH_FAILURE_WINDOW_SECONDS``, its next
failure is answered 429 with the seconds until the oldest of them leaves the window. Callers
check the credential first and come here only when it failed, so a valid credential is never
throttled. Counts are rows in the database, which every web process shares (the default cache
is per process); a throttled failure writes nothing, so an address adds at most
``AUTH_FAILURES`` rows per window, and each recorded failure forgets rows that left the window.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from poolweb.models import SignInFailure

MAX_ADDRESS = 64  # SignInFailure.address; an IPv6 address has at most 45 characters


def sign_in_failed(*, address: str, now: datetime | None = None) -> int | None:
    """Note a failed sign-in from ``address``: None if it is within the allowance, else the
    seconds to wait (Retry-After) and nothing recorded."""
    now = now or timezone.now()
    window = timedelta(seconds=settings.POOLWEB["AUTH_FAILURE_WINDOW_SECONDS"])
    allowed = settings.POOLWEB["AUTH_FAILURES"]
    address = address[:MAX_ADDRESS]
    recent = list(SignInFailure.objects.filter(address=address, at__gt=now - window)
                  .order_by("-at").values_list("at", flat=True)[:allowed])
    if len(recent) >= allowed:
        return max(1, math.ceil((recent[-1] + window - now).total_seconds()))
    SignInFailure.objects.filter(at__lte=now - window).delete()
    SignInFailure.objects.create(address=address, at=now)
    return None
