"""``GET /requests?label=k=v``: the requests with every label asked for, on SQLite and PostgreSQL
alike, for any key and value a submission may have (decision 140)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests"
ODD = {"0": "digits", 'a"b': "quote", "é.x": "dot", "k": "a=b=c", "empty": ""}


@pytest.fixture
def labelled(provisioned, alice, bob) -> dict[str, int]:
    """bob's requests from two clusters, one with odd labels, one without; alice's from clearml."""
    def submit(user, **labels) -> int:
        response = client_for(user).post(URL, {"policy": "dev" if user == bob else "research",
                                               "profile": "half", "labels": labels}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    return {"clearml": submit(bob, slurm_cluster="clearml", team="nlp"),
            "other": submit(bob, slurm_cluster="other", team="nlp"),
            "odd": submit(bob, **ODD),
            "none": submit(bob),
            "alice": submit(alice, slurm_cluster="clearml")}


def listed(user, *labels: str, **params: str) -> list[int]:
    query = urlencode([*(("label", label) for label in labels), *params.items()])
    response = client_for(user).get(f"{URL}?{query}")
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


MATCHES = [
    ("one label", ["slurm_cluster=clearml"], ["alice", "clearml"]),
    ("two labels, both must match", ["team=nlp", "slurm_cluster=other"], ["other"]),
    ("two labels that no request has together", ["team=nlp", "slurm_cluster=nope"], []),
    ("one key with two values", ["slurm_cluster=clearml", "slurm_cluster=other"], []),
    ("the same label twice", ["team=nlp", "team=nlp"], ["other", "clearml"]),
    ("a value that holds '='", ["k=a=b=c"], ["odd"]),
    ("a key of digits", ["0=digits"], ["odd"]),
    ("a key with a quote", ['a"b=quote'], ["odd"]),
    ("a key with an accent and a dot", ["é.x=dot"], ["odd"]),
    ("an empty value", ["empty="], ["odd"]),
    ("a value is matched whole", ["k=a"], []),
    ("a key is matched whole", ["slurm=clearml"], []),
    ("an empty parameter is no filter", [""], ["alice", "none", "odd", "other", "clearml"]),
]


@pytest.mark.parametrize("name, labels, expected", MATCHES, ids=[row[0] for row in MATCHES])
def test_an_admin_lists_the_requests_with_every_label_asked_for(labelled, alice, name, labels, expected):
    assert listed(alice, *labels) == [labelled[key] for key in expected]


def test_a_member_sees_only_their_own_requests_with_the_label(labelled, bob, carol):
    assert listed(bob, "slurm_cluster=clearml") == [labelled["clearml"]]
    assert listed(carol, "slurm_cluster=clearml") == []


def test_the_label_filter_goes_with_the_others(labelled, alice):
    assert listed(alice, "slurm_cluster=clearml", policy="dev") == [labelled["clearml"]]


BAD = [
    ("no '='", "slurm_cluster", "invalid"),
    ("no key", "=clearml", "invalid"),
    ("a key longer than a submission's", "k" * 64 + "=v", "invalid_length"),
    ("a value longer than a submission's", "k=" + "v" * 201, "invalid_length"),
    ("a control character in the key", "k\x01=v", "invalid_character"),
    ("a NUL in the value", "k=v\x00", "invalid_character"),
    ("a DEL in the key", "k\x7f=v", "invalid_character"),
]


@pytest.mark.parametrize("name, label, code", BAD, ids=[row[0] for row in BAD])
def test_a_malformed_label_is_refused_naming_it(labelled, alice, name, label, code):
    response = client_for(alice).get(f"{URL}?{urlencode({'label': label})}")

    assert response.status_code == 400
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [("label", code)]


def test_each_malformed_label_is_named_beside_the_other_parameters(labelled, alice):
    response = client_for(alice).get(f"{URL}?label=a&label=b=ok&label=c&state=bogus")

    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["state", "label", "label"]
