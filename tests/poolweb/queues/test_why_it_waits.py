""""Why it waits" (selectors/waiting.py, console/queues.py) and the queue pages' server side: what
is ahead of a request and what it needs, a preempting request's preemptor, the API's privacy
applied to each, and the fragment a queue row opens."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from poolweb.console.cards import resources_text
from poolweb.console.queues import why_view
from poolweb.models import Request as RequestRow
from poolweb.selectors.requests import audience_of
from poolweb.selectors.waiting import NEAREST_SHOWN, why_waits

from tests.poolweb.conftest import document

from .test_live_state_api import fill_the_pools, fixed, go_live, held_on_a100, queue_document

pytestmark = pytest.mark.django_db


def page_as(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def queued(alice, bob) -> list[RequestRow]:
    """h100 and a100 full; three of bob's 4-gpu requests queued for h100, then one of alice's
    (research: a higher priority, so first in the queue)."""
    fill_the_pools(alice)
    return [fixed(bob, "dev/4xgpu", name=f"bob-{n}") for n in range(3)] + [fixed(alice, "research/4xgpu", name="al")]


def test_a_pending_request_sees_how_many_are_ahead_and_what_they_need(queued):
    last = RequestRow.objects.get(pk=queued[2].pk)
    why = why_waits(last)
    assert (last.position, why.ahead) == (4, 3)
    assert [r.id for r in why.nearest] == [queued[3].id, queued[0].id, queued[1].id]
    assert why.demand == {"gpu": 12000, "step_run": 3000}
    assert why.pool.name == "h100" and why.preemptor is None


def test_only_the_nearest_ahead_are_listed(alice, bob):
    fill_the_pools(alice)
    RequestRow.objects.bulk_create([RequestRow(owner=bob, policy="dev", profile="4xgpu", queue_pool="h100",
                                               resources={"gpu": 4000}, position=n) for n in range(1, 31)])
    why = why_waits(RequestRow.objects.get(position=30))
    assert why.ahead == 29 and len(why.nearest) == NEAREST_SHOWN
    assert [r.position for r in why.nearest] == list(range(20, 30))
    view = why_view(why, audience_of(bob), "bob")
    assert (view.more_ahead, view.first_ahead, view.demand) == (19, 20, "116 gpu")


def test_others_requests_ahead_are_anonymised_as_in_the_api(queued, carol, bob):
    alices = why_view(why_waits(queued[3]), audience_of(bob), "bob")  # research is not bob's team
    assert alices.row.hidden and alices.row.reason == "" and alices.ahead == 0
    mine = why_view(why_waits(RequestRow.objects.get(pk=queued[2].pk)), audience_of(bob), "bob")
    assert [r.hidden for r in mine.nearest] == [True, False, False]  # alice's, then bob's own
    theirs = why_view(why_waits(queued[1]), audience_of(carol), "carol")
    assert all(r.hidden for r in theirs.nearest) and "name" not in theirs.nearest[0].data


def test_a_preempting_request_names_its_preemptor_and_the_end_of_its_grace(alice, bob, settings):
    settings.POOLWEB = {**settings.POOLWEB, "EVICTION_GRACE_SECONDS": 30}
    go_live(queue_document(), alice)
    victims = [fixed(bob, "dev/4xgpu") for _ in range(3)]  # h100 and a100 full of dev
    preemptor = fixed(alice, "research/4xgpu")
    victim = next(RequestRow.objects.get(pk=v.pk) for v in victims
                  if RequestRow.objects.get(pk=v.pk).state == "preempting")
    view = why_view(why_waits(victim), audience_of(bob), "bob")
    assert view.preemptor.id == preemptor.id and view.preemptor.hidden  # research is not bob's team
    assert (view.grace_ends_at - victim.preempted_at).total_seconds() == 30
    waiting = why_view(why_waits(RequestRow.objects.get(pk=preemptor.pk)), audience_of(alice), "alice")
    assert [v.id for v in waiting.victims] == [victim.id]


def test_the_why_fragment_is_for_a_row_of_that_pool_only(queued, carol, alice):
    response = page_as(carol).get(f"/queues/h100/why/{queued[2].id}/")
    assert response.status_code == 200
    text = response.content.decode()
    assert "Why it waits" in text and "3 requests, needing 12 gpu" in text and "bob-0" not in text
    # 4xgpu may be served from a100 too, so a100's queue lists it (decision 119); "half" may not be served from h100
    assert page_as(carol).get(f"/queues/a100/why/{queued[2].id}/").status_code == 200
    half = fixed(alice, "research/half")
    assert page_as(carol).get(f"/queues/h100/why/{half.id}/").status_code == 404
    assert page_as(carol).get("/queues/h100/why/99999999/").status_code == 404


def test_the_queue_page_renders_its_first_rows_in_service_order(queued, bob):
    response = page_as(bob).get("/queues/h100/")
    assert response.status_code == 200
    page = response.context["page"]
    assert [row["id"] for row in page["rows"]["pending"]] == [r.id for r in (queued[3], *queued[:3])]
    text = response.content.decode()
    assert 'aria-label="Pending for h100"' in text and 'aria-label="Running on h100"' in text
    assert "bob-0" in text and ">al<" not in text  # alice's research request is anonymised for bob


def test_an_unknown_pool_is_a_404_and_the_overview_lists_every_pool(queued, bob):
    assert page_as(bob).get("/queues/nowhere/").status_code == 404
    assert page_as(bob).get("/queues/NO%20SUCH/").status_code == 404
    overview = page_as(bob).get("/queues/").content.decode()
    assert 'aria-label="Pool h100"' in overview and 'aria-label="Pool a100"' in overview


def test_rows_leave_out_step_run_and_write_numbers_as_the_api():
    # Milli-units in, the API's numbers out: one wording for every page and row
    assert resources_text({"mcpu": 8_000_000, "gpu": 500, "step_run": 1000}) == "0.5 gpu · 8000 mcpu"


def test_each_pool_page_lists_the_preemptor_and_marks_where_capacity_is_held(alice, bob, carol):
    preemptor = held_on_a100(alice, bob)
    for pool, marked in (("a100", True), ("h100", False)):
        response = page_as(carol).get(f"/queues/{pool}/")
        assert [row["id"] for row in response.context["page"]["rows"]["pending"]] == [preemptor.id]
        assert response.context["page"]["pending"] == 1
        assert ("held here" in response.content.decode()) is marked
        rows = page_as(carol).get(f"/queues/{pool}/rows/pending/").content.decode()  # a live re-read marks it alike
        assert ("held here" in rows) is marked
    assert response.context["page"]["profiles"] == ["4xgpu", "job"]  # whose rows h100's table takes live


def test_a_request_first_in_line_is_told_who_may_still_go_ahead(alice, bob):
    # dev borrows (no reservation), research has a higher priority: "it is next" would not be kept
    fill_the_pools(alice)
    waiting = fixed(bob, "dev/job")
    view = why_view(why_waits(RequestRow.objects.get(pk=waiting.pk)), audience_of(bob), "bob")
    assert view.ahead == 0
    assert view.overtaken.startswith("a later request may still go ahead of it: ")
    assert "one of a higher priority (research, R-32.1)" in view.overtaken
    html = page_as(bob).get(f"/queues/h100/why/{waiting.id}/").content.decode()
    assert "nothing now, but a later request may still go ahead" in html and "it is next" not in html


def test_a_request_nobody_can_pass_is_next(alice, bob):
    go_live(document(profiles=[{"name": "job", "resources": {"gpu": 1}, "dynamic": True,
                                "connections": [{"pool": "h100"}], "policies": ["research"]}]), alice)
    for _ in range(8):
        fixed(alice, "research/job")
    waiting = fixed(alice, "research/job")
    assert (waiting.state, waiting.position) == ("pending", 1)
    assert why_waits(RequestRow.objects.get(pk=waiting.pk)).overtaken == ""
    assert "nothing: it is next" in page_as(alice).get(f"/queues/h100/why/{waiting.id}/").content.decode()
