"""``GET /api/v1/health`` and ``manage.py check_state``: the invariants of §10 on the stored state."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from django_q.models import Task

from poolweb.models import Request
from poolweb.selectors.health import PASS_TASKS
from poolweb.services import config as config_services
from tests.poolweb.conftest import client_for, document, request_row

pytestmark = pytest.mark.django_db
URL = "/api/v1/health"


def over_capacity(owner) -> None:
    """Two 8-gpu allocations on h100 (8 gpu), granted after the live version: I-1 broken."""
    for _ in range(2):
        request_row(owner, "research", "4xgpu", 8, state="allocated", pool="h100")


def test_a_clean_install_is_healthy(provisioned, alice, bob):
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    body = client_for(alice).get(URL).json()
    assert (body["ok"], body["database"]["ok"], body["invariants"]["ok"], body["invariants"]["live"]) == (
        True, True, True, 1)
    assert body["invariants"]["checked"] == ["I-1", "I-2", "I-3", "I-4", "I-7", "I-8"]
    assert body["last_pass"] is None  # no pass has written anything yet
    request_row(bob, "dev", "half", 0.5)
    client_for(bob).post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json")
    last = client_for(alice).get(URL).json()["last_pass"]
    assert (last["trigger"], last["grants"], last["conflicts"]) == ("request", 2, 0)


def test_a_broken_invariant_answers_503_naming_it(provisioned, alice, bob):
    over_capacity(bob)
    response = client_for(alice).get(URL)
    assert response.status_code == 503
    violations = response.json()["invariants"]["violations"]
    assert {"invariant": "I-1", "message": "pool h100: 16 gpu in use, above its capacity of 8"} in violations


def test_over_commitment_left_by_a_provision_that_shrank_a_pool_is_allowed(provisioned, alice, bob):
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    request_row(bob, "research", "4xgpu", 4, state="allocated", pool="h100")
    Request.objects.update(allocated_at=timezone.now() - timedelta(minutes=1))
    shrunk = document()
    shrunk["pools"][0]["capacity"] = {"gpu": 6}
    config_services.config_provision_document(document=shrunk, author=alice)
    assert client_for(alice).get(URL).json()["invariants"] == {
        "ok": True, "checked": ["I-1", "I-2", "I-3", "I-4", "I-7", "I-8"], "live": 2, "pending": 0, "violations": []}


def test_the_worker_is_silent_until_it_finishes_a_pass_task(provisioned, alice, settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}
    assert client_for(alice).get(URL).json()["worker"] == {"ok": False, "passes": "worker", "last_seen_at": None}
    now = timezone.now()
    Task.objects.create(id="t1", name="pass", func=PASS_TASKS[0], started=now, stopped=now, success=True)
    assert client_for(alice).get(URL).json()["worker"]["ok"] is True


@pytest.mark.parametrize("persona, status", [("bob", 403), ("carol", 403), (None, 401)])
def test_only_admins_may_read_it(persona, status, request):
    user = request.getfixturevalue(persona) if persona else None
    assert client_for(user).get(URL).status_code == status


def test_check_state_exits_non_zero_on_a_violation(provisioned, bob, capsys):
    call_command("check_state")
    assert "all hold" in capsys.readouterr().out
    over_capacity(bob)
    with pytest.raises(CommandError, match="2 violation"):
        call_command("check_state")
    assert capsys.readouterr().err.splitlines() == [
        "I-1: pool h100: 16 gpu in use, above its capacity of 8",
        "I-2: policy research uses 16 gpu across all pools, above its limit of 12"]
