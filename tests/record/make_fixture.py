"""Write ``fixtures/record-v0.db``: a local record made by the code before migrations existed.

Run once, with the code of commit a60e404 (before ``record/schema.py``), from the repo root:
``python -m tests.record.make_fixture``. It drives only the public API of that time
(``LocalRecord``, ``FireLog``, ``SharedRecord``) with a fixed clock, so the file's values are
known exactly; ``test_migrations.py`` opens it with today's code and checks every row.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bees_cli.record.local as local
from bees_cli.record.fires import FireLog
from bees_cli.record.local import LocalRecord
from bees_cli.record.sync import SharedRecord

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "record-v0.db"

ITEM_A = "01JH3ZK4Q8W2M5N7P9R1T3V5X7"
ITEM_B = "01JH40AB12CD34EF56GH78JK90"
ITEM_C = "01JH41ZZ99YY88XX77WW66VV55"
TEAM_ITEM = "01JH50TEAMTEAMTEAMTEAMTEAM"


def _clock(times: list[str]) -> Any:
    """Return a ``now_utc`` stand-in giving ``times`` in turn (then the last one forever)."""
    left = list(times)

    def now() -> str:
        return left.pop(0) if len(left) > 1 else left[0]

    return now


def main() -> None:
    """Write the fixture (replacing an old one)."""
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{FIXTURE}{suffix}").unlink(missing_ok=True)
    local.now_utc = _clock([f"2025-01-06T09:00:{s:02d}Z" for s in range(60)])
    record = LocalRecord(FIXTURE)
    fires = FireLog(FIXTURE)
    shared = SharedRecord(FIXTURE)

    record.add_item(id=ITEM_A, process="weekly-report", title="Week 2", workspace="/ws",
                    run_folder="/runs/A", input='{"item_id": "A"}', stage="Draft")
    record.add_item(id=ITEM_B, process="weekly-report", title="Week 3", workspace="/ws",
                    run_folder="/runs/B", input='{"item_id": "B"}', stage="Draft")
    record.add_item(id=ITEM_C, process="mail", title="Reply", workspace="/ws",
                    run_folder="/runs/C", input='{"item_id": "C"}', stage="Send")
    record._add_event(ITEM_A, key="Draft:1:waiting:abc", kind="waiting", stage="Draft",
                     round=1, data={"reasons": ["folder reports is not linked here"],
                                    "pick": None})
    record.set_state(ITEM_A, status="waiting", stage="Draft",
                     reason="folder reports is not linked here")
    record._add_event(ITEM_A, key="Draft:1:pick", kind="pick", stage="Draft", round=1,
                     data={"pick": {"agent": "writer", "reason": "named on the item",
                                    "skipped": []}, "reviewed_by": None})
    record._add_event(ITEM_A, key="Draft:1:started:1", kind="stage_started", stage="Draft",
                     round=1, data={"agent": "writer", "attempt": 1, "comments": []})
    record._add_event(ITEM_A, key="Draft:1:1:stage_failed", kind="stage_failed", stage="Draft",
                     round=1, data={"agent": "writer", "attempt": 1, "reason": "exit 3",
                                    "verdict": None, "comments": [],
                                    "output_dir": "/runs/A/Draft", "stdout": "/l/1.stdout",
                                    "stderr": "/l/1.stderr", "exit_code": 3})
    record.set_state(ITEM_A, status="failed", stage="Draft", reason="exit 3", agent="writer")
    record._add_event(ITEM_B, key="done", kind="done", stage="Done")
    record.set_state(ITEM_B, status="done", stage="Done")
    record.set_state(ITEM_C, status="waiting for approval", stage="Send", agent="mailer",
                     reason="mail.send to bob")
    record.put_approval(ITEM_C, {"id": 1, "item_id": ITEM_C, "stage": "Send", "round": 1,
                                 "action": "mail.send", "kind": "send", "summary": "to bob",
                                 "status": "waiting"})
    record.add_journal(ITEM_C, {"stage": "Send", "round": 1, "attempt": 1,
                                "action": "mail.read", "kind": "read", "digest": "d1",
                                "exit_code": 0, "stdout": "ok", "at": "2025-01-06T09:01:00Z",
                                "request_id": None})
    record.acquire_slot(agent="mailer", item_id=ITEM_C, stage="Send", cap=1)
    record.queue_control(ITEM_C, "decide", {"approve": True, "who": "maya"})

    fires.mark_key("maya:weekly:2025-01-06T09:00", datetime(2025, 1, 6, 8, tzinfo=UTC),
                   datetime(2025, 1, 6, 8, 0, 1, tzinfo=UTC))
    fires.add_fire(schedule_id="weekly", key="maya:weekly:2025-01-06T09:00",
                   scheduled=datetime(2025, 1, 6, 8, tzinfo=UTC), local="2025-01-06T09:00",
                   handled=datetime(2025, 1, 6, 8, 0, 2, tzinfo=UTC), outcome="ran_here",
                   detail=ITEM_B, tries=1)
    fires.add_fire(schedule_id="weekly", key="maya:weekly:2025-01-13T09:00",
                   scheduled=datetime(2025, 1, 13, 8, tzinfo=UTC), local="2025-01-13T09:00",
                   handled=datetime(2025, 1, 13, 8, 1, 30, tzinfo=UTC), outcome="skipped",
                   detail="90", tries=0)
    fires.set_claim(ITEM_A, "owner", computer="maya-laptop", detail=None,
                    tried=datetime(2025, 1, 6, 9, 0, 5, tzinfo=UTC))

    entry = SimpleNamespace(item_id=TEAM_ITEM, fields={"title": "Theirs", "status": "running",
                                                       "stage": "Review"},
                            origin_time=datetime(2025, 1, 6, 9, 30, tzinfo=UTC),
                            machine_id="m-2", person="ana", seq=7)
    shared.apply([entry], 7)  # type: ignore[list-item]
    shared.set_meta(last_sync="2025-01-06T09:30:01.000Z", skew="0.250", error=None)
    # the outbox's origin times come from SQLite's clock: fix them so the file is known
    db = sqlite3.connect(FIXTURE, isolation_level=None)
    db.execute("UPDATE sync_outbox SET origin = '2025-01-06T09:00:00.000Z'")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()
