"""The local record keeps one connection per thread (issue 16, point 2): still correct across
processes, one transaction per step, durable writes still fsynced, nothing left locked."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bees_cli.record import storage
from bees_cli.record.local import LocalRecord

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
OTHER = "01JH3QX5Z8KZ2W4M6N8P0R2T4W"


def _record(tmp_path: Path) -> LocalRecord:
    record = LocalRecord(tmp_path / "data" / "record.db")
    record.add_item(id=ITEM, process="p", title="Week 1", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    return record


def _other(record: LocalRecord) -> sqlite3.Connection:
    """Another connection that never waits for a lock (timeout 0): it fails if one is held."""
    return sqlite3.connect(record.path, timeout=0, isolation_level=None)


def test_one_connection_per_thread_is_opened_once(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    record = LocalRecord(tmp_path / "data" / "record.db")
    opened: list[str] = []
    real = storage.open_connection

    def counting(path: Path, **kwargs: object) -> sqlite3.Connection:
        opened.append(threading.current_thread().name)
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(storage, "open_connection", counting)
    record.add_item(id=ITEM, process="p", title="Week 1", workspace="/ws",
                    run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    for round_ in range(3):
        record._add_event(ITEM, key=f"k{round_}", kind="note")
        record.set_state(ITEM, status="running", agent=f"a{round_}")
        record.item(ITEM)
    helper = threading.Thread(target=record.events, args=(ITEM,), name="helper")
    helper.start()
    helper.join()
    record.events(ITEM)
    assert opened == ["MainThread", "helper"]


def test_a_kept_connection_sees_another_process_and_holds_no_lock(tmp_path: Path) -> None:
    record = _record(tmp_path)
    assert record.item(ITEM).title == "Week 1"  # this thread's connection is open now
    script = ("import sqlite3, sys\n"
              "db = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
              "db.execute(\"UPDATE items SET title = 'Week 2' WHERE id = ?\", (sys.argv[2],))\n")
    done = subprocess.run([sys.executable, "-c", script, str(record.path), ITEM],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    assert record.item(ITEM).title == "Week 2"


def test_a_step_commits_its_writes_together(tmp_path: Path) -> None:
    record = _record(tmp_path)
    other = _other(record)
    with record.step():
        record._add_event(ITEM, key="Draft:1:pick", kind="pick", stage="Draft", round=1)
        record.set_state(ITEM, status="running", stage="Draft", agent="writer")
        assert other.execute("SELECT status FROM items").fetchall() == [("pending",)]
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("UPDATE items SET title = 'x'")  # the step holds the write lock
    assert other.execute("SELECT status, agent FROM items").fetchall() == [
        ("running", "writer")]
    assert [e.kind for e in record.events(ITEM)] == ["created", "pick"]


def test_a_step_that_raises_writes_nothing_and_lets_go_of_the_lock(tmp_path: Path) -> None:
    record = _record(tmp_path)
    with pytest.raises(KeyError), record.step():
        record._add_event(ITEM, key="Draft:1:pick", kind="pick", stage="Draft", round=1)
        record.set_state(ITEM, status="running", stage="Draft", agent="writer")
        raise KeyError("stop")
    other = _other(record)
    other.execute("UPDATE items SET title = 'Week 2'")
    assert (record.item(ITEM).status, [e.kind for e in record.events(ITEM)]) == (
        "pending", ["created"])


def test_a_transaction_an_error_left_open_is_rolled_back(tmp_path: Path) -> None:
    record = _record(tmp_path)
    with pytest.raises(KeyError), record._connect() as db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("UPDATE items SET title = 'half' WHERE id = ?", (ITEM,))
        raise KeyError("stop")
    _other(record).execute("UPDATE items SET stage = 'Review'")  # no lock left behind
    assert (record.item(ITEM).title, record.item(ITEM).stage) == ("Week 1", "Review")


def test_an_intent_is_committed_with_synchronous_full_then_normal_again(tmp_path: Path) -> None:
    record = _record(tmp_path)
    said: list[str] = []
    with record._connect() as db:
        db.set_trace_callback(said.append)
    seq = record.add_intent(ITEM, stage="Send", action="mail.send", digest="d1", attempt=1,
                            at="2025-01-06T09:00:00.000000Z")
    record.end_intent(ITEM, seq, "result", None)
    with record._connect() as db:
        db.set_trace_callback(None)
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert said == [
        "PRAGMA synchronous=FULL",
        "INSERT INTO intents (item_id, stage, action, digest, attempt, at) VALUES"
        f" ('{ITEM}', 'Send', 'mail.send', 'd1', 1, '2025-01-06T09:00:00.000000Z')",
        "PRAGMA synchronous=NORMAL",
        "PRAGMA synchronous=FULL",
        "BEGIN IMMEDIATE",
        f"UPDATE intents SET ended = 'result' WHERE seq = {seq}",
        "COMMIT",
        "PRAGMA synchronous=NORMAL"]


def test_an_intent_inside_a_step_is_refused(tmp_path: Path) -> None:
    record = _record(tmp_path)
    with pytest.raises(sqlite3.OperationalError, match="inside a transaction"), record.step():
        record.add_intent(ITEM, stage="Send", action="mail.send", digest="d1", attempt=1,
                          at="2025-01-06T09:00:00.000000Z")
    assert record.open_intent(ITEM, "Send", "mail.send", "d1") is None


def test_a_file_replaced_by_another_one_is_opened_again(tmp_path: Path) -> None:
    record = _record(tmp_path)
    assert [r.id for r in record.items()] == [ITEM]
    record.path.rename(tmp_path / "record.db.bad")
    for side in ("-wal", "-shm"):
        Path(f"{record.path}{side}").unlink(missing_ok=True)
    newer = LocalRecord(record.path)  # another process makes a new file in its place
    newer.add_item(id=OTHER, process="p", title="t", workspace="/ws",
                   run_folder=str(tmp_path / "run"), input="{}", stage="Draft")
    assert ([r.id for r in record.items()], record.replaced) == ([OTHER], 0)
