"""Replay saved ``ItemWorkflow`` histories: a change that would break running items fails here.

The histories in ``histories/`` are real runs recorded on a dev server by
``record_histories.py`` (plain run, review send-back, failed stage then retry, approval held
then approved). Replay needs no server and runs no activity. If this fails after a change to
the workflow, the change is not safe for items already running: guard it with
``workflow.patched`` instead of regenerating the histories.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from bees_cli.engine.workflows import ItemWorkflow

HISTORIES = sorted((Path(__file__).resolve().parent / "histories").glob("*.json"))
EXPECTED = {"plain_work_review_done", "review_send_back", "failed_then_retry",
            "approval_held_then_approved"}


def test_every_saved_history_is_there() -> None:
    assert len(HISTORIES) == 4
    assert {path.stem for path in HISTORIES} == EXPECTED


@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
async def test_saved_history_replays(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
    replayer = Replayer(workflows=[ItemWorkflow], data_converter=pydantic_data_converter)
    await replayer.replay_workflow(history)
