"""The pass loop (``manage.py reconcile --follow``): woken through its socket the moment a change
commits, no broker in between; and what a change does when no loop listens."""

from __future__ import annotations

import os

import pytest
from django_q.models import OrmQ

from poolweb.models import Request as RequestRow
from poolweb.services import config as config_services, requests as services, wakeup
from reconcile import Vector

from . import processes
from .conftest import document

pytestmark = pytest.mark.django_db(transaction=True)
HALF = services.Submission("dev", "half", Vector.of(gpu=0.5, step_run=1))


@pytest.fixture
def passes_by_worker(settings):
    settings.POOLWEB = {**settings.POOLWEB, "PASSES": "worker"}


def test_a_wake_up_reaches_a_listener_and_says_when_nobody_listens(db):
    assert wakeup.Waker().wake() is False
    listener = wakeup.Listener()
    try:
        assert wakeup.Waker().wake() is True
        assert listener.wait(timeout=1) is True
        assert listener.wait(timeout=0.01) is False  # the wake-up was taken
        with pytest.raises(RuntimeError, match="another pass loop"):
            wakeup.Listener()
    finally:
        listener.close()
    assert wakeup.Waker().wake() is False


def test_a_listener_takes_over_the_socket_a_dead_loop_left(db):
    stale = wakeup.Listener()
    stale._socket.close()  # as a killed loop leaves it: the file, nobody bound
    assert os.path.exists(stale.path) and wakeup.Waker().wake() is False
    listener = wakeup.Listener()
    try:
        assert wakeup.Waker().wake() is True
    finally:
        listener.close()


def test_without_a_loop_a_change_queues_the_workers_task(alice, bob, passes_by_worker):
    config_services.config_provision_document(document=document(), author=alice)
    services.request_submit(user=bob, submission=HALF)
    assert OrmQ.objects.count() == 1


def test_the_loop_grants_what_a_submission_woke_it_for_with_no_task_queued(alice, bob, passes_by_worker):
    config_services.config_provision_document(document=document(), author=alice)
    loop = processes.start("manage.py", "reconcile", "--follow")
    try:
        processes.wait_until(lambda: wakeup.Waker().wake(), 60, "the pass loop to listen")
        queued = OrmQ.objects.count()  # the provision's, queued before the loop listened
        row, _ = services.request_submit(user=bob, submission=HALF)
        processes.wait_until(lambda: RequestRow.objects.get(pk=row.pk).state == "allocated", 30,
                             "the loop to grant it")
        assert OrmQ.objects.count() == queued
    finally:
        print(processes.stop(loop))
