"""``record.db`` migrates: an unversioned file upgrades without loss; a newer one is refused."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bees_cli.errors import UserError
from bees_cli.record import schema
from bees_cli.record.fires import FireLog
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.record.sync import SharedRecord
from bees_cli.utc import format_utc, parse_utc
from tests.conftest import BeesRunner
from tests.record.make_fixture import FIXTURE, ITEM_A, ITEM_B, ITEM_C, TEAM_ITEM


def _dump(path: Path) -> dict[str, list[dict[str, Any]]]:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'"
        " ORDER BY name")]
    dump = {t: [dict(r) for r in db.execute(f"SELECT * FROM {t} ORDER BY rowid")]
            for t in tables}
    db.close()
    return dump


def _layout(path: Path) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(path)
    rows = db.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
                      " ORDER BY type, name").fetchall()
    db.close()
    return rows


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "record.db"
    shutil.copy(FIXTURE, path)
    return path


def test_the_fixture_is_unversioned(old_file: Path) -> None:
    db = sqlite3.connect(old_file)
    assert schema.version(db) == 0
    db.close()


def test_an_old_record_upgrades_with_every_row_intact(old_file: Path) -> None:
    before = _dump(old_file)
    record = LocalRecord(old_file)
    after = _dump(old_file)
    db = sqlite3.connect(old_file)
    assert schema.version(db) == schema.LATEST == 12
    db.close()
    # versions 4 and 5 only add the empty intents and sync_refused tables
    assert after.pop("intents") == []
    assert after.pop("sync_refused") == []
    assert after.pop("pieces") == []  # version 10: the empty pieces table
    assert sorted(after) == sorted(before)
    # version 6 rewrites every stored time as format_utc text; nothing else changes
    before = _as_format_utc(before)
    # version 2 only adds items.wait, version 8 items.created_on, version 11
    # items.model_retry (NULL on old rows); every other value is unchanged
    assert after["items"] == [{**row, "wait": None, "created_on": None, "model_retry": None}
                              for row in before["items"]]
    # version 8 adds events.origin and events.computer (NULL: recorded here)
    assert after["events"] == [{**row, "origin": None, "computer": None}
                               for row in before["events"]]
    # version 3 only adds fired_keys' schedule, workspace, held and item (NULL on old rows)
    new_key_columns = {"schedule_id": None, "workspace": None, "held": None, "item_id": None}
    assert after["fired_keys"] == [{**row, **new_key_columns} for row in before["fired_keys"]]
    # version 12 adds team_items.generation (0: pulled before generations) and claims.epoch
    # (NULL: not known)
    assert after["team_items"] == [{**row, "generation": 0} for row in before["team_items"]]
    assert after["claims"] == [{**row, "epoch": None} for row in before["claims"]]
    changed = ("items", "fired_keys", "events", "team_items", "claims")
    assert {t: rows for t, rows in after.items() if t not in changed} == {
        t: rows for t, rows in before.items() if t not in changed}
    assert [(r["key"], r["scheduled"], r["at"]) for r in after["fired_keys"]] == [
        ("maya:weekly:2025-01-06T09:00", "2025-01-06T08:00:00.000000Z",
         "2025-01-06T08:00:01.000000Z")]
    assert after["sync_outbox"] == [
        {"item_id": item, "origin": "2025-01-06T09:00:00.000000Z"}
        for item in (ITEM_A, ITEM_B, ITEM_C)]

    a = record.item(ITEM_A)
    assert (a.process, a.title, a.workspace, a.run_folder, a.stage, a.status, a.reason,
            a.agent, a.since, a.created, a.input, a.wait, a.created_on) == (
        "weekly-report", "Week 2", "/ws", "/runs/A", "Draft", Status.FAILED, "exit 3",
        "writer", "2025-01-06T09:00:08.000000Z", "2025-01-06T09:00:00.000000Z",
        '{"item_id": "A"}',
        WaitKind.PERSON, None)
    assert a.status_text == "failed: exit 3"
    assert [(r.id, r.status, r.wait) for r in record.items()] == [
        (ITEM_A, Status.FAILED, WaitKind.PERSON), (ITEM_B, Status.DONE, None),
        (ITEM_C, Status.WAITING_FOR_APPROVAL, WaitKind.APPROVAL)]
    assert [(e.seq, e.at, e.kind, e.stage, e.round, e.computer)
            for e in record.events(ITEM_A)] == [
        (1, "2025-01-06T09:00:00.000000Z", "created", None, None, None),
        (4, "2025-01-06T09:00:03.000000Z", "waiting", "Draft", 1, None),
        (5, "2025-01-06T09:00:05.000000Z", "pick", "Draft", 1, None),
        (6, "2025-01-06T09:00:06.000000Z", "stage_started", "Draft", 1, None),
        (7, "2025-01-06T09:00:07.000000Z", "stage_failed", "Draft", 1, None)]
    assert record.events(ITEM_A)[4].data == {
        "agent": "writer", "attempt": 1, "reason": "exit 3", "verdict": None, "comments": [],
        "output_dir": "/runs/A/Draft", "stdout": "/l/1.stdout", "stderr": "/l/1.stderr",
        "exit_code": 3}
    assert record.approvals(ITEM_C) == [{
        "id": 1, "item_id": ITEM_C, "stage": "Send", "round": 1, "action": "mail.send",
        "kind": "send", "summary": "to bob", "status": "waiting"}]
    assert [j["action"] for j in record.journal(ITEM_C)] == ["mail.read"]
    assert record.slots() == [{"agent": "mailer", "item_id": ITEM_C, "stage": "Send",
                               "requested": "2025-01-06T09:00:12.000000Z",
                               "granted": True}]
    assert record.queued_controls() == 1

    fires = FireLog(old_file)
    assert [(f.schedule_id, f.scheduled, f.outcome, f.detail, f.tries, f.text)
            for f in fires.fires()] == [
        ("weekly", "2025-01-13T08:00:00.000000Z", "skipped", "90", 0,
         "skipped (late by 90 s)"),
        ("weekly", "2025-01-06T08:00:00.000000Z", "ran_here", ITEM_B, 1,
         f"ran here ({ITEM_B})")]
    claim = fires.claim(ITEM_A)
    assert claim is not None
    assert (claim.status, claim.computer, claim.tried) == (
        "owner", "maya-laptop", "2025-01-06T09:00:05.000000Z")

    shared = SharedRecord(old_file)
    assert (shared.cursor, shared.skew, shared.meta("last_sync")) == (
        7, 0.25, "2025-01-06T09:30:01.000Z")
    [team] = shared.team()
    assert (team.item_id, team.fields, team.machine_id, team.person) == (
        TEAM_ITEM, {"title": "Theirs", "status": "running", "stage": "Review"}, "m-2", "ana")


def _as_format_utc(dump: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Return ``dump`` with every UTC column of migration 6 as format_utc text."""
    columns = dict(schema.UTC_COLUMNS)
    return {table: [{k: format_utc(parse_utc(v)) if k in columns.get(table, ()) and v else v
                     for k, v in row.items()} for row in rows]
            for table, rows in dump.items()}


