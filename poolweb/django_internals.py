"""Every place Poolweb relies on a part of Django that is not its public API, and nowhere else.

tests/poolweb/serving/test_django_internals.py checks each of them against the installed Django, so an
upgrade that changes one fails there, by name, before it fails in production. Each is here for a
measured reason, given beside it:

- ``SQLiteTransactionHooks``: the SQLite backend's transaction start and end (``_commit`` …),
  where ``poolweb.sqlite`` queues writers on a lock of the kernel's (decision 72);
- ``django_cursor``: a driver's cursor wrapped as Django wraps its own (``_prepare_cursor``), so
  ``poolweb.sql``'s server-bound statements run in Django's transaction and query log (decision 61);
- ``SyncMiddlewareASGIHandler``: Django's ASGI handler with the middleware in sync mode and a
  request's sync part in one hop to the view's thread (decision 69).
"""

from __future__ import annotations

from django.core import signals
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.core.exceptions import RequestAborted
from django.db.backends.sqlite3 import base as sqlite_base
from django.http import FileResponse
from django.urls import set_script_prefix
from asgiref.sync import sync_to_async


class SQLiteTransactionHooks(sqlite_base.DatabaseWrapper):
    """Django's SQLite connection with two hooks around its transactions: ``transaction_starting``
    before ``BEGIN`` (every transaction here is IMMEDIATE, a write), ``transaction_ended`` after
    it commits, rolls back or the connection closes. Django has no public hook there: its
    ``atomic`` calls ``_start_transaction_under_autocommit`` on SQLite and ``_commit``,
    ``_rollback`` and ``_close`` on every backend."""

    def transaction_starting(self) -> None:
        """Before ``BEGIN``; raising stops the transaction from starting."""

    def transaction_ended(self) -> None:
        """After the transaction ends, however it ended (also when ``BEGIN`` failed)."""

    def _start_transaction_under_autocommit(self) -> None:
        self.transaction_starting()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self.transaction_ended()
            raise

    def _commit(self) -> None:
        self._ending(super()._commit)

    def _rollback(self) -> None:
        self._ending(super()._rollback)

    def _close(self) -> None:
        self._ending(super()._close)

    def _ending(self, end) -> None:
        try:
            end()
        finally:
            self.transaction_ended()


def django_cursor(connection, cursor):
    """``cursor``, a cursor of the driver's own on ``connection``'s database connection, wrapped as
    Django wraps the cursors it makes: the thread check, and the query log when it is on."""
    return connection._prepare_cursor(cursor)


class SyncMiddlewareASGIHandler(ASGIHandler):
    """Django's ASGI handler with a request's whole sync part in one hop to the view's thread.

    Django's own loads the middleware in async mode: every middleware of Django's is sync, so
    each ``process_request`` and ``process_response`` hopped from the event loop to the view's
    thread and back, a dozen hops a request (measured: the hops, their futures and the lock
    handed to and fro were a third of the web process's time at 4 clients). Here the middleware
    chain runs in sync mode, as under WSGI, and the ``request_started`` signal, the view and,
    for a response already in memory, its ``close()`` (``request_finished``) run in one hop;
    the event loop reads the body before and sends the response after. A streaming response is
    sent, then closed, as Django does it. Sync views cannot be cancelled, so Django's task that
    listens for a disconnect to cancel the view has nothing to do here.

    What it repeats of ``ASGIHandler.handle`` and ``run_get_response`` (reading the body, the
    script prefix, ``create_request``, marking the response with ``_handler_class``, the file
    chunk size, ``send_response``) is what the test of this module checks Django still does.
    """

    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def handle(self, scope, receive, send) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        try:
            response = await sync_to_async(self.respond, thread_sensitive=True)(scope, body_file)
            await self.send_response(response, send)
            if response.streaming:
                await sync_to_async(response.close, thread_sensitive=True)()
        finally:
            body_file.close()

    def respond(self, scope, body_file):
        """The request's sync part, on the view's thread: the signal, the middleware and the view."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size  # the server chunks it (as Django's handler does)
        if not response.streaming:
            response.close()  # its content is in memory already
        return response
