"""Who may open a console page: signed in for every page, an administrator for some."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse


def admin_required(view):
    """Signed in (else to the sign-in page) and an admin (else 403)."""
    @login_required
    @wraps(view)
    def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied("only administrators may see this page")
        return view(request, *args, **kwargs)
    return checked
