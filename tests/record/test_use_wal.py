"""The switch of an old record to WAL is tried again when SQLite refuses it at once (two
connections switching together: one is failed with ``SQLITE_BUSY`` rather than deadlock)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bees_cli.record.storage import use_wal


class Refusing:
    """A connection whose first ``refusals`` WAL switches fail as SQLite's deadlock does."""

    def __init__(self, refusals: int, code: int = 5) -> None:
        self.refusals, self.code, self.tries = refusals, code, 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode=WAL"
        self.tries += 1
        if self.tries <= self.refusals:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = self.code  # type: ignore[attr-defined]
            raise error


def test_a_switch_refused_at_once_is_tried_again() -> None:
    db, slept = Refusing(3), []
    use_wal(db, sleep=slept.append, clock=lambda: 0.0)  # type: ignore[arg-type]
    assert (db.tries, slept) == (4, [0.05, 0.05, 0.05])


def test_a_lock_held_past_the_wait_is_raised() -> None:
    db, now = Refusing(100), iter([0.0, 0.0, 1.0, 2.0, 30.0])
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        use_wal(db, sleep=lambda _: None, clock=lambda: next(now))  # type: ignore[arg-type]
    assert db.tries == 4


def test_another_error_is_not_tried_again() -> None:
    db = Refusing(1, code=8)  # SQLITE_READONLY
    with pytest.raises(sqlite3.OperationalError):
        use_wal(db, sleep=lambda _: None)  # type: ignore[arg-type]
    assert db.tries == 1


def test_a_real_file_ends_in_wal(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    use_wal(db)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()
