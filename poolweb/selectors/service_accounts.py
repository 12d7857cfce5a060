"""Reads of service accounts (services/service_accounts.py) for ``manage.py service_account list``
and the admin: each with its rights and its tokens, never a secret (only hashes are stored)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import Permission
from django.db.models import Prefetch, Q

from poolweb.models import ApiToken, ServiceAccount


def is_service_account(user) -> bool:
    """Whether ``user`` is a program's account (one query)."""
    return user is not None and user.pk is not None and ServiceAccount.objects.filter(user_id=user.pk).exists()


@dataclass(frozen=True)
class TokenShown:
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True)
class ServiceAccountShown:
    name: str
    description: str
    active: bool
    created_by: str
    created_at: datetime
    revoked_at: datetime | None
    rights: tuple[str, ...]  # "admin", then the permissions as app_label.codename, in name order
    tokens: tuple[TokenShown, ...]  # newest first


def rights_of(user) -> tuple[str, ...]:
    """What the account may do beyond a member: ``admin`` (staff), and the permissions granted to
    it or to one of its groups."""
    granted = Permission.objects.filter(Q(user=user) | Q(group__user=user)).select_related("content_type")
    names = sorted({f"{p.content_type.app_label}.{p.codename}" for p in granted})
    return (*(("admin",) if user.is_staff else ()), *names)


def service_account_list() -> list[ServiceAccountShown]:
    """Every service account, revoked ones too, in name order (a query for each one's rights:
    they are few)."""
    tokens = Prefetch("user__api_tokens", queryset=ApiToken.objects.order_by("-created_at", "-id"))
    rows = ServiceAccount.objects.select_related("user").prefetch_related(tokens).order_by("user__username")
    return [ServiceAccountShown(
        name=row.user.get_username(), description=row.description, active=row.user.is_active,
        created_by=row.created_by, created_at=row.created_at, revoked_at=row.revoked_at, rights=rights_of(row.user),
        tokens=tuple(TokenShown(t.pk, t.name, t.prefix, t.created_at, t.last_used_at)
                     for t in row.user.api_tokens.all()),
    ) for row in rows]

