"""What ``bees run`` prints: one line per event, ``TIME LEVEL message``, times in UTC.

Its own news (``engine started at …``) and the engine SDK's warnings go through the same
formatter, so a log of ``bees run`` reads alike from top to bottom and sorts by time.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable

from bees_cli.cli.boundary import DEBUG_ENV

RUN_LOGGER = "bees"
"""The logger of ``bees run``'s own lines (printed without the logger's name)."""

PACKAGE_LOGGER = "bees_cli"
"""The parent of the package's module loggers (a fire, held keys, the shared record): under
``bees run`` their INFO and above are lines of its own, without the module's name."""


class OneLine(logging.Formatter):
    """``2026-12-01T08:15:00Z INFO engine started at 127.0.0.1:7233`` for ``bees run``'s own
    lines; ``2026-12-01T08:15:00Z WARNING temporalio.activity: MESSAGE (NotFound: no work
    item …)`` for another logger's: the exception's type and first line instead of its
    traceback."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as one line (UTC time, level, logger, message, exception)."""
        when = self.formatTime(record, "%Y-%m-%dT%H:%M:%SZ")
        own = record.name in (RUN_LOGGER, PACKAGE_LOGGER) or record.name.startswith(
            f"{PACKAGE_LOGGER}.")
        name = "" if own else f"{record.name}: "
        text = f"{when} {record.levelname} {name}{record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            first = (str(error).splitlines() or [""])[0]
            text += f" ({type(error).__name__}: {first})"
        return text


def _handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    formatter = OneLine()
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    return handler


def engine_logs_in_one_line() -> None:
    """Send the ``temporalio`` loggers' warnings and errors to stderr, one line each (times
    in UTC), unless ``BEES_DEBUG=1`` asks for Python's default with tracebacks."""
    if os.environ.get(DEBUG_ENV) == "1":
        return
    handler = _handler()
    handler.setLevel(logging.WARNING)
    sdk = logging.getLogger("temporalio")
    sdk.addHandler(handler)
    sdk.propagate = False


def run_lines() -> Callable[[str], None]:
    """Return how ``bees run`` says its news: an ``INFO`` line on stderr per call, formatted
    by :class:`OneLine` (issue 15, point 6); the package's module loggers
    (:data:`PACKAGE_LOGGER`) print the same way from INFO up."""
    logger = logging.getLogger(RUN_LOGGER)
    for name in (RUN_LOGGER, PACKAGE_LOGGER):  # the package's news reads as bees run's own
        own = logging.getLogger(name)
        if not own.handlers:
            own.addHandler(_handler())
        own.setLevel(logging.INFO)
        own.propagate = False

    def say(message: str) -> None:
        for line in message.splitlines() or [""]:
            logger.info(line)

    return say