def _version_5_file(path: Path) -> Path:
    """Return ``path`` as a record at version 5, with an old row of every text-compared
    time: an item, a fire, a held key, an outbox change (seconds and milliseconds)."""
    db = sqlite3.connect(path, isolation_level=None)
    schema.upgrade(db, path, schema.MIGRATIONS[:5])
    db.execute("INSERT INTO items (id, process, title, workspace, run_folder, status, since,"
               " created, input) VALUES ('I1', 'p', 't', '/ws', '/runs/I1', 'running',"
               " '2026-11-30T09:00:00Z', '2026-11-30T08:59:59Z', '{}')")
    db.execute("INSERT INTO fires (schedule_id, key, scheduled, local, handled, outcome)"
               " VALUES ('weekly', 'maya:weekly:2026-11-30T10:00', '2026-11-30T09:00:00.000Z',"
               " '2026-11-30T10:00', '2026-11-30T09:00:01.250Z', 'ran_here'),"
               " ('weekly', 'maya:weekly:2026-11-23T10:00', '2026-11-23T09:00:00.000Z',"
               " '2026-11-23T10:00', '2026-11-23T09:00:02.000Z', 'skipped')")
    db.execute("INSERT INTO fired_keys (key, scheduled, at, held) VALUES"
               " ('maya:weekly:2026-11-30T10:00', '2026-11-30T09:00:00.000Z',"
               " '2026-11-30T09:00:01.000Z', '2026-11-30T09:00:01.500Z')")
    db.execute("UPDATE sync_outbox SET origin = '2026-11-30T09:00:00.123Z'")
    db.execute("INSERT INTO sync_refused (item_id, origin, code, message, at) VALUES"
               " ('I1', '2026-11-30T09:00:00.123Z', 'refused', 'no', '2026-11-30T09:00:02Z')")
    db.close()
    return path


