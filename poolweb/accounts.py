"""Signing in with a password (``/accounts/login/`` and the admin's login), throttled per client
address and per account (services/signin.py): while either is throttled, every attempt is
answered 429 with ``Retry-After`` and the same words, before the password is checked, so a
guesser cannot tell a right password from a wrong one; a wrong one is counted.

The pages under ``/accounts/`` are Django's, but the password reset by mail exists only when mail
is configured (``POOLWEB_EMAIL_URL``): without it there is no way to send the link, and the
sign-in page says to ask an administrator instead. Its asks are throttled too."""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth import urls as auth_urls
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, PasswordResetView
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils.deprecation import MiddlewareMixin

from poolweb.addresses import request_address
from poolweb.selectors.service_accounts import is_service_account
from poolweb.services.audit import acting_from
from poolweb.services.directory import DirectoryUnreachable, LocalAccountTaken
from poolweb.services.signin import (
    password_reset_asked, reset_throttled_message, sign_in_failed, sign_in_wait, throttled_message,
)


class SignInThrottled(Exception):
    def __init__(self, wait: int) -> None:
        super().__init__(throttled_message(wait))
        self.wait = wait


class ThrottledModelBackend(ModelBackend):
    """Django's username and password check, not even tried while the address or the account is
    throttled: ``SignInThrottled`` instead (``authenticate`` lets it through, for the middleware).
    A service account never signs in with a password, even one someone set (decision 191): it is
    refused as a wrong password is, and counted."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or password is None:
            user = super().authenticate(request, username=username, password=password, **kwargs)
            return None if is_service_account(user) else user
        address = request_address(request)
        wait = sign_in_wait(address=address, username=username)
        if wait is not None:
            raise SignInThrottled(wait)
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if is_service_account(user):
            user = None  # refused as a wrong password is, and counted the same way
        if user is None:
            if not settings.LDAP_ENABLED:  # else the directory's backend checks next and counts
                sign_in_failed(address=address, username=username)
            return None
        return user if local_sign_in_allowed(user) else None


def local_sign_in_allowed(user) -> bool:
    """settings.LOCAL_SIGN_IN: whether ``user`` may sign in with a password kept in Poolweb."""
    if settings.LOCAL_SIGN_IN == "on":
        return True
    if settings.LOCAL_SIGN_IN == "off":
        return False
    return user.is_superuser and not hasattr(user, "directory_account")


class SignInForm(AuthenticationForm):
    """Django's form; a directory that cannot be reached, or a name a local administrator holds,
    is said as it is instead of "didn't match"."""

    def clean(self):
        try:
            return super().clean()
        except DirectoryUnreachable as error:
            raise ValidationError(str(error), code="directory_unreachable") from None
        except LocalAccountTaken as error:
            raise ValidationError(str(error), code="local_account_taken") from None


class AdminSignInForm(SignInForm, AdminAuthenticationForm):
    pass


class AuditOrigin:
    """What a request does is audited as from its client's address (decision 154). In either mode,
    as ``SignInThrottleMiddleware`` is; the address is set for the view's thread by asgiref, which
    hands context variables on."""

    sync_capable = async_capable = True

    def __init__(self, get_response) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest):
        if self.is_async:
            return self._acall(request)
        with acting_from(request_address(request)):
            return self.get_response(request)

    async def _acall(self, request: HttpRequest):
        with acting_from(request_address(request)):
            return await self.get_response(request)


class SignInThrottleMiddleware(MiddlewareMixin):
    """Answers ``SignInThrottled``. A ``MiddlewareMixin``, so it runs in either mode: a sync-only
    middleware made every request under the ASGI server hop from the view's thread back to the
    event loop and into the thread again (a third of a submission's time in the web thread,
    measured with py-spy)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, SignInThrottled):
            return None
        return too_many(str(exception), exception.wait)


class ThrottledPasswordResetView(PasswordResetView):
    """Django's ask for a reset link by mail, throttled per address and per address asked for."""

    def form_valid(self, form):
        wait = password_reset_asked(address=request_address(self.request), email=form.cleaned_data["email"])
        if wait is not None:
            return too_many(reset_throttled_message(wait), wait)
        return super().form_valid(form)


class SignInView(LoginView):
    """Django's sign-in page: the password form unless no password can sign in (no LDAP and
    local sign-in off), and the OIDC provider's button when one is configured."""

    authentication_form = SignInForm

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        return {**context, "oidc": settings.OIDC, "sign_in_error": sign_in_error(context["form"]),
                "passwords": settings.LDAP_ENABLED or settings.LOCAL_SIGN_IN != "off",
                "directory_passwords": settings.LDAP_ENABLED,
                "admins_only": not settings.LDAP_ENABLED and settings.LOCAL_SIGN_IN == "admins"}


def sign_in_error(form) -> str | None:
    """What the page says about a refused sign-in: the words of a directory's trouble as they
    are, any other refusal as a mismatch (a guesser learns nothing more)."""
    if not form.is_bound or not form.errors:
        return None
    for error in form.errors.as_data().get("__all__", []):
        if error.code in ("directory_unreachable", "local_account_taken"):
            return error.messages[0]
    return "Your username and password didn't match. Please try again."


def account_paths() -> list[URLPattern]:
    """``django.contrib.auth.urls`` with Poolweb's sign-in page, its password reset pages only
    when mail is configured."""
    signing_in = path("login/", SignInView.as_view(), name="login")
    resetting = [p for p in auth_urls.urlpatterns if p.name.startswith("password_reset")]
    kept = [signing_in,
            *(p for p in auth_urls.urlpatterns if p not in resetting and p.name != "login")]
    if settings.MAIL_SERVER is None:
        return kept
    asking = path("password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset")
    return [*kept, asking, *(p for p in resetting if p.name != "password_reset")]


def too_many(message: str, wait: int) -> HttpResponse:
    response = HttpResponse(f"{message}\n", status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(wait)
    return response
