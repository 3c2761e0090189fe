"""One item of the local record with every part ``bees item show`` shows: a history with a
pick and a stage's logs, an approval request answered while ``bees run`` was down (a queued
decision), a journal entry, a piece, and a stage's log file in its run folder."""

from __future__ import annotations

from pathlib import Path

from bees_cli.record.events import parse_event
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece
from tests.record.test_events import SAMPLES

ITEM = "01JH2Q0000000000000000SH0W"


def fill(record: LocalRecord, run_folder: Path) -> None:
    """Write :data:`ITEM` and its parts into ``record`` (its run folder ``run_folder``)."""
    logs = run_folder / ".bees" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "Send-r1-a1.stdout").write_text("sent\n")
    record.add_item(id=ITEM, process="weekly-report", title="Week 2", workspace="/ws",
                    run_folder=str(run_folder), input="{}", stage="Send")
    for kind in ("pick", "stage_finished", "stage_failed"):
        data, stage, round_, _ = SAMPLES[kind]
        if kind == "stage_failed":  # a stage's logs: named by its end fact
            data = {**data, "stdout": str(logs / "Send-r1-a1.stdout"),
                    "stderr": str(logs / "Send-r1-a1.stderr")}
        record.add_fact(ITEM, parse_event(kind, data, at="", stage=stage, round=round_),
                        key=f"test:{kind}")
    record.set_state(ITEM, status="waiting for approval", stage="Send", agent="mailer",
                     reason="mail.send to team@example.com")
    record.put_approval(ITEM, {"id": 1, "item_id": ITEM, "stage": "Send", "round": 1,
                               "action": "mail.send", "kind": "send", "summary": "mail",
                               "status": "waiting", "asked_at": "2026-12-01T09:00:00Z"})
    record.add_journal(ITEM, {"stage": "Send", "round": 1, "attempt": 1,
                              "action": "mail.read", "kind": "read", "digest": "d1",
                              "exit_code": 0, "stdout": "ok", "at": "2026-12-01T09:01:00Z",
                              "request_id": None})
    record.put_piece(Piece(item_id=ITEM, piece="r1-a1-p1", stage="Send", round=1, attempt=1,
                           seq=1, depth=1, named="alpha", agent="alpha",
                           pick_reason="named by the caller", task="count", ask_digest="e",
                           status="finished", exit_code=0, workflow_id="w1",
                           folder=str(run_folder / "p1")))
    record.queue_decision(ITEM, "bees.decide", {"approve": True, "request_id": 1, "who": "maya",
                                           "at": "2026-12-01T09:02:00Z", "reason": None,
                                           "answer": None})


if __name__ == "__main__":  # python -m tests.usecases.item_fixture: fill this computer's
    from bees_cli.machine.computer import Computer

    here = Computer.load()
    fill(LocalRecord(here.record_path), here.data_dir / "runs" / "show")
