"""SQLite group commit: writers queued behind one share its commit, each answers only after
the commit that holds its work, and one writer's failure loses no one else's work."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from bees_cli.cloud.server.engine import Database
from tests.support.wait import until_sync

TABLE = sa.Table("t", sa.MetaData(), sa.Column("k", sa.String, primary_key=True))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'group.db'}")
    TABLE.create(db.engine)
    yield db
    db.close()


def committed(db: Database) -> list[str]:
    """The keys another connection sees (committed ones only)."""
    path = db.engine.url.database
    assert path
    with sqlite3.connect(path) as conn:
        return sorted(k for (k,) in conn.execute("SELECT k FROM t"))


class Writers:
    """Writers in threads; ``first`` holds the lock inside its work until released."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.hold = threading.Event()
        self.seen: dict[str, list[str] | BaseException] = {}
        self.threads: list[threading.Thread] = []

    def start(self, key: str, *, wait: bool = False, fail: bool = False) -> None:
        def run() -> None:
            try:
                with self.db.transaction() as conn:
                    conn.execute(TABLE.insert().values(k=key))
                    if wait:
                        self.hold.wait(10)
                    if fail:
                        raise RuntimeError(f"{key} failed")
            except BaseException as error:  # noqa: BLE001 - recorded for the test
                self.seen[key] = error
                return
            self.seen[key] = committed(self.db)  # what is committed when it returns

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10)


def test_writers_queued_behind_one_share_its_commit(db: Database) -> None:
    groups = db._groups
    assert groups is not None
    writers = Writers(db)
    writers.start("a", wait=True)
    until_sync(lambda: groups._group is not None and groups._conn is not None)
    writers.start("b")
    writers.start("c")
    until_sync(lambda: groups._queued == 2)
    writers.hold.set()
    writers.join()
    assert groups.commits == 1
    # Each writer returned after the one commit that holds all three.
    assert writers.seen == {"a": ["a", "b", "c"], "b": ["a", "b", "c"], "c": ["a", "b", "c"]}
    # Alone, a writer commits at once.
    with db.transaction() as conn:
        conn.execute(TABLE.insert().values(k="d"))
    assert (groups.commits, committed(db)) == (2, ["a", "b", "c", "d"])


def test_a_failing_writer_loses_only_its_own_work(db: Database) -> None:
    groups = db._groups
    assert groups is not None
    writers = Writers(db)
    writers.start("a", wait=True)
    until_sync(lambda: groups._group is not None and groups._conn is not None)
    writers.start("b", fail=True)
    until_sync(lambda: groups._queued == 1)
    writers.start("c")
    until_sync(lambda: groups._queued == 2)
    writers.hold.set()
    writers.join()
    assert isinstance(writers.seen["b"], RuntimeError)
    assert (writers.seen["a"], writers.seen["c"]) == (["a", "c"], ["a", "c"])
    assert (groups.commits, committed(db)) == (1, ["a", "c"])


def test_a_lone_failing_writer_leaves_no_transaction_open(db: Database) -> None:
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute(TABLE.insert().values(k="x"))
        raise RuntimeError("x failed")
    # Another process can write at once: no write transaction was left open.
    path = db.engine.url.database
    assert path
    with sqlite3.connect(path, timeout=0) as other:
        other.execute("INSERT INTO t (k) VALUES ('y')")
    assert committed(db) == ["y"]


def test_a_failed_commit_fails_every_writer_in_it(db: Database) -> None:
    groups = db._groups
    assert groups is not None

    def refuse(_conn: object) -> None:
        raise sa.exc.OperationalError("COMMIT", {}, Exception("disk I/O error"))

    writers = Writers(db)
    writers.start("a", wait=True)
    until_sync(lambda: groups._group is not None and groups._conn is not None)
    writers.start("b")
    until_sync(lambda: groups._queued == 1)
    sa.event.listen(db.engine, "commit", refuse)
    writers.hold.set()
    writers.join()
    sa.event.remove(db.engine, "commit", refuse)
    assert isinstance(writers.seen["a"], sa.exc.OperationalError)
    assert isinstance(writers.seen["b"], sa.exc.OperationalError)
    assert committed(db) == []
    with db.transaction() as conn:  # a fresh connection and transaction next time
        conn.execute(TABLE.insert().values(k="c"))
    assert committed(db) == ["c"]
