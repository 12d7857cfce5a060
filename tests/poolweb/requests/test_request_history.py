"""A request's history (``GET /requests/{id}/history``): every change of state, with its time,
reason, sentence, attempt and pool, written in the transaction of the change."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from poolweb.models import Request, RequestChange
from poolweb.services import announcement
from poolweb.services.reconciler import reconcile_pass
from tests.poolweb.conftest import ONE_GPU, client_for, request_row

pytestmark = pytest.mark.django_db



def history(client, request_id: int) -> list[tuple]:
    response = client.get(f"/api/v1/requests/{request_id}/history")
    assert response.status_code == 200, response.content
    return [(c["state"], c["reason"], c["attempt"], c["pool"]) for c in response.json()]


def test_a_preempted_request_queued_again_and_granted_again_shows_every_step(alice, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 30}
    admin, user = client_for(alice), client_for(bob)
    assert admin.put("/api/v1/config/draft", ONE_GPU, format="json").status_code == 200
    assert admin.post("/api/v1/config/draft/provision", {}, format="json").status_code == 200
    low = user.post("/api/v1/requests", {"policy": "low", "profile": "one", "max_retries": 1}, format="json").json()
    high = user.post("/api/v1/requests", {"policy": "high", "profile": "one"}, format="json").json()
    later = timezone.now() + timedelta(seconds=31)
    with mock.patch("django.utils.timezone.now", return_value=later):
        reconcile_pass()  # the grace is over: low is evicted, queued again, and high is granted
        user.post(f"/api/v1/requests/{high['id']}/release")  # low is granted again
    assert history(user, low["id"]) == [
        ("pending", "Submitted", 1, None), ("allocated", "Granted", 1, "p"),
        ("preempting", "PreemptedByPriority", 1, "p"), ("pending", "PreemptedByPriority", 2, None),
        ("allocated", "Granted", 2, "p")]
    entries = user.get(f"/api/v1/requests/{low['id']}/history").json()
    assert entries[2]["message"].startswith(f"preempted by request {high['id']} on pool p")
    assert [e["at"] for e in entries] == sorted(e["at"] for e in entries)


def test_a_release_and_a_rejection_are_in_the_history(provisioned, bob):
    user = client_for(bob)
    granted = user.post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json").json()
    user.post(f"/api/v1/requests/{granted['id']}/release")
    rejected = user.post("/api/v1/requests", {"policy": "dev", "profile": "job", "resources": {"gpu": 9}},
                         format="json").json()
    assert history(user, granted["id"]) == [
        ("pending", "Submitted", 1, None), ("allocated", "Granted", 1, "a100"), ("released", "Released", 1, "a100")]
    assert history(user, rejected["id"]) == [("rejected", "ExceedsPoolCapacity", 1, None)]


def test_a_decision_that_did_not_commit_leaves_no_history(provisioned, bob):
    row = request_row(bob, "dev", "half", 0.5)
    with mock.patch.object(announcement.events, "publish_live", side_effect=RuntimeError("the pass broke")), \
            pytest.raises(RuntimeError):
        reconcile_pass()
    assert (Request.objects.get(pk=row.pk).state, RequestChange.objects.count()) == ("pending", 0)


def test_another_users_history_is_hidden_like_the_request(provisioned, bob, carol, alice):
    row = request_row(bob, "dev", "half", 0.5)
    assert client_for(carol).get(f"/api/v1/requests/{row.pk}/history").status_code == 404
    assert client_for(alice).get(f"/api/v1/requests/{row.pk}/history").status_code == 200
    assert client_for(bob).get("/api/v1/requests/999999/history").status_code == 404
