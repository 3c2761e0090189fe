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
from pathlib import Path

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


RUN_LOG = "run.log"
"""The file in the data dir that keeps the engine SDK's warnings whole (with tracebacks)."""


def _said_by_the_stage() -> frozenset[str]:
    """The application errors a stage says itself on ``bees run``'s terminal, by type: the
    model errors (``Draft of ITEM: cannot reach …, retrying``, engine/model_activities)."""
    from bees_cli.errors import ModelError

    names, todo = set(), [ModelError]
    while todo:
        kind = todo.pop()
        names.add(kind.__name__)
        todo.extend(kind.__subclasses__())
    return frozenset(names)


class ActivityFailures(logging.Filter):
    """On the terminal, the SDK's ``Completing activity as failed ({'activity_id': …})`` of
    an application error (an error Bees raised on purpose, recorded on the item) becomes
    ``ACTIVITY of ITEM failed on try N: MESSAGE (details in LOG)``, or nothing when the
    stage said it itself (:func:`_said_by_the_stage`). Other records pass as they are.

    Why it rewrites the record in place: Python 3.11's filters cannot hand a copy on; the
    handler of the log file comes first (:func:`engine_logs_in_one_line`), so it has written
    the record whole before this filter runs."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log
        self.said = _said_by_the_stage()

    def filter(self, record: logging.LogRecord) -> bool:
        """Return False (not shown), or True after making an application error's record
        read as one plain line."""
        error = record.exc_info[1] if record.exc_info else None
        if (getattr(record, "__temporal_error_identifier", None) != "ActivityFailure"
                or type(error).__name__ != "ApplicationError"):
            return True
        if getattr(error, "type", None) in self.said:
            return False
        info = getattr(record, "temporal_activity", None) or {}
        first = (str(getattr(error, "message", error)).splitlines() or [""])[0]
        record.msg = (f"{info.get('activity_type', 'an activity')} of "
                      f"{info.get('workflow_id', 'an item')} failed on try "
                      f"{info.get('attempt', '?')}: {first} (details in {self.log})")
        record.args, record.exc_info, record.exc_text, record.name = (
            None, None, None, PACKAGE_LOGGER)
        return True


def engine_logs_in_one_line(log: Path | None = None) -> None:
    """Send the ``temporalio`` loggers' warnings and errors to stderr, one line each (times
    in UTC), unless ``BEES_DEBUG=1`` asks for Python's default with tracebacks.

    Args:
        log: the run's log file (``<data>/run.log``), or None. Given, every SDK warning is
            appended there whole (traceback included), and the terminal reads like bees
            run's own lines: a failed activity's application error is one plain line, or
            none when its stage said it (:class:`ActivityFailures`).
    """
    if os.environ.get(DEBUG_ENV) == "1":
        return
    sdk = logging.getLogger("temporalio")
    for old in [h for h in sdk.handlers if getattr(h, "bees_run", False)]:
        sdk.removeHandler(old)  # a second call in one process (a test, demo then run)
        old.close()
    handler = _handler()
    handler.setLevel(logging.WARNING)
    if log is not None:
        handler.addFilter(ActivityFailures(log))
        whole = logging.FileHandler(log, encoding="utf-8", delay=True)
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                      "%Y-%m-%dT%H:%M:%SZ")
        formatter.converter = time.gmtime
        whole.setFormatter(formatter)
        whole.setLevel(logging.WARNING)
        whole.bees_run = True  # type: ignore[attr-defined]
        sdk.addHandler(whole)  # first: it writes each record whole before the filter
    handler.bees_run = True  # type: ignore[attr-defined]
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
