"""What ``bees run`` prints of the engine SDK's own log lines: one line each, no traceback."""

from __future__ import annotations

import logging
import os
import sys
import time

DEBUG_ENV = "BEES_DEBUG"
"""Set to 1 (or run `bees --debug`) to keep tracebacks: the SDK's on the console, and a bug's
(a bug report wants them)."""


class OneLine(logging.Formatter):
    """``2026-12-01T08:15:00Z WARNING temporalio.activity: MESSAGE (NotFound: no work item
    …)``: the exception's type and first line instead of its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as one line (UTC time, level, logger, message, exception)."""
        when = self.formatTime(record, "%Y-%m-%dT%H:%M:%SZ")
        text = f"{when} {record.levelname} {record.name}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            first = (str(error).splitlines() or [""])[0]
            text += f" ({type(error).__name__}: {first})"
        return text


def engine_logs_in_one_line() -> None:
    """Send the ``temporalio`` loggers' warnings and errors to stderr, one line each (times
    in UTC), unless ``BEES_DEBUG=1`` asks for Python's default with tracebacks."""
    if os.environ.get(DEBUG_ENV) == "1":
        return
    handler = logging.StreamHandler(sys.stderr)
    formatter = OneLine()
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    handler.setLevel(logging.WARNING)
    sdk = logging.getLogger("temporalio")
    sdk.addHandler(handler)
    sdk.propagate = False
