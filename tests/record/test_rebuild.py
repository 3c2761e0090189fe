"""A run's ``bees.state`` answer becomes the item's record row (issue 12, point 7), without an
engine: each run state's status, reason, agent and stage, and where a lost item restarts."""

from __future__ import annotations

import pytest
from ulid import ULID

from bees_cli.engine.models import ApprovalRequest, ItemInput, RunView
from bees_cli.engine.snapshot import EngineSnapshot, ProcessView, StageView
from bees_cli.record.states import Status
from bees_cli.usecases.recover import RUN_STATES, rebuilt_item, restart_stage
from bees_cli.utc import format_utc

ITEM = str(ULID())
SNAPSHOT = EngineSnapshot(process_name="weekly", workspace_root="/ws", process=ProcessView(
    stages=[StageView(name="Draft", kind="work"),
            StageView(name="Review", kind="review", reviews="Draft"),
            StageView(name="Send", kind="work", approval="required"),
            StageView(name="Done", kind="done")]))
INPUT = ItemInput(item_id=ITEM, title="Week 2", run_folder="/runs/x", snapshot=SNAPSHOT,
                  snapshot_digest="d" * 64)


def test_every_run_state_has_a_status() -> None:
    assert {s: str(v) for s, v in RUN_STATES.items()} == {
        "starting": "starting", "waiting": "waiting", "running": "running",
        "failed": "failed", "waiting for a person": "waiting for a person",
        "waiting for approval": "waiting for approval", "done": "done",
        "cancelled": "cancelled", "relinquished": "free"}


@pytest.mark.parametrize(("state", "stage", "reason", "status", "row_stage", "row_reason",
                          "agent"), [
    ("running", "Draft", None, Status.RUNNING, "Draft", None, "writer"),
    ("failed", "Draft", "exit 3", Status.FAILED, "Draft", "exit 3", "writer"),
    ("waiting", "Draft", None, Status.WAITING, "Draft", None, None),
    ("done", "Done", None, Status.DONE, "Done", None, None),
    ("relinquished", "Review", None, Status.FREE, "Draft", "restarts at Draft", None),
    ("starting", None, None, Status.STARTING, "Draft", None, None),
])
def test_a_run_state_becomes_its_row(state: str, stage: str | None, reason: str | None,
                                     status: Status, row_stage: str, row_reason: str | None,
                                     agent: str | None) -> None:
    view = RunView(item=INPUT, state=state, stage=stage, round=1, agent="writer",
                   reason=reason, restart="Draft" if state == "relinquished" else None)
    row = rebuilt_item(ITEM, view)
    assert row is not None
    assert (row.status, row.stage, row.reason, row.agent) == (status, row_stage, row_reason,
                                                             agent)
    assert (row.id, row.process, row.title, row.workspace, row.run_folder) == (
        ITEM, "weekly", "Week 2", "/ws", "/runs/x")
    assert row.created == format_utc(ULID.from_str(ITEM).datetime)
    assert ItemInput.model_validate_json(row.input) == INPUT


def test_approvals_and_journal_come_back_with_the_row() -> None:
    request = ApprovalRequest(id=1, item_id=ITEM, stage="Send", round=1, action="mail.send",
                              kind="send", summary="{}", asked_at="2025-01-06T09:00:00.000000Z")
    view = RunView(item=INPUT, state="waiting for approval", stage="Send", agent="sender",
                   reason=request.label, requests=[request])
    row = rebuilt_item(ITEM, view)
    assert row is not None
    assert (row.status, row.reason, row.agent) == (Status.WAITING_FOR_APPROVAL,
                                                   "mail.send {}", "sender")
    assert row.approvals == [request.model_dump(mode="json")]
    assert row.journal == []


def test_a_run_that_has_not_read_its_input_tells_nothing() -> None:
    assert rebuilt_item(ITEM, RunView(state="starting")) is None


def test_a_lost_item_restarts_at_its_stage_and_a_review_at_the_stage_it_reviews() -> None:
    assert [restart_stage(SNAPSHOT, s) for s in ("Draft", "Review", "Send", None)] == [
        "Draft", "Draft", "Send", "Draft"]
