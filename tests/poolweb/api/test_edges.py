"""The API's edges a new user runs into: unknown paths, strict bodies and pages everywhere,
case-insensitive schemes, short echoes, and a root that lists what there is."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from poolweb.services.tokens import token_issue

from tests.poolweb.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v1/requests/abc", "/api/v2/pools", "/api/v1/pools/"])
def test_an_unknown_api_path_is_a_json_404(bob, path):
    response = client_for(bob).get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert "there is no API path" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/api/v1/requests/abc/cancel", "/api/v1/nothing"])
def test_a_write_to_an_unknown_api_path_with_a_token_is_a_json_404_not_a_csrf_page(bob, path):
    client = Client(enforce_csrf_checks=True, headers={"Authorization": f"Bearer {token_issue(user=bob)}"})

    response = client.post(path, {}, content_type="application/json")

    assert (response.status_code, response["Content-Type"]) == (404, "application/json")


@pytest.mark.parametrize("path", ["/api", "/api/", "/api/v1"])
def test_the_api_s_short_paths_lead_to_its_root(path):
    response = APIClient().get(path)

    assert (response.status_code, response["Location"]) == (302, "/api/v1/")


def test_the_api_root_lists_its_resources_and_each_link_answers(alice, provisioned):
    client_for(alice).put("/api/v1/config/draft", {"pools": [], "profiles": [], "policies": []}, format="json")

    body = APIClient().get("/api/v1/").json()

    assert {"config", "requests", "pools", "policies", "tokens", "health", "schema", "docs"} <= set(body)
    assert body.pop("events") == "ws://testserver/ws/events/"
    for name, link in body.items():
        assert link.startswith("http://testserver/")
        assert client_for(alice).get(link).status_code in (200, 503), name  # health: 503 with no worker


@pytest.mark.parametrize("path, body", [
    ("/api/v1/management", {"enabled": True, "enable": False}),
    ("/api/v1/config/draft/provision", {"comment": "", "commnet": "typo"}),
])
def test_small_bodies_refuse_unknown_fields_as_every_body_does(alice, provisioned, path, body):
    method = "put" if path.endswith("management") else "post"
    client_for(alice).put("/api/v1/config/draft", {"pools": [], "profiles": [], "policies": []}, format="json")

    response = getattr(client_for(alice), method)(path, body, format="json")

    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["code"] == "unknown_field" and error["path"] in ("enable", "commnet")


@pytest.mark.parametrize("query, parameter", [("limit=0", "limit"), ("offset=-1", "offset"), ("limit=x", "limit")])
@pytest.mark.parametrize("path", ["/api/v1/pools/h100/queue", "/api/v1/requests", "/api/v1/tokens"])
def test_every_list_reads_limit_and_offset_alike(provisioned, bob, path, query, parameter):
    response = client_for(bob).get(f"{path}?{query}")

    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == [parameter]


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "Bearer"])
def test_the_authorization_scheme_is_case_insensitive(bob, scheme):
    token = token_issue(user=bob)

    response = APIClient().get("/api/v1/pools", HTTP_AUTHORIZATION=f"{scheme} {token}")

    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/pools/{long}/queue", "/api/v1/requests/{digits}",
                                  "/api/v1/requests/{digits}/cancel", "/api/v1/tokens/{digits}",
                                  "/api/v1/nothing/{long}"])
def test_a_404_does_not_echo_a_long_name_back_whole(alice, provisioned, path):
    url = path.format(long="p" * 5000, digits="9" * 4000)

    response = client_for(alice).delete(url) if "tokens" in url else (
        client_for(alice).post(url) if url.endswith("cancel") else client_for(alice).get(url))

    assert response.status_code == 404
    assert len(response.json()["detail"]) < 120


def test_signing_in_without_next_lands_on_the_console(alice):
    response = Client().post("/accounts/login/", {"username": "alice", "password": "alice-password"})

    assert (response.status_code, response["Location"]) == (302, "/")
