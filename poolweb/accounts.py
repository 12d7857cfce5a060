"""Signing in with a password (``/accounts/login/`` and the admin's login), throttled per client
address and per account (services/signin.py): while either is throttled, every attempt is
answered 429 with ``Retry-After`` and the same words, before the password is checked, so a
guesser cannot tell a right password from a wrong one; a wrong one is counted."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from poolweb.addresses import request_address
from poolweb.services.signin import sign_in_failed, sign_in_wait, throttled_message


class SignInThrottled(Exception):
    def __init__(self, wait: int) -> None:
        super().__init__(throttled_message(wait))
        self.wait = wait


class ThrottledModelBackend(ModelBackend):
    """Django's username and password check, not even tried while the address or the account is
    throttled: ``SignInThrottled`` instead (``authenticate`` lets it through, for the middleware)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or password is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        address = request_address(request)
        wait = sign_in_wait(address=address, username=username)
        if wait is not None:
            raise SignInThrottled(wait)
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            sign_in_failed(address=address, username=username)
        return user


class SignInThrottleMiddleware(MiddlewareMixin):
    """Answers ``SignInThrottled``. A ``MiddlewareMixin``, so it runs in either mode: a sync-only
    middleware made every request under the ASGI server hop from the view's thread back to the
    event loop and into the thread again (a third of a submission's time in the web thread,
    measured with py-spy)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, SignInThrottled):
            return None
        response = HttpResponse(f"{exception}\n", status=429, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(exception.wait)
        return response
