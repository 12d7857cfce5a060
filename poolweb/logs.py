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
