"""The console's requests, policies and tokens pages over HTTP (poolweb.console.request_pages,
policy_pages, token_pages): who sees what, the filters as GET /api/v1/requests reads them, the
policies' numbers as GET /api/v1/policies gives them. What a person sees and does in them is
tests/browser/."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from poolweb.console.policy_pages import usage_bar
from poolweb.console.request_pages import lease_of
from poolweb.models import Request
from poolweb.selectors.live import ScopeUsage
from poolweb.services.payloads import request_data
from poolweb.services.tokens import token_create
from tests.poolweb.conftest import client_for, request_row, signed_in

pytestmark = pytest.mark.django_db


def page_data(html: str) -> dict:
    return json.loads(html.split('id="page-data" type="application/json">')[1].split("</script>")[0])


def listed(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr data-request="([0-9]+)"', html)]


@pytest.mark.parametrize("query, message", [
    ("state=bogus", "&#x27;bogus&#x27; is not a state: use pending, allocated"),
    ("state=pending,nope", "&#x27;nope&#x27; is not a state"),
    ("policy=a%20b", "policy is not a valid name"),
    ("pool=%00", "pool is not a valid name"),
    ("owner=" + "x" * 151, "owner is not a valid name"),
])
def test_a_filter_that_cannot_match_is_a_400_naming_it(provisioned, alice, query, message):
    response = signed_in(alice).get(f"/requests/?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'role="alert"' in html and message in html
    assert client_for(alice).get(f"/api/v1/requests?{query}").status_code == 400  # as the API judges it


def test_the_list_filters_as_the_api_does(provisioned, alice, bob):
    rows = [request_row(bob, "dev", "half", 0.5), request_row(alice, "research", "half", 0.5),
            request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")]
    admin = signed_in(alice)
    for query in ("", "state=pending", "policy=dev", "pool=a100", "owner=bob", "state=allocated,pending&owner=bob"):
        api = [r["id"] for r in client_for(alice).get(f"/api/v1/requests?{query}").json()["results"]]
        assert listed(admin.get(f"/requests/?{query}").content.decode()) == api, query
    assert listed(admin.get("/requests/").content.decode()) == [r.pk for r in reversed(rows)]  # newest first


def test_a_member_lists_only_their_own_and_cannot_filter_by_owner(provisioned, alice, bob):
    mine = request_row(bob, "dev", "half", 0.5)
    request_row(alice, "dev", "half", 0.5)
    html = signed_in(bob).get("/requests/?owner=alice").content.decode()
    assert listed(html) == [mine.pk]
    assert "Only administrators filter by owner" in html and 'name="owner"' not in html


def test_the_list_is_paged(provisioned, bob):
    Request.objects.bulk_create([Request(policy="dev", profile="half", owner=bob, resources={"gpu": 500})
                                 for _ in range(51)])
    client = signed_in(bob)
    first, second = client.get("/requests/").content.decode(), client.get("/requests/?page=2").content.decode()
    assert len(listed(first)) == 50 and len(listed(second)) == 1
    assert "Page 1 of 2" in first and listed(client.get("/requests/?page=x").content.decode()) == listed(first)


def test_a_request_page_is_its_owners_and_the_admins(provisioned, alice, bob, carol):
    row = request_row(bob, "dev", "half", 0.5)
    assert signed_in(carol).get(f"/requests/{row.pk}/").status_code == 404
    assert signed_in(alice).get(f"/requests/{row.pk}/").status_code == 200
    assert signed_in(bob).get("/requests/99999999999999999999/").status_code == 404
    html = signed_in(bob).get(f"/requests/{row.pk}/").content.decode()
    data = page_data(html)
    assert data["request"] == client_for(bob).get(f"/api/v1/requests/{row.pk}").json()
    assert f'aria-label="History of request {row.pk}"' in html


def test_the_history_and_the_lease_show_on_the_request_page(provisioned, bob):
    created = client_for(bob).post("/api/v1/requests", {"policy": "dev", "profile": "half"}, format="json").json()
    client_for(bob).post(f"/api/v1/requests/{created['id']}/heartbeat")
    html = signed_in(bob).get(f"/requests/{created['id']}/").content.decode()
    assert page_data(html)["changes"] == 2  # submitted, granted
    assert html.count('<tr>\n  <td class="nowrap"><time') == 2
    assert 'data-field="heartbeat"><time' in html  # a heartbeat came after the grant


def test_the_last_heartbeat_is_the_lease_less_its_length():
    granted = timezone.now()
    row = Request(state="allocated", allocated_at=granted, lease_seconds=300,
                  lease_expires_at=granted + timedelta(seconds=300))
    assert lease_of(row).renewed is None
    row.lease_expires_at = granted + timedelta(seconds=420)
    assert lease_of(row).renewed == granted + timedelta(seconds=120)
    row.state = "released"
    assert lease_of(row).expires is None and lease_of(row).renewed is None


def test_everyone_signed_in_sees_every_policy_as_the_api_lists_them(provisioned, alice, bob, carol):
    def cards(user) -> list[str]:
        return re.findall(r'aria-label="Policy ([^"]+)" data-policy-usage', signed_in(user).get("/policies/").content.decode())

    api = [policy["name"] for policy in client_for(carol).get("/api/v1/policies").json()]
    assert api == ["dev", "research"]
    assert cards(alice) == cards(bob) == cards(carol) == api
    assert signed_in(bob).get("/policies/research/card/").status_code == 200
    assert signed_in(bob).get("/policies/nothing/card/").status_code == 404


def test_another_teams_running_requests_show_neither_name_nor_owner(provisioned, alice, bob):
    row = request_row(alice, "research", "4xgpu", 4, state="allocated", pool="h100")
    row.name = "secret-run"
    row.save()
    card = signed_in(bob).get("/policies/research/card/").content.decode()
    assert f"#{row.pk}" in card and "secret-run" not in card and "alice" not in card
    assert "secret-run" in signed_in(alice).get("/policies/research/card/").content.decode()


def test_the_policies_page_shows_the_apis_numbers(provisioned, alice, bob):
    for _ in range(3):
        request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")  # 12 of dev's limit 8: over it
    html = signed_in(alice).get("/policies/").content.decode()
    for policy in client_for(alice).get("/api/v1/policies").json():
        for scope in policy["scopes"]:
            start = html.index(f'<tr data-scope="{scope["scope"]}" data-key="{scope["key"]}"',
                               html.index(f'data-policy="{policy["name"]}"'))
            row = html[start:html.index("</tr>", start)]
            for figure in ("usage", "reserved", "limit", "borrowed", "pending", "running"):
                text = "—" if scope[figure] is None else str(scope[figure])
                assert re.search(rf'data-figure="{figure}">(<b>)?{re.escape(text)}(</b>)?<', row), (policy["name"], figure)
    assert 'class="is-over"' in html


@pytest.mark.parametrize("usage, capacity, expected", [
    (ScopeUsage("*", "gpu", 6000, 4000, 8000, 2000, 0, 1), None, (50.0, 25.0, 50.0)),  # the limit is the scale
    (ScopeUsage("a", "gpu", 500, None, None, 0, 0, 1), 4000, (12.5, 0.0, None)),  # without one, the capacity
    (ScopeUsage("a", "gpu", 10000, None, 8000, 2000, 0, 1), None, (80.0, 20.0, None)),  # over the limit: all of it
    (ScopeUsage("a", "gpu", 0, None, None, 0, 0, 0), None, (0.0, 0.0, None)),
])
def test_a_usage_bar_is_drawn_against_the_limit_or_the_capacity(usage, capacity, expected):
    bar = usage_bar(usage, {"usage": 0, "reserved": None, "limit": None, "borrowed": 0}, capacity)
    assert (bar.within, bar.beyond, bar.reserved_at) == expected


def test_the_tokens_page_lists_only_ones_own_tokens(provisioned, alice, bob):
    token_create(user=bob, name="bobs laptop")
    token_create(user=alice, name="alices ci")
    html = signed_in(bob).get("/account/tokens/").content.decode()
    assert "bobs laptop" in html and "alices ci" not in html
    assert "Token secret" in html and 'aria-label="Revoke bobs laptop"' in html


def test_the_request_page_warns_when_a_preemptible_request_has_no_retries(provisioned, bob):
    quiet = request_row(bob, "dev", "half", 0.5)  # preemptible, max_retries 0: the defaults
    retried = request_row(bob, "dev", "half", 0.5)
    Request.objects.filter(pk=retried.pk).update(max_retries=2)
    kept = request_row(bob, "dev", "half", 0.5)
    Request.objects.filter(pk=kept.pk).update(preemptible=False)
    done = request_row(bob, "dev", "half", 0.5, state="released")

    warned = signed_in(bob).get(f"/requests/{quiet.pk}/").content.decode()
    assert 'data-warning="preemptible_without_retries"' in warned  # the API's words (decision 117)
    assert request_data(Request.objects.get(pk=quiet.pk))["warnings"][0]["message"] in warned
    for calm in (retried, kept, done):
        assert "data-warning" not in signed_in(bob).get(f"/requests/{calm.pk}/").content.decode()


def test_a_requests_history_rows_are_the_pages_own_markup_after_those_it_shows(provisioned, bob, carol):
    mine = request_row(bob, "dev", "half", 0.5)
    from poolweb.models import RequestChange

    for state in ("pending", "allocated"):
        RequestChange.objects.create(request_id=mine.pk, state=state, reason="Submitted", attempt=1, at=timezone.now())
    rows = signed_in(bob).get(f"/requests/{mine.pk}/history/?after=1").content.decode()
    assert '<tbody data-count="2">' in rows and rows.count("<tr>") == 1 and "state-allocated" in rows
    assert signed_in(carol).get(f"/requests/{mine.pk}/history/").status_code == 404
    assert signed_in(bob).get(f"/requests/{mine.pk}/history/?after=x").status_code == 400
