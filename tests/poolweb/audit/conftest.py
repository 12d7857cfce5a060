"""What the audit tests share: the entries as written, a bridge account, a client from an address."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from poolweb.models import AuditEntry

ADDRESS = "203.0.113.7"


def entries(**filters) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(**filters).order_by("id"))


def only_entry(**filters) -> AuditEntry:
    found = entries(**filters)
    assert len(found) == 1, [(e.action, e.target) for e in found]
    return found[0]


def calling_from(user: User, address: str = ADDRESS) -> APIClient:
    """``user``'s API client, its requests from ``address``."""
    client = APIClient(REMOTE_ADDR=address)
    client.force_authenticate(user)
    return client


@pytest.fixture
def bridge(db) -> User:
    """A Slurm bridge's account as docs/slurm.md sets it up: an admin granted submit_for_others."""
    user = User.objects.create_user("bridge", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    return user
