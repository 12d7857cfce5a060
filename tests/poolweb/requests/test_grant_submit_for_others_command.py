"""``manage.py grant_submit_for_others USERNAME [--revoke]`` and ``--list``: the way to let the
bridge's account submit for others without a shell (decision 131)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import CommandError, call_command

from poolweb.services.submit_for_others import submit_for_others_holders

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("grant_submit_for_others", *args, stdout=out)
    return out.getvalue().strip()


def test_a_granted_account_may_submit_for_others_until_revoked(provisioned, carol, bob):
    body = {"policy": "dev", "profile": "half", "owner": "bob"}

    assert run("carol") == "carol may submit requests for other users"
    assert client_for(User.objects.get(pk=carol.pk)).post("/api/v1/requests", body, format="json").status_code == 201
    assert run("carol", "--revoke") == "carol may no longer submit requests for other users"
    assert client_for(User.objects.get(pk=carol.pk)).post("/api/v1/requests", body, format="json").status_code == 403


def test_granting_twice_says_so_and_changes_nothing(carol):
    run("carol")

    assert run("carol").endswith("(so it was already)")
    assert submit_for_others_holders() == ["carol"]


def test_the_list_names_the_accounts_granted_directly_or_by_a_group(alice, bob, carol):
    assert run("--list") == "no account may submit for others"
    bridges = Group.objects.create(name="bridges")
    bridges.permissions.add(Permission.objects.get(codename="submit_for_others"))
    bob.groups.add(bridges)
    run("carol")

    assert run("--list").splitlines() == ["bob", "carol"]  # alice, a superuser, holds no grant


def test_an_unknown_account_or_none_is_an_error():
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run("nobody")
    with pytest.raises(CommandError, match="give a USERNAME"):
        run()
