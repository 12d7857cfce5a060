"""An entry is written in its act's transaction: an act rolled back leaves none, and an act whose
entry cannot be written is rolled back with it (decision 154)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from poolweb.models import ApiToken, AuditEntry, Request as RequestRow, SiteState
from poolweb.services import audit, config as config_services
from poolweb.services.tokens import token_create

from tests.poolweb.audit.conftest import calling_from, entries
from tests.poolweb.conftest import request_row

pytestmark = pytest.mark.django_db


class Refused(Exception):
    pass


@pytest.fixture
def audit_fails(monkeypatch):
    """Writing an entry fails, as a full disk or a lost connection would make it."""
    def fail(**fields):
        raise Refused("the audit entry could not be written")
    monkeypatch.setattr(AuditEntry.objects, "create", fail)


def test_revoking_tokens_by_command_with_one_unknown_id_revokes_none_and_writes_none(bob):
    kept, _ = token_create(user=bob, name="kept")
    created = AuditEntry.objects.count()

    with pytest.raises(CommandError):
        call_command("revoke_api_token", str(kept.pk), "999999", stdout=StringIO())

    assert ApiToken.objects.filter(pk=kept.pk).exists()
    assert AuditEntry.objects.count() == created


def test_an_act_rolled_back_by_its_caller_leaves_no_entry(provisioned, alice):
    with pytest.raises(Refused), transaction.atomic():
        config_services.management_set(enabled=False, user=alice)
        assert entries(action="management.switch")  # written, in the act's transaction
        raise Refused

    assert entries(action="management.switch") == []
    assert SiteState.objects.get(pk=1).management_enabled


def test_a_switch_whose_entry_cannot_be_written_does_not_switch(provisioned, alice, audit_fails):
    with pytest.raises(Refused):
        config_services.management_set(enabled=False, user=alice)

    assert SiteState.objects.get(pk=1).management_enabled


def test_a_token_whose_entry_cannot_be_written_is_not_created(bob, audit_fails):
    with pytest.raises(Refused):  # a 500 to the caller
        calling_from(bob).post("/api/v1/tokens", {"name": "laptop"}, format="json")

    assert not ApiToken.objects.exists()


def test_a_cancel_whose_entry_cannot_be_written_leaves_the_request_as_it_was(provisioned, alice, bob, audit_fails):
    his = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")

    with pytest.raises(Refused):
        calling_from(alice).post(f"/api/v1/requests/{his.pk}/cancel")

    assert RequestRow.objects.get(pk=his.pk).state == "allocated"


def test_a_submission_for_another_whose_entry_cannot_be_written_stores_no_request(provisioned, alice, bob):
    from django.contrib.auth.models import Permission
    alice.user_permissions.add(Permission.objects.get(codename="submit_for_others"))
    count = RequestRow.objects.count()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AuditEntry.objects, "create", lambda **fields: (_ for _ in ()).throw(Refused()))
        with pytest.raises(Refused):
            calling_from(alice).post("/api/v1/requests", {"policy": "dev", "profile": "half", "owner": "bob"},
                                     format="json")

    assert RequestRow.objects.count() == count


@pytest.mark.django_db(transaction=True)
def test_an_entry_outside_a_transaction_is_refused():
    with pytest.raises(RuntimeError, match="in the transaction of its act"):
        audit.record(actor=None, action="management.switch", target="management")

    assert not AuditEntry.objects.exists()
