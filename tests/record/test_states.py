"""Statuses and wait kinds are closed sets with today's values; one function words a status."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.record.local import LocalRecord
from bees_cli.record.states import (
    ACTIVE_STATUSES,
    END_STATUSES,
    LOST_TEXT,
    NOT_STARTED_WAITS,
    RUN_STATUSES,
    SLOT_KEEPING_STATUSES,
    Status,
    WaitKind,
    status_text,
    wait_kind,
)
from bees_cli.record.sync import SharedRecord


def test_the_eleven_statuses_keep_their_stored_values() -> None:
    assert [s.value for s in Status] == [
        "pending", "starting", "waiting", "running", "waiting for approval", "failed",
        "waiting for a person", "done", "cancelled", "free", "lost"]
    assert Status("waiting for a person") is Status.WAITING_FOR_PERSON


def test_the_status_sets() -> None:
    assert ACTIVE_STATUSES == {Status.PENDING, Status.STARTING, Status.RUNNING}
    assert END_STATUSES == {Status.DONE, Status.FAILED, Status.WAITING_FOR_PERSON,
                            Status.WAITING_FOR_APPROVAL, Status.CANCELLED, Status.LOST}
    assert RUN_STATUSES == {Status.STARTING, Status.RUNNING, Status.WAITING,
                            Status.WAITING_FOR_APPROVAL, Status.FAILED,
                            Status.WAITING_FOR_PERSON}
    assert NOT_STARTED_WAITS == {WaitKind.OWNED_ELSEWHERE, WaitKind.CLAIM_PENDING}
    assert SLOT_KEEPING_STATUSES == {Status.STARTING, Status.RUNNING, Status.WAITING,
                                     Status.WAITING_FOR_APPROVAL}


@pytest.mark.parametrize(("status", "reason", "text"), [
    (Status.PENDING, None, "waiting: the engine is not running (bees run)"),
    (Status.STARTING, None, "starting"),
    (Status.WAITING, "agent writer is busy", "waiting: agent writer is busy"),
    (Status.WAITING, None, "waiting"),
    (Status.RUNNING, None, "running"),
    (Status.RUNNING, "retrying model call, try 2 of 5",
     "running: retrying model call, try 2 of 5"),
    (Status.WAITING, "rate limited by 127.0.0.1:8080 until 14:05",
     "waiting: rate limited by 127.0.0.1:8080 until 14:05"),
    (Status.WAITING_FOR_APPROVAL, "mail.send to bob", "waiting for approval: mail.send to bob"),
    (Status.FAILED, "exit 3", "failed: exit 3"),
    (Status.WAITING_FOR_PERSON, "Review asked for changes 3 times", "waiting for a person"),
    (Status.DONE, None, "done"),
    (Status.CANCELLED, None, "cancelled"),
    (Status.FREE, "restarts at Draft", "free, restarts at Draft"),
    (Status.FREE, None, "free"),
    (Status.LOST, LOST_TEXT, "lost: the engine's database was replaced"),
])
def test_status_text(status: Status, reason: str | None, text: str) -> None:
    assert status_text(status, reason) == text
    assert status_text(status.value, reason) == text


def test_wait_kinds() -> None:
    assert [k.value for k in WaitKind] == [
        "eligibility", "busy_agent", "engine_not_running", "owned_elsewhere", "claim_pending",
        "release_pending", "approval", "person", "model"]
    assert wait_kind(Status.WAITING, "owned_elsewhere") is WaitKind.OWNED_ELSEWHERE
    assert wait_kind(Status.WAITING, None) is None
    assert wait_kind(Status.PENDING, None) is WaitKind.ENGINE_NOT_RUNNING
    assert wait_kind(Status.FAILED, None) is WaitKind.PERSON
    assert wait_kind(Status.WAITING_FOR_APPROVAL, None) is WaitKind.APPROVAL
    assert wait_kind(Status.RUNNING, None) is None
    assert wait_kind(Status.LOST, None) is WaitKind.PERSON


class _Here:
    computer, machine_id, person = "maya-laptop", "m-1", "maya"


def test_the_shared_record_words_a_status_as_the_local_one_does(tmp_path: Path) -> None:
    path = tmp_path / "record.db"
    record = LocalRecord(path)
    cases = [(Status.PENDING, None), (Status.WAITING, "agent writer is busy"),
             (Status.FAILED, "exit 3"), (Status.FREE, "restarts at Draft"),
             (Status.RUNNING, None)]
    for n, _ in enumerate(cases):
        record.add_item(id=f"ITEM{n}", process="p", title="t", workspace="/ws",
                        run_folder="/r", input="{}", stage="Draft")
    for n, (status, reason) in enumerate(cases):
        if status is not Status.PENDING:
            record.set_state(f"ITEM{n}", status=status, reason=reason, agent="writer")
    outbox = SharedRecord(path).outbox(_Here())  # type: ignore[arg-type]
    sent = {item_id: fields["status_text"] for item_id, _, fields in outbox}
    assert sent == {r.id: r.status_text for r in record.items()}
    assert sent == {"ITEM0": "waiting: the engine is not running (bees run)",
                    "ITEM1": "waiting: agent writer is busy", "ITEM2": "failed: exit 3",
                    "ITEM3": "free, restarts at Draft", "ITEM4": "running"}


def test_set_state_refuses_an_unknown_status(tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id="ITEM", process="p", title="t", workspace="/ws", run_folder="/r",
                    input="{}", stage="Draft")
    with pytest.raises(ValueError):
        record.set_state("ITEM", status="snoozing")
    assert record.item("ITEM").status is Status.PENDING


def test_the_shared_record_carries_the_tokens_of_finished_and_failed_model_stages(
        tmp_path: Path) -> None:
    """Tokens in and out are summed from stage_finished and stage_failed facts; a fact from
    before the split carries only its total."""
    path = tmp_path / "record.db"
    record = LocalRecord(path)
    for item_id in ("MODEL", "COMMAND"):
        record.add_item(id=item_id, process="p", title="t", workspace="/ws", run_folder="/r",
                        input="{}", stage="Draft")
    record._add_event("MODEL", key="Draft:1:1:stage_finished", kind="stage_finished",
                     stage="Draft", round=1, data={"agent": "writer", "turns": 3, "tokens": 1200})
    record._add_event("MODEL", key="Review:1:1:stage_finished", kind="stage_finished",
                     stage="Review", round=1, data={"agent": "reviewer", "turns": 1, "tokens": 345,
                                                     "tokens_in": 300, "tokens_out": 45})
    record._add_event("MODEL", key="Send:1:1:failed", kind="stage_failed", stage="Send",
                     round=1, data={"reason": "agent sender: the turn limit of 4 model calls "
                                    "was reached", "tokens": 100, "tokens_in": 90,
                                    "tokens_out": 10})
    record._add_event("MODEL", key="Send:1:1:stage_started", kind="stage_started",
                     stage="Send", round=1, data={"agent": "sender", "attempt": 1, "tokens": 9})
    record._add_event("COMMAND", key="Draft:1:1:stage_finished", kind="stage_finished",
                     stage="Draft", round=1, data={"agent": "writer", "exit_code": 0})
    record.set_state("MODEL", status=Status.RUNNING, stage="Send", agent="sender")
    record.set_state("COMMAND", status=Status.RUNNING, stage="Review", agent="reviewer")
    outbox = {i: f for i, _, f in SharedRecord(path).outbox(_Here())}  # type: ignore[arg-type]
    assert (outbox["MODEL"]["tokens"], outbox["MODEL"]["tokens_in"],
            outbox["MODEL"]["tokens_out"]) == (1645, 390, 55)
    assert outbox["MODEL"]["summary"] == (
        "Send: running (sender); 1645 model tokens (390 in, 55 out)")
    assert "tokens" not in outbox["COMMAND"]
    assert outbox["COMMAND"]["summary"] == "Review: running (reviewer)"
