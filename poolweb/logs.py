"""Logging filters named by ``settings.LOGGING``."""

from __future__ import annotations

import logging


class WithoutTraceback(logging.Filter):
    """Drops the traceback of a record: a refused Host header or a suspicious path is a client's
    mistake, worth one line in the log, not thirty."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


class TracebackOnlyForBugs(logging.Filter):
    """``django.request`` logs a refused request (a member opening an admin's page: 403) with its
    exception's traceback, so anyone could grow the log thirty lines a request. A client's error
    (4xx) and a database that is down (503, poolweb/error_views.py) are one line that ends with
    the error's own first line; a 500 is a bug and keeps its traceback."""

    REASON = 200  # characters of the error's message kept

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and getattr(record, "status_code", 500) != 500:
            error = record.exc_info[1]
            # Its first line, escaped as Django escapes the path: a caller's text cannot start a line.
            reason = (str(error).splitlines() or [""])[0][:self.REASON].encode("unicode_escape").decode("ascii")
            record.msg, record.args = f"{record.getMessage()} ({type(error).__name__}: {reason})", ()
            record.exc_info = record.exc_text = None
        return True