def test_version_6_rewrites_old_times_as_format_utc(tmp_path: Path) -> None:
    path = _version_5_file(tmp_path / "record.db")
    db = sqlite3.connect(path, isolation_level=None)
    assert schema.upgrade(db, path) == 5
    assert schema.version(db) == schema.LATEST
    assert db.execute("SELECT since, created FROM items").fetchall() == [
        ("2026-11-30T09:00:00.000000Z", "2026-11-30T08:59:59.000000Z")]
    assert db.execute("SELECT scheduled, handled FROM fires ORDER BY seq").fetchall() == [
        ("2026-11-30T09:00:00.000000Z", "2026-11-30T09:00:01.250000Z"),
        ("2026-11-23T09:00:00.000000Z", "2026-11-23T09:00:02.000000Z")]
    assert db.execute("SELECT scheduled, at, held FROM fired_keys").fetchall() == [
        ("2026-11-30T09:00:00.000000Z", "2026-11-30T09:00:01.000000Z",
         "2026-11-30T09:00:01.500000Z")]
    assert db.execute("SELECT item_id, origin FROM sync_outbox").fetchall() == [
        ("I1", "2026-11-30T09:00:00.123000Z")]
    assert db.execute("SELECT origin, at FROM sync_refused").fetchall() == [
        ("2026-11-30T09:00:00.123000Z", "2026-11-30T09:00:02.000000Z")]
    db.close()
    assert LocalRecord(path).item("I1").since == "2026-11-30T09:00:00.000000Z"


def test_text_compared_times_still_match_after_version_6(tmp_path: Path) -> None:
    path = _version_5_file(tmp_path / "record.db")
    LocalRecord(path)
    fires = FireLog(path)
    nine = datetime(2026, 11, 30, 9, tzinfo=UTC)
    row = fires.fire_row("weekly", nine)
    assert row is not None
    assert (row.key, row.scheduled, row.handled) == (
        "maya:weekly:2026-11-30T10:00", "2026-11-30T09:00:00.000000Z",
        "2026-11-30T09:00:01.250000Z")
    assert fires.last_scheduled("weekly") == nine
    assert [f.scheduled for f in fires.fires("weekly")] == [
        "2026-11-30T09:00:00.000000Z", "2026-11-23T09:00:00.000000Z"]
    # the same key for the same instant goes on; for another instant it does not
    assert fires.mark_key("maya:weekly:2026-11-30T10:00", nine, nine) is True
    assert fires.mark_key("maya:weekly:2026-11-30T10:00", nine.replace(hour=10), nine) is False
    shared = SharedRecord(path)
    changes = [(item, origin) for item, origin, _ in shared.outbox(_Here())]
    assert changes == [("I1", "2026-11-30T09:00:00.123000Z")]
    shared.sent(changes)
    assert shared.outbox(_Here()) == []


def test_the_triggers_write_format_utc_after_version_6(tmp_path: Path) -> None:
    path = _version_5_file(tmp_path / "record.db")
    record = LocalRecord(path)
    record.set_state("I1", status=Status.DONE, stage="Done")
    [(item, origin, _)] = SharedRecord(path).outbox(_Here())
    assert item == "I1"
    assert len(origin) == 27 and origin.endswith("000Z")
    assert format_utc(parse_utc(origin)) == origin


def test_an_upgraded_record_is_laid_out_like_a_new_one(old_file: Path, tmp_path: Path) -> None:
    LocalRecord(old_file)
    fresh = tmp_path / "fresh.db"
    LocalRecord(fresh)
    assert _layout(old_file) == _layout(fresh)


