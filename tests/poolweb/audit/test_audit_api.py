"""``GET /audit``: admins only, newest first, filtered and paged like the other lists; a filter that
cannot match is a 400 naming its parameter (decision 158)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone as tz

import pytest
from django.utils import timezone

from poolweb.models import AuditEntry
from poolweb.services.tokens import token_issue
from rest_framework.test import APIClient

from tests.poolweb.audit.conftest import calling_from

pytestmark = pytest.mark.django_db
URL = "/api/v1/audit"


def write(actor, action: str, target: str, at: datetime | None = None, request_ids=(), where: str = "192.0.2.1"):
    """An entry as ``audit.record`` writes it, at ``at`` (a read's test needs entries over days)."""
    return AuditEntry.objects.create(at=at or timezone.now(), actor=actor.get_username(), actor_id=actor.pk,
                                     origin=where, action=action, target=target, request_ids=list(request_ids))


@pytest.fixture
def log(alice, bob):
    """Five entries over three days, newest last."""
    day = datetime(2026, 12, 1, 9, 0, tzinfo=tz.utc)
    return [
        write(alice, "management.switch", "management", day),
        write(alice, "token.create", "token:Ab3dEf9h", day + timedelta(days=1)),
        write(bob, "token.create", "token:Zz9Yy8Xx", day + timedelta(days=1, hours=1)),
        write(alice, "request.cancel", "request:12", day + timedelta(days=2), request_ids=[12]),
        write(alice, "requests.release", "requests", day + timedelta(days=2, hours=1), request_ids=[11, 12, 13]),
    ]


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content[:300]
    return [entry["id"] for entry in response.json()["results"]]


def test_an_admin_reads_every_entry_newest_first(log, alice):
    body = calling_from(alice).get(URL).json()

    assert body["count"] == 5
    assert [e["id"] for e in body["results"]] == [e.pk for e in reversed(log)]
    assert body["results"][0] == {
        "id": log[4].pk, "at": "2026-12-03T10:00:00Z", "actor": "alice", "actor_id": log[4].actor_id,
        "origin": "192.0.2.1", "action": "requests.release", "object": "requests", "before": "", "after": "",
        "request_ids": [11, 12, 13], "detail": {}}


def test_a_member_is_refused_and_a_stranger_asked_to_sign_in(log, bob):
    member = APIClient()
    member.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=bob)}")

    assert member.get(URL).status_code == 403
    assert APIClient().get(URL).status_code == 401


@pytest.mark.parametrize("query,expected", [
    ({"actor": "bob"}, [2]),
    ({"action": "token.create"}, [2, 1]),
    ({"object": "token:Ab3dEf9h"}, [1]),
    ({"object": "request:12"}, [4, 3]),  # the batch that lists it too
    ({"request": "13"}, [4]),
    ({"request": "12", "action": "request.cancel"}, [3]),
    ({"since": "2026-12-02T09:00:00Z"}, [4, 3, 2, 1]),
    ({"until": "2026-12-02T09:00:00Z"}, [0]),  # exclusive
    ({"since": "2026-12-02T10:00:00+01:00", "until": "2026-12-03"}, [2, 1]),
    ({"since": "2026-12-02T09:00:00"}, [4, 3, 2, 1]),  # no offset: UTC
    ({"actor": "", "action": ""}, [4, 3, 2, 1, 0]),  # empty: no filter
    ({"actor": "carol"}, []),
])
def test_filters(log, alice, query, expected):
    assert ids(calling_from(alice).get(URL, query)) == [log[i].pk for i in expected]


@pytest.mark.parametrize("query,field,code", [
    ({"since": "yesterday"}, "since", "invalid_time"),
    ({"until": "2026-13-01T00:00:00Z"}, "until", "invalid_time"),
    ({"since": "2026-12-01T00:00:00 01:00"}, "since", "invalid_time"),  # a '+' sent unescaped
    ({"since": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"}, "until", "invalid"),
    ({"action": "token.stolen"}, "action", "invalid_choice"),
    ({"actor": "bob smith"}, "actor", "invalid_name"),
    ({"request": "twelve"}, "request", "invalid"),
    ({"request": "0"}, "request", "invalid"),
    ({"request": str(2**63)}, "request", "invalid"),
    ({"object": "x" * 201}, "object", "invalid"),
    ({"limit": "0"}, "limit", "invalid"),
])
def test_a_filter_that_cannot_match_is_400_naming_it(log, alice, query, field, code):
    response = calling_from(alice).get(URL, query)

    assert response.status_code == 400
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [(field, code)]


def test_a_plus_sent_unescaped_is_explained(log, alice):
    response = calling_from(alice).get(URL, {"since": "2026-12-01T00:00:00 01:00"})

    assert "%2B" in response.json()["errors"][0]["message"]


def test_pages_like_the_other_lists(log, alice):
    admin = calling_from(alice)

    first = admin.get(URL, {"limit": 2}).json()
    second = admin.get(URL, {"limit": 2, "offset": 2, "action": ""}).json()

    assert first["count"] == 5 and first["previous"] is None and "offset=2" in first["next"]
    assert [e["id"] for e in first["results"] + second["results"]] == [e.pk for e in reversed(log)][:4]


def test_the_api_index_links_to_the_audit(db):
    assert APIClient().get("/api/v1/").json()["audit"].endswith("/api/v1/audit")


def test_a_recent_entry_is_found_since_a_minute_ago(alice):
    write(alice, "management.switch", "management")
    since = (timezone.now() - timedelta(minutes=1)).isoformat().replace("+00:00", "Z")

    assert len(ids(calling_from(alice).get(URL, {"since": since}))) == 1
