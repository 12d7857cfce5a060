"""What ``poolweb.django_internals`` relies on of Django's private parts is still there and still
behaves so: a Django upgrade that changes one fails here, naming it."""

from __future__ import annotations

import inspect

import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper
from django.test.utils import CaptureQueriesContext

from poolweb import django_internals
from poolweb.django_internals import SQLiteTransactionHooks, SyncMiddlewareASGIHandler


def parameters(function) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_transaction_methods_the_sqlite_hooks_override_are_djangos():
    for name in ("_start_transaction_under_autocommit", "_commit", "_rollback", "_close"):
        assert parameters(getattr(SQLiteWrapper, name)) == ["self"], name
    # atomic() starts a transaction on SQLite through this method, found by name.
    assert "_start_transaction_under_autocommit" in inspect.getsource(BaseDatabaseWrapper.set_autocommit)
    for name in ("commit", "rollback", "close"):
        assert f"self._{name}()" in inspect.getsource(getattr(BaseDatabaseWrapper, name)), name


@pytest.mark.django_db(transaction=True)
def test_a_transaction_calls_the_hooks_once_each_and_in_order(monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("the hooks are the SQLite backend's")
    wrapper = connections[DEFAULT_DB_ALIAS]
    assert isinstance(wrapper, SQLiteTransactionHooks)
    calls: list[str] = []
    for hook in ("transaction_starting", "transaction_ended"):
        original = getattr(wrapper, hook)
        monkeypatch.setattr(wrapper, hook, lambda hook=hook, original=original: (calls.append(hook), original()))

    with transaction.atomic():
        calls.append("inside")
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        calls.append("inside")
        1 / 0

    assert calls == ["transaction_starting", "inside", "transaction_ended"] * 2


def test_preparing_a_cursor_takes_one_and_wraps_it_as_django_wraps_its_own():
    assert parameters(BaseDatabaseWrapper._prepare_cursor) == ["self", "cursor"]


@pytest.mark.django_db
def test_a_wrapped_cursor_runs_in_djangos_query_log():
    connection.ensure_connection()
    with CaptureQueriesContext(connection) as statements:
        cursor = django_internals.django_cursor(connection, connection.connection.cursor())
        cursor.execute("SELECT 1")
        assert cursor.fetchone()[0] == 1
        cursor.close()
    assert [query["sql"] for query in statements] == ["SELECT 1"]


def test_the_asgi_handler_still_has_the_steps_the_one_hop_handler_repeats():
    assert parameters(ASGIHandler.read_body) == ["self", "receive"]
    assert parameters(ASGIHandler.create_request) == ["self", "scope", "body_file"]
    assert parameters(ASGIHandler.send_response) == ["self", "response", "send"]
    assert parameters(BaseHandler.load_middleware) == ["self", "is_async"]
    assert isinstance(ASGIHandler.chunk_size, int)
    handle = inspect.getsource(ASGIHandler.handle)
    for step in ("self.read_body(receive)", "set_script_prefix(get_script_prefix(scope))",
                 "signals.request_started", "self.create_request(scope, body_file)", "self.send_response(",
                 "response.close", "body_file.close()"):
        assert step in handle, step
    marking = inspect.getsource(ASGIHandler.run_get_response)
    assert "response._handler_class = self.__class__" in marking
    assert "response.block_size = self.chunk_size" in marking


def test_the_one_hop_handler_loads_the_middleware_in_sync_mode():
    handler = SyncMiddlewareASGIHandler()
    assert handler._middleware_chain is not None
    assert not inspect.iscoroutinefunction(handler._middleware_chain)
