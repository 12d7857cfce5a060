"""An API call's plain statements (poolweb/sql/api_calls.py) read and write exactly what the ORM
reads and writes: the same values, of the same types, the columns not read deferred."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from poolweb.models import ApiToken, Event, Request as RequestRow, RequestChange, SiteState
from poolweb.services.tokens import digest, token_issue
from poolweb.sql import api_calls
from tests.poolweb.conftest import request_row

pytestmark = pytest.mark.django_db


def test_a_token_comes_with_its_user_as_the_orm_reads_them(bob):
    secret = token_issue(user=bob)
    ApiToken.objects.update(last_used_at=timezone.now() - timedelta(minutes=5))

    found = api_calls.bearer(digest(secret))

    expected = ApiToken.objects.select_related("user").get()
    assert (found.token_id, found.last_used_at) == (expected.pk, expected.last_used_at)
    assert found.last_used_at.tzinfo is not None
    for name in ("pk", "username", "is_staff", "is_active", "is_superuser", "email"):
        assert getattr(found.user, name) == getattr(expected.user, name), name
        assert type(getattr(found.user, name)) is type(getattr(expected.user, name)), name
    assert "password" in found.user.get_deferred_fields()
    assert found.user.date_joined == expected.user.date_joined  # deferred: read on first use
    assert api_calls.bearer(digest("not-a-token")) is None


def test_the_site_row_comes_with_its_version_without_the_document(provisioned):
    SiteState.objects.update(management_enabled=False)

    found = api_calls.site_row()

    expected = SiteState.objects.select_related("live_version").get()
    assert found.management_enabled is False
    assert (found.live_version.pk, found.live_version.number, found.live_version.created_at) == (
        expected.live_version.pk, expected.live_version.number, expected.live_version.created_at)
    assert "document" in found.live_version.get_deferred_fields()
    assert found.live_version.document == expected.live_version.document


def test_before_the_first_write_there_is_no_site_row():
    assert api_calls.site_row() is None


def test_the_pending_count_and_the_group_names(provisioned, bob, carol):
    bob.groups.add(Group.objects.get_or_create(name="ml")[0])
    for state in ("pending", "pending", "allocated"):
        request_row(bob, "dev", "half", 0.5, state=state, pool=None if state == "pending" else "a100")

    assert api_calls.submitter(bob.pk) == (2, frozenset({"dev", "ml"}))
    assert api_calls.submitter(carol.pk) == (0, frozenset())


def test_a_request_comes_with_its_owner_as_the_orm_reads_them(bob):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    RequestRow.objects.filter(pk=row.pk).update(labels={"team": "vision"}, name="train")

    found = api_calls.request_with_owner(row.pk)

    expected = RequestRow.objects.select_related("owner").get(pk=row.pk)
    for field in RequestRow._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(expected, field.attname), field.name
    assert found.resources == {"gpu": 500, "step_run": 1000} and found.allocated_at.tzinfo is not None
    assert found.owner.username == "bob"
    assert api_calls.request_with_owner(row.pk + 1) is None


def test_a_request_is_updated_only_in_the_state_it_was_read_in(bob):
    row = request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    renewed = timezone.now() + timedelta(hours=2)

    assert not api_calls.update_request(row.pk, "pending", {"lease_expires_at": renewed})
    assert RequestRow.objects.get(pk=row.pk).lease_expires_at != renewed
    assert api_calls.update_request(row.pk, "allocated", {"lease_expires_at": renewed, "message": "m"})
    assert RequestRow.objects.values_list("lease_expires_at", "message").get(pk=row.pk) == (renewed, "m")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a submission is one statement on PostgreSQL only")
def test_a_submission_is_one_statement_that_writes_its_row_its_history_and_its_event_with_the_rows_id(bob):
    now = timezone.now()
    row = RequestRow(owner=bob, policy="dev", profile="half", resources={"gpu": 500, "step_run": 1000},
                     labels={"team": "vision"}, submitted_at=now, message="waiting for the next pass")

    with CaptureQueriesContext(connection) as statements:
        api_calls.insert_submission(row, ("request.updated", bob.pk, '{"id": null, "state": "pending"}'))

    # In the test's transaction, so in a savepoint.
    assert [q["sql"].split()[0] for q in statements] == ["SAVEPOINT", "WITH", "RELEASE"]
    saved = RequestRow.objects.create(**{field.name: getattr(row, field.name) for field in RequestRow._meta.fields
                                         if not field.primary_key})
    stored = {found["id"]: found for found in RequestRow.objects.values()}
    first, second = stored[row.pk], stored[saved.pk]
    for found in (first, second):
        del found["id"], found["updated_at"]
    assert first == second  # the row save() writes
    assert RequestChange.objects.values_list("request_id", "at", "state", "attempt").get() == (
        row.pk, now, "pending", 1)
    type, owner_id, data = Event.objects.values_list("type", "owner_id", "data").get()
    assert (type, owner_id, json.loads(data)) == ("request.updated", bob.pk, {"id": row.pk, "state": "pending"})


def test_acting_for_reads_the_explicit_grant_and_the_user_as_the_orm_does(alice, bob):
    from django.contrib.auth.models import Permission

    assert api_calls.acting_for(alice.pk, "bob").permitted is False  # a superuser's implied permissions do not count
    alice.user_permissions.add(Permission.objects.get(codename="submit_for_others"))

    found = api_calls.acting_for(alice.pk, "bob")

    assert found.permitted is True
    for name in ("pk", "username", "is_staff", "is_active", "is_superuser", "email"):
        assert getattr(found.owner, name) == getattr(bob, name), name
        assert type(getattr(found.owner, name)) is type(getattr(bob, name)), name
    assert "password" in found.owner.get_deferred_fields()
    assert api_calls.acting_for(alice.pk, "nobody") == (True, None)
