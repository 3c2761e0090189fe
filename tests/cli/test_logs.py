"""bees run prints the engine SDK's warnings in one line each, without a traceback."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bees_cli.cli.logs import PACKAGE_LOGGER, RUN_LOGGER, OneLine, run_lines
from tests.conftest import run_lines as without_prefix


@pytest.fixture(autouse=True)
def own_loggers() -> Iterator[None]:
    """Put bees run's loggers back as they were (run_lines configures them once)."""
    kept = {name: (list(logging.getLogger(name).handlers), logging.getLogger(name).level,
                   logging.getLogger(name).propagate) for name in (RUN_LOGGER, PACKAGE_LOGGER)}
    yield
    for name, (handlers, level, propagate) in kept.items():
        logger = logging.getLogger(name)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


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


def test_bees_run_says_each_line_with_utc_time_and_level(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_764_576_900.25)  # 2025-12-01T08:15:00Z
    logging.getLogger(RUN_LOGGER).handlers.clear()  # run_lines binds stderr as captured now
    say = run_lines()
    say("engine started at 127.0.0.1:7233")
    say("first\nsecond")
    assert capsys.readouterr().err.splitlines() == [
        "2025-12-01T08:15:00Z INFO engine started at 127.0.0.1:7233",
        "2025-12-01T08:15:00Z INFO first",
        "2025-12-01T08:15:00Z INFO second",
    ]
    say("stopped")
    assert without_prefix(capsys.readouterr().err) == ["stopped"]


def test_the_packages_news_reads_like_bees_runs_own_lines(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``held keys: …`` (a module logger's warning) and a fire's INFO line are ``UTC LEVEL
    message`` lines, like bees run's own, without the module's name."""
    monkeypatch.setattr(time, "time", lambda: 1_764_576_900.25)  # 2025-12-01T08:15:00Z
    for name in (RUN_LOGGER, PACKAGE_LOGGER):
        logging.getLogger(name).handlers.clear()
    run_lines()
    fires = logging.getLogger("bees_cli.schedules.fires")
    fires.warning("held keys: %s", "cannot reach Bees Cloud")
    fires.info("schedule %s fired", "monday-report")
    fires.debug("not shown")
    assert capsys.readouterr().err.splitlines() == [
        "2025-12-01T08:15:00Z WARNING held keys: cannot reach Bees Cloud",
        "2025-12-01T08:15:00Z INFO schedule monday-report fired",
    ]


@pytest.fixture
def sdk_logger() -> Iterator[logging.Logger]:
    """The ``temporalio`` logger, put back as it was after the test."""
    sdk = logging.getLogger("temporalio")
    handlers, propagate = list(sdk.handlers), sdk.propagate
    yield sdk
    for handler in sdk.handlers:
        if handler not in handlers:
            handler.close()
    sdk.handlers[:] = handlers
    sdk.propagate = propagate


def _failed_activity(sdk: logging.Logger, error: BaseException, attempt: int) -> None:
    """Log an activity failure as temporalio's worker does (message, exc_info, extras)."""
    details = {"activity_id": "2", "activity_type": "model_call", "attempt": attempt,
               "workflow_id": "01M8RBRQ"}
    try:
        raise error
    except type(error):
        sdk.getChild("activity").warning(
            "Completing activity as failed (%s)", details, exc_info=True,
            extra={"__temporal_error_identifier": "ActivityFailure",
                   "temporal_activity": details})


def test_an_activity_failure_goes_to_the_log_file_and_one_readable_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], sdk_logger: logging.Logger,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model call's failure is said by the stage itself (``Draft of ITEM: cannot reach …,
    retrying``): the SDK's raw ``Completing activity as failed ({…})`` line goes to the run's
    log file only; another application error is one line naming the activity and the item."""
    from temporalio.exceptions import ApplicationError

    from bees_cli.cli.logs import engine_logs_in_one_line

    monkeypatch.delenv("BEES_DEBUG", raising=False)
    log = tmp_path / "run.log"
    engine_logs_in_one_line(log)
    _failed_activity(sdk_logger, ApplicationError(
        "cannot reach http://127.0.0.1:11434/v1/chat/completions: ConnectError",
        type="ModelUnavailable"), attempt=4)
    assert capsys.readouterr().err == ""
    _failed_activity(sdk_logger, ApplicationError("the agent exited 3\nmore", type="StageFailed"),
                     attempt=2)
    assert without_prefix(capsys.readouterr().err) == [
        f"model_call of 01M8RBRQ failed on try 2: the agent exited 3 (details in {log})"]
    written = log.read_text()
    assert written.count("Completing activity as failed ({'activity_id': '2'") == 2
    assert "ModelUnavailable: cannot reach" in written
    assert "Traceback" in written
