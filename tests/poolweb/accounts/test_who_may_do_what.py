"""Who may do what: every endpoint of api.md §2 × anonymous, bob (member of "dev"), carol (signed
in, no team) and alice (admin), as one table.

Callers authenticate with real bearer tokens. Anonymous callers get 401 everywhere: the first
authentication class (bearer) names its scheme in ``WWW-Authenticate``, so DRF answers 401, not
403. Configuration is admin only (403 for bob and carol). Anyone signed in reads the live state
and lists requests (their own). Submitting needs the policy's group or admin. Another user's
request is hidden from a non-admin: 403 or 404 (api.md says only "users see their own").
"""

from __future__ import annotations

from typing import NamedTuple

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from poolweb.services.tokens import token_create, token_issue
from poolweb.models import Request as RequestRow
from poolweb.services.reconciler import reconcile_pass

from tests.poolweb.conftest import document

pytestmark = pytest.mark.django_db

UNAUTHENTICATED = {401}
DENIED = {403}
HIDDEN = {403, 404}  # another user's request
OK, CREATED, NO_CONTENT = {200}, {201}, {204}


class Row(NamedTuple):
    method: str
    path: str  # {request} is bob's allocated request
    body: dict | None
    anonymous: set[int]
    bob: set[int]
    carol: set[int]
    alice: set[int]


def admin_only(method: str, path: str, alice: set[int], body: dict | None = None) -> Row:
    return Row(method, path, body, UNAUTHENTICATED, DENIED, DENIED, alice)


def signed_in(method: str, path: str) -> Row:
    return Row(method, path, None, UNAUTHENTICATED, OK, OK, OK)


def owners_and_admins(action: str) -> Row:
    return Row("POST", f"/requests/{{request}}/{action}", None, UNAUTHENTICATED, OK, HIDDEN, OK)


MATRIX = [
    admin_only("GET", "/config", OK),
    admin_only("GET", "/config/draft", OK),
    admin_only("PUT", "/config/draft", OK, document()),
    admin_only("DELETE", "/config/draft", NO_CONTENT),
    admin_only("POST", "/config/draft/validate", OK),
    admin_only("POST", "/config/draft/preview", OK),
    admin_only("POST", "/config/draft/provision", OK),
    admin_only("GET", "/config/versions", OK),
    admin_only("GET", "/config/versions/1", OK),
    admin_only("POST", "/config/versions/1/restore", {200, 201}),
    admin_only("GET", "/config/versions/1/diff/1", OK),  # the extensions of decision 43
    admin_only("GET", "/config/draft/info", OK),
    admin_only("GET", "/management", OK),
    admin_only("PUT", "/management", OK, {"enabled": True}),
    Row("POST", "/requests", {"policy": "dev", "profile": "half"}, UNAUTHENTICATED, CREATED, DENIED, CREATED),
    Row("POST", "/requests", {"policy": "research", "profile": "half"}, UNAUTHENTICATED, DENIED, DENIED, CREATED),
    # For another user: only an explicit grant of poolweb.submit_for_others, which alice (superuser) lacks;
    # bob names himself.
    Row("POST", "/requests", {"policy": "dev", "profile": "half", "owner": "bob"},
        UNAUTHENTICATED, CREATED, DENIED, DENIED),
    # A batch answers 200 whoever calls; each item's own status says who may (test_batch_submission).
    Row("POST", "/requests/batch", {"requests": [{"policy": "dev", "profile": "half"}]}, UNAUTHENTICATED, OK, OK, OK),
    # Likewise a batch of actions: each item answers as its single call would (test_acting_on_many).
    Row("POST", "/requests/actions", {"action": "cancel", "requests": []}, UNAUTHENTICATED, OK, OK, OK),
    signed_in("GET", "/requests"),
    Row("GET", "/requests/{request}", None, UNAUTHENTICATED, OK, HIDDEN, OK),
    owners_and_admins("heartbeat"),
    owners_and_admins("release"),
    owners_and_admins("cancel"),
    signed_in("GET", "/pools"),
    signed_in("GET", "/pools/h100/queue"),
    signed_in("GET", "/pools/h100/running"),
    signed_in("GET", "/policies"),
    signed_in("GET", "/usage"),  # by user, names only as the requests' privacy allows (test_usage_api)
    Row("GET", "/requests/{request}/history", None, UNAUTHENTICATED, OK, HIDDEN, OK),
    admin_only("GET", "/health", OK),
    admin_only("GET", "/audit", OK),
    signed_in("GET", "/tokens"),
    Row("POST", "/tokens", {"name": "laptop"}, UNAUTHENTICATED, CREATED, CREATED, CREATED),
    Row("DELETE", "/tokens/{token}", None, UNAUTHENTICATED, NO_CONTENT, HIDDEN, NO_CONTENT),  # bob's token
]

PERSONAS = ("anonymous", "bob", "carol", "alice")


def cases():
    for row in MATRIX:
        queue = f" {row.body['policy']}" if row.body and "policy" in row.body else ""
        queue += f" for {row.body['owner']}" if row.body and "owner" in row.body else ""
        for persona in PERSONAS:
            yield pytest.param(row, persona, id=f"{row.method} {row.path}{queue} as {persona}")


@pytest.fixture
def bobs_request(provisioned, alice, bob) -> RequestRow:
    """Version 1 live, a saved draft that changes it (one equal to it is not provisioned), and bob's
    request holding half a GPU."""
    changed = document()
    changed["pools"][0]["description"] = "changed by the draft"
    saved = caller(alice).put("/api/v1/config/draft", changed, format="json")
    assert saved.status_code == 200, f"setting up: PUT /config/draft as alice → {saved.status_code}"
    row = RequestRow.objects.create(owner=bob, policy="dev", profile="half", resources={"gpu": 500, "step_run": 1000})
    reconcile_pass()
    row.refresh_from_db()
    assert row.state == "allocated"
    return row


def caller(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=user)}")
    return client


@pytest.mark.parametrize("row,persona", list(cases()))
def test_the_permission_matrix(request, bobs_request, row: Row, persona: str):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    bobs_token, _ = token_create(user=bobs_request.owner, name="laptop")
    path = "/api/v1" + row.path.replace("{request}", str(bobs_request.id)).replace("{token}", str(bobs_token.id))

    response = getattr(caller(user), row.method.lower())(path, row.body, format="json")

    expected = getattr(row, persona)
    assert response.status_code in expected, (
        f"{row.method} {row.path} as {persona}: {response.status_code} {response.content[:300]!r}, "
        f"expected {sorted(expected)}")


def test_anonymous_callers_are_told_which_scheme_to_use(bobs_request):
    response = caller(None).get("/api/v1/config")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


def test_every_endpoint_of_api_md_is_in_the_matrix():
    from ..api.test_openapi import API_MD_OPERATIONS, template

    covered = {(row.method, template(row.path.replace("/1", "/{n}").replace("/h100", "/{name}"))) for row in MATRIX}

    assert {(method, template(path)) for method, path in API_MD_OPERATIONS} <= covered
