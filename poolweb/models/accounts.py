"""Accounts' tables beside Django's: API tokens, the sign-in throttle's failures, password reset
asks, what the company directory manages (decisions 165-167), and service accounts (190)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ApiToken(models.Model):
    """A bearer token; only its SHA-256 is stored. Revoking one deletes it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)  # what its owner calls it ("laptop", "ci")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)  # the first characters, to tell tokens apart
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class SignInFailure(models.Model):
    """A failed sign-in from a client address, with the username it was for (blank for a token),
    kept while it counts for the throttle (services/signin.py)."""

    address = models.CharField(max_length=64)
    username = models.CharField(max_length=150, blank=True, default="")
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["address", "at"], name="signin_failure_address_at"),
                   models.Index(fields=["username", "at"], name="signin_failure_username_at")]


class PasswordResetAsk(models.Model):
    """An ask to mail a password reset link, kept while it counts for the throttle
    (services/signin.py)."""

    address = models.CharField(max_length=64)
    email = models.CharField(max_length=254)
    at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["address", "at"], name="reset_ask_address_at"),
                   models.Index(fields=["email", "at"], name="reset_ask_email_at")]


class DirectoryGroup(models.Model):
    """The admin's mapping from the directory to Poolweb (services/directory.py): a directory
    group (an LDAP group's cn or DN, or a value of the OIDC groups claim; case does not matter)
    whose members are in a Poolweb group, administrators, or both. A Poolweb group named by a row
    is managed by the directory: its members are the directory users the mapping puts there."""

    name = models.CharField(max_length=255, unique=True)
    group = models.ForeignKey("auth.Group", on_delete=models.CASCADE, null=True, blank=True,
                              related_name="directory_groups")
    makes_admin = models.BooleanField(default=False, help_text="Members are Poolweb administrators (staff and superuser).")

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(group__isnull=False) | Q(makes_admin=True),
                                              name="directory_group_maps_to_something",
                                              violation_error_message="Name a Poolweb group, make its members "
                                                                      "administrators, or both.")]

    def __str__(self) -> str:
        return self.name


class DirectoryAccount(models.Model):
    """A user the directory manages: signs in through it (never with a Poolweb password); groups
    and admin rights follow it at every sign-in and, for tokens and streams, at every re-check."""

    class Source(models.TextChoices):
        LDAP = "ldap", "LDAP"
        OIDC = "oidc", "OpenID Connect"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_account")
    source = models.CharField(max_length=8, choices=Source.choices)
    subject = models.CharField(max_length=255)  # the LDAP DN, or the OIDC "sub"
    checked_at = models.DateTimeField(default=timezone.now)  # the directory's last answer for this user
    # OIDC: the provider's refresh token, encrypted (services/oidc_provider.py), to re-check without the user.
    refresh_token = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "subject"], name="directory_account_subject")]

    def __str__(self) -> str:
        return f"{self.user} ({self.get_source_display()})"


class ServiceAccount(models.Model):
    """A user that is a program, not a person (a bridge): it acts only with API tokens, never signs
    in with a password or through the directory, and holds only the rights given to it explicitly
    (services/service_accounts.py, decision 190). Revoked: the user deactivated, its tokens gone."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account")
    description = models.CharField(max_length=200, blank=True, default="")
    created_by = models.CharField(max_length=150)  # the audit's actor: an account's name, or user@host
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.user.get_username()
