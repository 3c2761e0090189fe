"""A request is answered once while ``bees run`` is down: a second queued answer is refused."""

from __future__ import annotations

from pathlib import Path

from bees_cli.record.local import LocalRecord
from tests.conftest import BeesRunner

ITEM = "01KBEESQVEVEDDEC1S10N00000"


def _record(path: Path) -> LocalRecord:
    record = LocalRecord(path)
    record.add_item(id=ITEM, process="weekly-report", title="T", workspace="/w",
                    run_folder="/r", input="{}", stage="Send")
    record.set_state(ITEM, status="waiting for approval", stage="Send",
                     reason="mail.send to team@example.com")
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "mail",
                               "status": "waiting", "asked_at": "2026-12-01T09:00:00Z"})
    record.put_approval(ITEM, {"id": 2, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "mail 2",
                               "status": "waiting", "asked_at": "2026-12-01T09:00:01Z"})
    return record


def test_a_second_answer_to_the_same_request_is_not_queued(tmp_path: Path) -> None:
    record = _record(tmp_path / "record.db")
    first = {"approve": True, "request_id": 1, "who": "maya", "answer": "again"}
    assert record.queue_decision(ITEM, "bees.decide", first) is None
    assert record.queue_decision(
        ITEM, "bees.decide", {"approve": True, "request_id": 1, "answer": "ran"}) == first
    assert record.queue_decision(ITEM, "bees.decide", {"approve": True, "request_id": None}
                                 ) == first
    other = {"approve": False, "request_id": 2, "who": "maya", "reason": "no"}
    assert record.queue_decision(ITEM, "bees.decide", other) is None
    assert [payload for _, _, _, payload in record.claim_controls()] == [first, other]


def test_approve_then_deny_while_bees_run_is_down_refuses_the_second(
        bees: BeesRunner, bees_home: Path) -> None:
    record = _record(bees_home / "data" / "record.db")
    approved = bees("approve", ITEM, "--action", "1")
    assert approved.returncode == 0, approved.stderr
    denied = bees("deny", ITEM, "--action", "1", "--reason", "changed my mind")
    assert denied.returncode == 3
    who = record.claim_controls()[0][3]["who"]
    assert denied.stderr.splitlines()[0] == (
        f"error: item {ITEM} is already answered (approved, by {who}): bees run delivers it"
        " when it starts")
