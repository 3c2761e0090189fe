"""bees run prints the engine SDK's warnings in one line each, without a traceback."""

from __future__ import annotations

import logging
import sys
import time

from bees_cli.cli.logs import OneLine


def test_a_failed_activity_is_one_line_with_the_error_not_its_traceback() -> None:
    try:
        raise LookupError("no work item '01M8RBRQ' on this computer\nmore detail")
    except LookupError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("temporalio.activity", logging.WARNING, __file__, 1,
                               "Completing activity as failed", None, exc_info)
    record.created = 1_764_576_900.0  # 2025-12-01T08:15:00Z
    formatter = OneLine()
    formatter.converter = time.gmtime
    assert formatter.format(record) == (
        "2025-12-01T08:15:00Z WARNING temporalio.activity: Completing activity as failed "
        "(LookupError: no work item '01M8RBRQ' on this computer)")
