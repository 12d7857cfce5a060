"""The request services (poolweb/services/requests.py): submission, eligibility at submission
(R-14), idempotency under a race, and the lifecycle transitions (R-46, R-50, R-51) written
conditionally on the state read."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from poolweb.api.submission import read_submission
from poolweb.models import Event, Request, RequestChange
from poolweb.services import request_acts, requests as services
from poolweb.selectors.requests import submitter_of
from poolweb.selectors.versions import live_config, live_engine_version
from reconcile import Config, Policy

DEV_HALF = {"policy": "dev", "profile": "half"}


def submit(user, **body) -> Request:
    row, created = services.request_submit(user=user, submission=read_submission(body, live_config()))
    assert created
    return row


def preempting(row: Request, *, max_retries: int) -> None:
    """Turn an allocated request into a victim in flight, as a pass would (R-44)."""
    Request.objects.filter(pk=row.pk).update(state="preempting", reason="PreemptedByPriority", preempted_by=999,
                                             preempted_at=timezone.now(), max_retries=max_retries)


# --- submit --------------------------------------------------------------------------------------

def test_a_submission_is_stored_and_granted_by_the_pass_that_follows(provisioned, bob):
    row = submit(bob, **DEV_HALF, name="n", labels={"a": "b"})
    assert (row.state, row.reason, row.pool, row.owner, row.name, row.labels) == (
        "allocated", "Granted", "a100", bob, "n", {"a": "b"})
    assert row.resources == {"gpu": 500, "step_run": 1000}
    assert row.lease_expires_at - row.allocated_at == timedelta(seconds=300)


def test_a_submission_that_can_never_run_is_rejected_with_the_first_failing_rule(provisioned, bob):
    row = submit(bob, policy="dev", profile="job", resources={"gpu": 9})
    assert (row.state, row.reason) == ("rejected", "ExceedsPoolCapacity")
    assert row.message == "9 gpu exceeds the capacity of pool h100 (8)"
    assert row.finished_at == row.submitted_at and row.position is None


def test_a_submission_before_the_pass_is_pending_with_reason_submitted(provisioned, bob, monkeypatch):
    monkeypatch.setattr(services, "reconcile_soon", lambda: None)
    row = submit(bob, **DEV_HALF)
    assert (row.state, row.reason, row.finished_at) == ("pending", "Submitted", None)


def test_a_failing_pass_does_not_fail_a_stored_submission(provisioned, bob, monkeypatch):
    def broken() -> None:
        raise RuntimeError("the pass broke")
    monkeypatch.setattr(services, "reconcile_soon", broken)
    assert submit(bob, **DEV_HALF).state == "pending"


def test_a_submission_stores_its_row_its_first_history_entry_and_its_event_with_the_rows_id(provisioned, bob):
    row, _ = services.request_create(user=bob, submission=read_submission(DEV_HALF, live_config()),
                                     live=live_engine_version())  # no pass after it

    assert Request.objects.get().pk == row.pk
    assert RequestChange.objects.values_list("request_id", "at", "state", "attempt").get() == (
        row.pk, row.submitted_at, "pending", 1)
    data = [json.loads(text) for text in Event.objects.filter(type="request.updated").values_list("data", flat=True)]
    assert [(event["id"], event["state"], event["owner"]) for event in data] == [(row.pk, "pending", "bob")]


def test_a_user_outside_the_policys_group_is_refused_before_anything_is_stored(provisioned, bob, carol):
    for user, policy in ((bob, "research"), (carol, "dev")):
        with pytest.raises(PermissionDenied):
            submit(user, policy=policy, profile="half")
    assert not Request.objects.exists()


def test_admins_may_submit_anywhere_and_members_to_their_groups_policies(provisioned, alice, bob):
    config, groups = live_config(), submitter_of(user=bob).groups
    assert services.may_submit(alice, config, "research", frozenset())
    assert not services.may_submit(bob, config, "research", groups)
    assert services.may_submit(bob, config, "dev", groups)


def test_a_policy_without_a_group_takes_submissions_from_admins_only(alice, bob):
    config = Config(policies=(Policy("open"),))
    assert (services.may_submit(alice, config, "open", frozenset()),
            services.may_submit(bob, config, "open", frozenset({"dev"}))) == (True, False)


# --- idempotency ---------------------------------------------------------------------------------

def test_two_racing_submissions_with_one_key_meet_at_the_unique_constraint(provisioned, bob):
    """The loser of the race has passed the lookup already; the database refuses its row."""
    submission = read_submission(DEV_HALF, live_config())
    first, _ = services.request_create(user=bob, submission=submission, live=live_engine_version(), idempotency_key="k")
    second, created = services.request_create(user=bob, submission=submission, live=live_engine_version(),
                                              idempotency_key="k")
    assert (created, second.pk, Request.objects.count()) == (False, first.pk, 1)


# --- release, cancel, heartbeat -------------------------------------------------------------------

def test_release_of_an_allocated_request_frees_it_once(provisioned, bob):
    row = submit(bob, **DEV_HALF)
    released = services.request_release(user=bob, request_id=row.pk)
    assert (released.state, released.reason, released.pool) == ("released", "Released", "a100")
    assert released.message == "released by bob; its capacity on pool a100 is free again"
    assert services.request_release(user=bob, request_id=row.pk).finished_at == released.finished_at


def test_cancel_of_an_allocated_request_releases_it_with_cancelled_by_user(provisioned, bob):
    row = submit(bob, **DEV_HALF)
    cancelled = services.request_cancel(user=bob, request_id=row.pk)
    assert (cancelled.state, cancelled.reason) == ("released", "CancelledByUser")


def test_release_of_a_preempting_request_with_retries_left_queues_it_again(provisioned, alice, bob, monkeypatch):
    row = submit(bob, **DEV_HALF)
    preempting(row, max_retries=1)
    monkeypatch.setattr(services, "reconcile_soon", lambda: None)  # see the eviction itself, not the next grant
    evicted = services.request_release(user=bob, request_id=row.pk)
    assert (evicted.state, evicted.attempt, evicted.pool, evicted.lease_expires_at) == ("pending", 2, None, None)
    assert (evicted.reason, evicted.submitted_at) == ("PreemptedByPriority", row.submitted_at)
    assert "queued again (attempt 2)" in evicted.message


def test_release_of_a_preempting_request_out_of_retries_ends_it_preempted(provisioned, bob):
    row = submit(bob, **DEV_HALF)
    preempting(row, max_retries=0)
    evicted = services.request_release(user=bob, request_id=row.pk)
    assert (evicted.state, evicted.reason, evicted.finished_at is not None) == (
        "preempted", "PreemptedByPriority", True)


def test_a_transition_of_a_request_changed_meanwhile_is_a_conflict(provisioned, bob, monkeypatch):
    row = submit(bob, **DEV_HALF)
    stale = request_acts.locked_one(bob, row.pk)  # the row as it was read, before the change below
    Request.objects.filter(pk=row.pk).update(state="expired", reason="LeaseExpired")
    monkeypatch.setattr(request_acts, "locked_one", lambda user, request_id: stale)
    with pytest.raises(services.RequestConflict):
        services.request_release(user=bob, request_id=row.pk)
    assert Request.objects.get(pk=row.pk).state == "expired"


def test_actions_on_a_request_the_user_may_not_see_are_not_found(provisioned, alice, bob):
    row = submit(alice, **DEV_HALF)
    for action in (services.request_release, services.request_cancel, services.request_heartbeat):
        with pytest.raises(services.RequestNotFound):
            action(user=bob, request_id=row.pk)
        with pytest.raises(services.RequestNotFound):
            action(user=alice, request_id=2**70)


def test_a_heartbeat_renews_the_lease_for_lease_seconds(provisioned, bob):
    row = submit(bob, **DEV_HALF, lease_seconds=60)
    Request.objects.filter(pk=row.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=5))
    before = timezone.now()
    renewed = services.request_heartbeat(user=bob, request_id=row.pk)
    assert before + timedelta(seconds=60) <= renewed.lease_expires_at <= timezone.now() + timedelta(seconds=60)


def test_a_heartbeat_renews_a_preempting_request_too(provisioned, bob):
    row = submit(bob, **DEV_HALF)
    preempting(row, max_retries=0)
    assert services.request_heartbeat(user=bob, request_id=row.pk).state == "preempting"


def test_a_heartbeat_for_a_pending_request_or_an_expired_lease_is_not_live(provisioned, bob, monkeypatch):
    monkeypatch.setattr(services, "reconcile_soon", lambda: None)
    pending = submit(bob, **DEV_HALF)
    with pytest.raises(services.RequestNotLive):
        services.request_heartbeat(user=bob, request_id=pending.pk)
    Request.objects.filter(pk=pending.pk).update(state="allocated", pool="a100",
                                                 lease_expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(services.RequestNotLive, match="ran out"):
        services.request_heartbeat(user=bob, request_id=pending.pk)
