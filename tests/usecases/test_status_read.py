"""``bees status``'s read (shared by the app's item list) is one connection and one read
transaction: a consistent snapshot, and no connection set up again per part (issue 29,
point 1)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog
from bees_cli.record.sync import Refusal, SharedRecord
from bees_cli.usecases.bees import Bees
from bees_cli.usecases.items import status_now

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def item_id(n: int) -> str:
    return f"01READ{n:020d}"


@pytest.fixture
def bees(bees_home: Path) -> Iterator[Bees]:
    """A computer whose status read takes every path: a running item, one waiting for
    approval (a held request and a decision queued while ``bees run`` was down), one
    relinquished that another computer continued (a team row of a later generation), the
    team's items, a change Bees Cloud refused, a skewed clock and old team rows."""
    here = Bees(Computer.load(bees_home))
    record = here.record
    shared = SharedRecord(record.path)
    for n, status in enumerate(["running", "waiting for approval", "free", "done"]):
        record.add_item(id=item_id(n), process="p", title=f"T{n}", workspace="/ws",
                        run_folder=f"/runs/{n}", input="{}", stage="Draft")
        record.set_state(item_id(n), status=status)
    record.put_approval(item_id(1), {"id": 1, "stage": "Send", "status": "waiting",
                                     "action": "mail.send", "summary": "{}"})
    record.queue_decision(item_id(1), "bees.decide", {"approve": True, "request_id": 1,
                                                      "who": "maya", "at": "2026-12-02T08:00:00Z"})
    FireLog(record.path).set_claim(item_id(2), "owner", computer="here", detail=None,
                                   tried=NOW, epoch=1)
    db = sqlite3.connect(record.path)
    with db:
        for n, generation in ((2, 2), (7, 1), (8, 1)):
            db.execute(
                "INSERT INTO team_items (item_id, fields, generation, origin_us, machine_id,"
                " digest, person, seq) VALUES (?, ?, ?, ?, 'm2', 'd', 'maya@example.com', 1)",
                (item_id(n), json.dumps({"stage": "Draft", "status": "running", "process": "p",
                                         "title": f"T{n}", "computer": "maya-desktop"}),
                 generation, 1_000_000 * n))
    db.close()
    shared.refuse([Refusal(item_id=item_id(0), origin="2026-12-02T08:00:00.000000Z",
                           code="clock_ahead", message="ahead", offset_seconds=412.0,
                           at="2026-12-02T08:00:00.000000Z")])
    shared.set_meta(skew="-412.0", last_sync="2026-12-02T08:00:00.000000Z",
                    error="unreachable", error_code="cloud_unreachable")
    record.close()  # the read starts with no connection held on this thread
    yield here
    record.close()


def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Count every ``sqlite3.connect`` from now on (the list grows by its arguments)."""
    made: list[Any] = []
    real = sqlite3.connect

    def counted(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counted)
    return made


def test_the_status_read_opens_one_connection(bees: Bees,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    made = connects(monkeypatch)
    view = status_now(bees, limit=50, now=NOW)
    assert len(made) == 1
    # every part was read: the rows (the free item continued elsewhere shown as the team's),
    # the held approval answered by the queued decision, the warnings
    assert [(r["id"], r.get("team", False)) for r in view.rows] == [
        (item_id(0), False), (item_id(1), False), (item_id(3), False),
        (item_id(2), True), (item_id(7), True), (item_id(8), True)]
    assert view.rows[1]["wait"] == "engine_not_running" and view.held == {}
    assert [w.code for w in view.warnings] == ["clock_skew", "changes_refused",
                                               "team_rows_stale"]
    # the next read on this thread keeps that connection
    again = status_now(bees, limit=50, now=NOW)
    assert (len(made), again) == (1, view)


def test_the_status_read_is_one_snapshot(bees: Bees, monkeypatch: pytest.MonkeyPatch) -> None:
    # a sync's note committed by another process while the rows are read is not half seen:
    # the warnings are read as of the rows' moment
    from bees_cli.record import listing

    real = listing.local_page

    def then_a_sync_commits(*args: Any, **kwargs: Any) -> listing.LocalPage:
        page = real(*args, **kwargs)
        other = sqlite3.connect(bees.record.path)
        with other:
            other.execute("UPDATE sync_meta SET value = '0.0' WHERE key = 'skew'")
        other.close()
        return page

    monkeypatch.setattr(listing, "local_page", then_a_sync_commits)
    view = status_now(bees, limit=50, now=NOW)
    assert "clock_skew" in [w.code for w in view.warnings]
    monkeypatch.setattr(listing, "local_page", real)
    assert "clock_skew" not in [w.code for w in status_now(bees, limit=50, now=NOW).warnings]
