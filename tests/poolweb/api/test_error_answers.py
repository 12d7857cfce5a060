"""What Django answers before or outside DRF (poolweb/error_views.py): JSON for every status under
/api/, the console's pages elsewhere; a database that is down is a 503 with Retry-After, not a
500; and the log keeps a traceback for a 500 only, a refusal being one line."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from django.test import Client

from poolweb.api import live
from poolweb.console import queue_pages
from poolweb.ports import free_port
from poolweb.services.tokens import token_issue

pytestmark = pytest.mark.django_db
postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="terminates a PostgreSQL backend")

FOREIGN_HOST = {"Host": "evil.example"}


def anyone(**headers: str) -> Client:
    """A client that gets what Django sends for a 500, as a browser does, not the exception behind it."""
    return Client(raise_request_exception=False, headers=headers)


def signed_in(user) -> Client:
    client = anyone()
    client.force_login(user)
    return client


def with_token(user) -> Client:
    return anyone(Authorization=f"Bearer {token_issue(user=user)}")


def json_of(response, status: int) -> dict:
    assert (response.status_code, response["Content-Type"]) == (status, "application/json"), response.content[:300]
    return response.json()


def console_page(response, status: int) -> str:
    html = response.content.decode()
    assert response.status_code == status and 'class="empty-state"' in html, html[:300]
    return html


def request_log(caplog) -> list:
    return [record for record in caplog.records if record.name == "django.request"]


def broken(*args, **kwargs):
    raise ZeroDivisionError("a bug")


def test_a_foreign_host_is_a_json_400_under_the_api_and_the_console_s_page_elsewhere():
    assert "Host" in json_of(anyone().get("/api/v1/pools", headers=FOREIGN_HOST), 400)["detail"]
    console_page(anyone().get("/queues/", headers=FOREIGN_HOST), 400)


def test_two_thousand_query_parameters_are_a_json_400(bob):
    query = "&".join(f"p{n}=1" for n in range(2000))

    response = with_token(bob).get(f"/api/v1/requests?{query}")

    assert "parameters" in json_of(response, 400)["detail"]


@pytest.mark.parametrize("path", ["/api/v1/x%0Ay", "/api/v1/requests/1%0A2"])
def test_a_path_no_route_takes_is_a_json_404_even_with_a_newline_in_it(bob, path):
    assert "there is no API path" in json_of(signed_in(bob).get(path), 404)["detail"]


def test_a_form_too_large_for_the_csrf_check_to_read_is_a_json_413_under_the_api(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.cookies["csrftoken"] = "t" * 32  # so that the check reads the form for its token

    response = client.post("/api/", {"field": "x" * 2000})

    assert "larger than 1000 bytes" in json_of(response, 413)["detail"]


def test_a_write_the_csrf_check_refuses_is_a_json_403_under_the_api(bob):
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(bob)

    assert "CSRF" in json_of(client.post("/api/"), 403)["detail"]


def test_a_bug_in_an_api_view_is_a_json_500_and_the_log_keeps_its_traceback(provisioned, bob, monkeypatch, caplog):
    monkeypatch.setattr(live, "pool_states", broken)

    assert "detail" in json_of(with_token(bob).get("/api/v1/pools"), 500)
    [record] = request_log(caplog)
    assert record.exc_info[0] is ZeroDivisionError


def test_a_bug_in_a_console_view_is_the_console_s_500_page(provisioned, bob, monkeypatch):
    monkeypatch.setattr(queue_pages, "pool_states", broken)

    console_page(signed_in(bob).get("/queues/"), 500)


def test_a_refused_console_page_is_one_line_in_the_log(provisioned, bob, caplog):
    console_page(signed_in(bob).get("/versions/"), 403)

    [record] = request_log(caplog)
    assert record.exc_info is None and "only administrators may see this page" in record.getMessage()
    assert "\n" not in record.getMessage()


@pytest.fixture
def stop_database(transactional_db, tmp_path) -> Iterator[Callable[[], None]]:
    """Makes the database unreachable, as while PostgreSQL restarts (a port nobody listens on) or
    SQLite's file cannot be opened (its folder is gone); restored afterwards."""
    saved = dict(connection.settings_dict)

    def stop() -> None:
        connection.close()
        if connection.vendor == "postgresql":
            connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))
        else:
            connection.settings_dict["NAME"] = str(tmp_path / "gone" / "poolweb.sqlite3")

    yield stop
    connection.close()
    connection.settings_dict.update(saved)


def assert_one_line_about_the_database(caplog) -> None:
    [record] = request_log(caplog)
    assert record.exc_info is None and "OperationalError" in record.getMessage()


def test_a_database_that_is_down_is_a_json_503_with_retry_after_under_the_api(bob, stop_database, caplog):
    client = with_token(bob)
    stop_database()

    response = client.get("/api/v1/pools")

    assert "database" in json_of(response, 503)["detail"]
    assert int(response["Retry-After"]) > 0
    assert_one_line_about_the_database(caplog)


def test_a_database_that_is_down_is_a_short_503_page_on_the_console(bob, stop_database, caplog):
    client = signed_in(bob)
    stop_database()

    response = client.get("/queues/")

    assert "unavailable" in console_page(response, 503) and int(response["Retry-After"]) > 0
    assert_one_line_about_the_database(caplog)


@postgres_only
def test_a_connection_postgresql_dropped_is_a_json_503(transactional_db, bob, caplog):
    client = with_token(bob)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [backend] = cursor.fetchone()
    other = connection.copy()
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
    finally:
        other.close()

    try:
        response = client.get("/api/v1/pools")
    finally:
        connection.close()

    json_of(response, 503)
    [record] = request_log(caplog)
    assert record.exc_info is None