def test_the_triggers_still_fill_the_outbox_after_upgrade(old_file: Path) -> None:
    record = LocalRecord(old_file)
    db = sqlite3.connect(old_file)
    db.execute("DELETE FROM sync_outbox")
    db.commit()
    db.close()
    record.set_state(ITEM_B, status=Status.WAITING, reason="agent writer is busy",
                     wait=WaitKind.BUSY_AGENT)
    assert [i for i, _, _ in SharedRecord(old_file).outbox(_Here())] == [ITEM_B]
    row = record.item(ITEM_B)
    assert (row.status, row.wait, row.status_text) == (
        Status.WAITING, WaitKind.BUSY_AGENT, "waiting: agent writer is busy")


class _Here:
    computer, machine_id, person = "maya-laptop", "m-1", "maya"


def test_a_record_from_a_newer_bees_is_refused(old_file: Path) -> None:
    db = sqlite3.connect(old_file)
    db.execute(f"PRAGMA user_version = {schema.LATEST + 1}")
    db.close()
    with pytest.raises(UserError) as caught:
        LocalRecord(old_file)
    assert caught.value.message == (
        f"{old_file} was written by a newer Bees (record version {schema.LATEST + 1}; this "
        f"Bees reads up to {schema.LATEST})")
    assert caught.value.hint == (
        "upgrade Bees (pip install --upgrade bees-cli), or move the file aside "
        f"(mv {old_file} {old_file}.newer) and Bees starts an empty one")


def test_the_cli_says_so_without_a_traceback(bees: BeesRunner, bees_home: Path) -> None:
    path = bees_home / "data" / "record.db"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {schema.LATEST + 1}")
    db.close()
    done = bees("status")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == (
        f"error: {path} was written by a newer Bees (record version {schema.LATEST + 1}; this "
        f"Bees reads up to {schema.LATEST})")


def test_a_failing_step_leaves_the_file_as_it_was(old_file: Path) -> None:
    broken = (*schema.MIGRATIONS, schema.Migration(schema.LATEST + 1, "broken", (
        "ALTER TABLE items ADD COLUMN extra TEXT", "ALTER TABLE nowhere ADD COLUMN x TEXT")))
    before = _dump(old_file)
    db = sqlite3.connect(old_file, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        schema.upgrade(db, old_file, broken)
    assert schema.version(db) == 0
    db.close()
    assert _dump(old_file) == before  # not even versions 1 to LATEST were kept


def test_a_later_step_runs_once_on_an_upgraded_file(old_file: Path) -> None:
    LocalRecord(old_file)
    more = (*schema.MIGRATIONS, schema.Migration(schema.LATEST + 1, "notes", (
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",)))
    db = sqlite3.connect(old_file, isolation_level=None)
    assert schema.upgrade(db, old_file, more) == schema.LATEST
    assert schema.upgrade(db, old_file, more) == schema.LATEST + 1
    assert schema.version(db) == schema.LATEST + 1
    db.close()


def test_versions_are_numbered_one_by_one() -> None:
    assert [m.version for m in schema.MIGRATIONS] == list(range(1, len(schema.MIGRATIONS) + 1))


def test_processes_opening_an_old_file_at_once_migrate_it_once(old_file: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        records = list(pool.map(lambda _: LocalRecord(old_file), range(8)))
    assert len(records) == 8
    db = sqlite3.connect(old_file)
    assert schema.version(db) == schema.LATEST
    assert [r[1] for r in db.execute("PRAGMA table_info(items)")][-3:] == [
        "wait", "created_on", "model_retry"]
    db.close()


def test_item_show_reads_an_old_file(bees: BeesRunner, bees_home: Path) -> None:
    path = bees_home / "data" / "record.db"
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURE, path)
    done = bees("item", "show", ITEM_A[:8])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[3] == "status      failed: exit 3"
    assert lines[lines.index("history") + 1:] == [
        "  2025-01-06T09:00:00Z  created",
        "  2025-01-06T09:00:03Z  Draft round 1: waiting: folder reports is not linked here",
        "  2025-01-06T09:00:05Z  Draft round 1: picked writer: named on the item",
        "  2025-01-06T09:00:06Z  Draft round 1: started writer (attempt 1)",
        "  2025-01-06T09:00:07Z  Draft round 1: failed (attempt 1): exit 3"]
