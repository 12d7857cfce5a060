"""The audit log is append-only: the model refuses changes and deletions, the Django admin shows it
read-only, and on PostgreSQL the database refuses UPDATE and DELETE too (decision 155)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from poolweb.models import AuditEntry, AuditRefused
from poolweb.services.config import management_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(provisioned, alice) -> AuditEntry:
    management_set(enabled=False, user=alice)
    return AuditEntry.objects.get(action="management.switch")


def test_an_entry_cannot_be_saved_again(entry):
    entry.after = "on"

    with pytest.raises(AuditRefused):
        entry.save()

    assert AuditEntry.objects.get(pk=entry.pk).after == "off"


def test_an_entry_cannot_be_deleted(entry):
    with pytest.raises(AuditRefused):
        entry.delete()

    assert AuditEntry.objects.filter(pk=entry.pk).exists()


@pytest.mark.parametrize("write", [lambda rows: rows.update(after="on"), lambda rows: rows.delete()],
                         ids=["update", "delete"])
def test_entries_cannot_be_updated_or_deleted_in_bulk(entry, write):
    with pytest.raises(AuditRefused):
        write(AuditEntry.objects.filter(pk=entry.pk))

    assert AuditEntry.objects.get(pk=entry.pk).after == "off"


def test_the_django_admin_shows_an_entry_but_neither_changes_nor_deletes_it(entry, alice):
    browser = Client()
    browser.force_login(alice)

    listing = browser.get("/admin/poolweb/auditentry/")
    shown = browser.get(f"/admin/poolweb/auditentry/{entry.pk}/change/")
    changed = browser.post(f"/admin/poolweb/auditentry/{entry.pk}/change/", {"after": "on"})
    deleted = browser.post(f"/admin/poolweb/auditentry/{entry.pk}/delete/", {"post": "yes"})

    assert listing.status_code == 200 and b"management.switch" in listing.content
    assert shown.status_code == 200 and b'name="after"' not in shown.content
    assert changed.status_code == 403 and deleted.status_code == 403
    assert AuditEntry.objects.get(pk=entry.pk).after == "off"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the trigger is PostgreSQL's (decision 155)")
@pytest.mark.parametrize("statement", ["UPDATE poolweb_auditentry SET after = 'on'", "DELETE FROM poolweb_auditentry"])
def test_postgresql_refuses_a_raw_update_or_delete(entry, statement):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)

    assert AuditEntry.objects.get(pk=entry.pk).after == "off"
