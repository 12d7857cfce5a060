"""Personas and factories for the service tests: alice (admin), bob (member of team "dev"),
carol (signed in, no team)."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from bench.documents import two_teams
from poolweb.models import Request
from poolweb.services import config as config_services


# One GPU, two policies of one team: a request of ``high`` preempts one of ``low``.
ONE_GPU = {
    "pools": [{"name": "p", "capacity": {"gpu": 1}}],
    "profiles": [{"name": "one", "resources": {"gpu": 1}, "connections": [{"pool": "p"}],
                  "policies": ["low", "high"]}],
    "policies": [{"name": "low", "group": "dev", "priority": 1}, {"name": "high", "group": "dev", "priority": 2}],
}


def document(**overrides) -> dict:
    """A small valid configuration: two pools, fractional and multi-GPU profiles, two teams."""
    doc = {
        "pools": [
            {"name": "h100", "capacity": {"gpu": 8}},
            {"name": "a100", "capacity": {"gpu": 4}},
        ],
        "profiles": [
            {"name": "half", "resources": {"gpu": 0.5}, "connections": [{"pool": "a100"}], "policies": ["dev", "research"]},
            {"name": "4xgpu", "resources": {"gpu": 4}, "connections": [{"pool": "h100"}, {"pool": "a100"}],
             "policies": ["dev", "research"]},
            {"name": "job", "resources": {"gpu": 1}, "dynamic": True, "connections": [{"pool": "h100"}],
             "policies": ["dev"]},
        ],
        "policies": two_teams(),
    }
    doc.update(overrides)
    return doc


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.com", "alice-password", is_staff=True, is_superuser=True)


@pytest.fixture
def bob(db) -> User:
    user = User.objects.create_user("bob", "bob@example.com", "bob-password")
    user.groups.add(Group.objects.get_or_create(name="dev")[0])
    return user


@pytest.fixture
def carol(db) -> User:
    return User.objects.create_user("carol", "carol@example.com", "carol-password")


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def signed_in(user: User) -> Client:
    """A browser's client with ``user``'s session, for the console's pages."""
    client = Client()
    client.force_login(user)
    return client


def run_together(*targets, join_seconds: float = 30) -> None:
    """Start every target in a thread of its own at once and wait for all (each within a bound)."""
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(join_seconds)


@pytest.fixture
def admin(alice) -> APIClient:
    """alice's API client."""
    return client_for(alice)


@pytest.fixture
def provisioned(alice):
    """The demo document provisioned as version 1."""
    return config_services.config_provision_document(document=document(), author=alice, comment="fixture")


@pytest.fixture(autouse=True, scope="session")
def fast_passwords():
    """The personas' passwords need not cost a second each to hash (PBKDF2 does here)."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def request_row(owner, policy: str, profile: str, gpu: float, *, state: str = "pending", pool: str | None = None):
    """A request straight in the database; a live one holds its allocation for an hour."""
    now = timezone.now()
    live = state in ("allocated", "preempting")
    return Request.objects.create(
        policy=policy, profile=profile, owner=owner, resources={"gpu": int(gpu * 1000), "step_run": 1000},
        state=state, pool=pool, reason="Granted" if live else "Submitted",
        allocated_at=now if live else None, lease_expires_at=now + dt.timedelta(hours=1) if live else None)


@pytest.fixture(autouse=True)
def passes_inline(settings):
    """A pass runs as the worker's task runs it, but in the test's process, right after the change."""
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "inline"}


@pytest.fixture(autouse=True)
def observed_runtimes_read_afresh():
    """A pass reads the profiles' observed run times (R-54) from this test's database, not from a
    read of an earlier test's kept for five minutes."""
    from poolweb.services.reconciler import OBSERVED

    OBSERVED.forget()
