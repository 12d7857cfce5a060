"""Signing in with a password (``/accounts/login/`` and the admin's login): wrong passwords count
against the client's address (services/signin.py). Past the allowance a wrong one is answered
429 with ``Retry-After`` instead of the form again; the right one still signs in."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from poolweb.services.signin import sign_in_failed


class SignInThrottled(Exception):
    def __init__(self, wait: int) -> None:
        super().__init__(f"too many failed sign-ins; retry in {wait} s")
        self.wait = wait


class ThrottledModelBackend(ModelBackend):
    """Django's username and password check; a failure is noted, and past the allowance raises
    ``SignInThrottled`` (which ``authenticate`` lets through) for the middleware to answer."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and request is not None and password is not None:
            wait = sign_in_failed(address=request.META.get("REMOTE_ADDR") or "unknown")
            if wait is not None:
                raise SignInThrottled(wait)
        return user


class SignInThrottleMiddleware(MiddlewareMixin):
    """Answers ``SignInThrottled``. A ``MiddlewareMixin``, so it runs in either mode: a sync-only
    middleware made every request under the ASGI server hop from the view's thread back to the
    event loop and into the thread again (a third of a submission's time in the web thread,
    measured with py-spy)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, SignInThrottled):
            return None
        response = HttpResponse(f"Too many failed sign-ins from your address: try again in {exception.wait} seconds.\n",
                                status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(exception.wait)
        return response
