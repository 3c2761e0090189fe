"""The engine's database pin and the local record, without a server."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bees_cli.engine.server import pin_database, running_engine, short_version
from bees_cli.errors import NotFound
from bees_cli.record.local import LocalRecord, human_since

OLD = "temporal version 1.8.0 (Server 1.31.0, UI 2.50.0)"
NEW = "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)"


def test_a_new_engine_version_copies_the_database_aside(tmp_path: Path) -> None:
    (tmp_path / "temporal.db").write_bytes(b"old engine data")
    (tmp_path / "temporal.db-wal").write_bytes(b"wal")
    (tmp_path / "temporal.db.version").write_text(OLD + "\n")
    backup = pin_database(tmp_path, NEW)
    assert backup == tmp_path / "temporal.db.1.8.0.bak"
    assert backup.read_bytes() == b"old engine data"
    assert (tmp_path / "temporal.db.1.8.0.bak-wal").read_bytes() == b"wal"
    assert (tmp_path / "temporal.db").read_bytes() == b"old engine data"
    assert (tmp_path / "temporal.db.version").read_text() == NEW + "\n"
    assert pin_database(tmp_path, NEW) is None


def test_a_first_database_is_pinned_without_a_copy(tmp_path: Path) -> None:
    assert pin_database(tmp_path, NEW) is None
    assert (tmp_path / "temporal.db.version").read_text() == NEW + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["temporal.db.version"]
    assert short_version("weird build!") == "weird_build_"


def test_a_dead_engine_is_not_reused(tmp_path: Path) -> None:
    (tmp_path / "engine.json").write_text(
        '{"address": "127.0.0.1:1", "pid": 999999999, "version": "x"}')
    assert running_engine(tmp_path) is None


def test_record_states_events_and_prefixes(tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    record.add_item(id="01ABCDEFGH0000000000000001", process="p", title="T", workspace="/w",
                    run_folder="/r", input="{}", stage="Draft")
    record.add_item(id="01ABCDEFGH0000000000000002", process="p", title="T", workspace="/w",
                    run_folder="/r", input="{}", stage="Draft")
    record.set_state("01ABCDEFGH0000000000000001", status="waiting", reason="folder x: gone")
    row = record.item("01abcdefgh0000000000000001")
    assert (row.stage, row.status_text) == ("Draft", "waiting: folder x: gone")
    record.set_state(row.id, status="starting", only_if=frozenset({"pending"}))
    assert record.item(row.id).status == "waiting"
    record._add_event(row.id, key="k", kind="pick", data={"n": 1})
    record._add_event(row.id, key="k", kind="pick", data={"n": 2})
    assert [(e.kind, e.data) for e in record.events(row.id)] == [
        ("created", {}), ("pick", {"n": 1})]
    with pytest.raises(NotFound, match="matches 2 items"):
        record.item("01ABCDEFGH")
    with pytest.raises(NotFound, match="no work item 'nope'"):
        record.item("nope")


def test_human_since() -> None:
    now = datetime(2025, 1, 6, 9, 0, 0, tzinfo=UTC)
    assert human_since("2025-01-06T08:59:55Z", now) == "5s ago"
    assert human_since("2025-01-06T08:58:00Z", now) == "2m ago"
    assert human_since("2025-01-06T06:00:00Z", now) == "3h ago"
    assert human_since("2025-01-02T09:00:00Z", now) == "4d ago"
    assert human_since("2025-01-06T08:59:54.500000Z", now) == "5s ago"


def test_slots_first_come_first_served_reclaimed_and_freed_on_start(tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    for n in (1, 2, 3):
        record.add_item(id=f"0{n}", process="p", title="T", workspace="/w", run_folder="/r",
                        input="{}", stage="Work")
    record.set_state("01", status="running")
    record.set_state("02", status="waiting")
    assert record.acquire_slot(agent="a", item_id="01", stage="Work", cap=1) == (True, [], 0)
    assert record.acquire_slot(agent="a", item_id="02", stage="Work", cap=1) == (
        False, ["01"], 1)
    assert record.acquire_slot(agent="a", item_id="03", stage="Work", cap=1) == (
        False, ["01"], 2)
    # a restarted attempt of the holder reclaims its own slot; the queue keeps its order
    assert record.acquire_slot(agent="a", item_id="01", stage="Work", cap=1) == (True, [], 0)
    assert record.release_slot("01", "Work") == 1
    # the first waiter goes first, even when the second asks before it
    assert record.acquire_slot(agent="a", item_id="03", stage="Work", cap=1) == (
        False, [], 2)
    assert record.acquire_slot(agent="a", item_id="02", stage="Work", cap=1) == (True, [], 0)
    # `bees run` starting: 03 is not running (pending), so its queue place is freed
    assert record.free_stale_slots() == 1
    assert [(s["item_id"], s["granted"]) for s in record.slots("a")] == [("02", True)]
    record.set_state("02", status="failed", reason="x")
    assert record.free_stale_slots() == 1
    assert record.slots() == []


def test_journal_approvals_and_queued_decisions(tmp_path: Path) -> None:
    record = LocalRecord(tmp_path / "record.db")
    entry = {"stage": "Send", "round": 1, "attempt": 1, "action": "mail.send", "kind": "send",
             "digest": "d" * 64, "exit_code": 1, "stdout": "", "at": "t1", "request_id": None}
    record.add_journal("01", entry)
    record.add_journal("01", entry)
    assert record.journal_hit("01", "Send", "mail.send", "d" * 64) is None  # it failed
    record.add_journal("01", {**entry, "exit_code": 0, "at": "t2"})
    assert record.journal_hit("01", "Send", "mail.send", "d" * 64) == {
        **entry, "exit_code": 0, "at": "t2"}
    assert [j["at"] for j in record.journal("01")] == ["t1", "t2"]
    record.put_approval("01", {"id": 1, "stage": "Send", "status": "waiting"})
    record.put_approval("01", {"id": 1, "stage": "Send", "status": "approved"})
    assert record.approvals("01") == []
    assert record.approvals("01", status=None) == [
        {"id": 1, "stage": "Send", "status": "approved"}]
    first = record.queue_control("01", "bees.decide", {"approve": True})
    assert record.queued_controls() == 1
    assert record.claim_controls() == [(first, "01", "bees.decide", {"approve": True})]
    assert record.claim_controls() == []
    assert record.queued_controls() == 0
