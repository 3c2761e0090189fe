"""SQLite group commit: the writes queued while one transaction is open share its fsync.

Why: with ``synchronous=FULL`` every commit waits for an fsync (about 1.5 ms on the shared
2-core machine, ten times an insert; issue 16), and SQLite lets one writer in at a time,
so one commit per claim caps the claims per second at one per fsync.

How: the writers of a process already queue on one lock. Each takes the lock and runs
its work in a ``SAVEPOINT`` of the one open transaction (``BEGIN IMMEDIATE`` on a connection
kept for it). When no other writer is queued for the lock (or :data:`GROUP_MOST` are in),
it commits everything done so far; otherwise it leaves the commit to the next writer and
waits for it. A writer returns, and so answers, only after the commit that holds its work;
when that commit fails, every writer in it gets the error (nothing of theirs was committed).
A writer whose work raises rolls back to its savepoint: the others' work stays. The result
is the same as one transaction per writer run in the order they took the lock, so the race
guarantees do not change; only the fsyncs are shared.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection, Engine

GROUP_MOST = 64
"""Most writers one commit holds; the writer that fills a group commits it at once."""


class _Group:
    """The writers whose work is in the open transaction, and how its commit ended."""

    def __init__(self) -> None:
        self.members = 0
        self.done = False
        self.error: BaseException | None = None


class _Savepoint:
    """A savepoint made with plain SQL on the driver's connection (as SQLAlchemy's nested
    transaction: ``commit`` releases it, ``rollback`` undoes the work done in it)."""

    NAME = "bees_driver"

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        driver.execute(f"SAVEPOINT {self.NAME}")

    def commit(self) -> None:
        self.driver.execute(f"RELEASE {self.NAME}")

    def rollback(self) -> None:
        self.driver.execute(f"ROLLBACK TO {self.NAME}")
        self.driver.execute(f"RELEASE {self.NAME}")


class GroupCommit:
    """The write transactions of one SQLite database in one process, committed in groups.

    Args:
        engine: the SQLite engine (``BEGIN IMMEDIATE`` on begin, see ``engine.create_engine``).
        lock: the process's write lock.
    """

    def __init__(self, engine: Engine, lock: threading.Lock) -> None:
        self.engine = engine
        self.lock = lock
        self._done = threading.Condition(lock)
        self._queued = 0
        self._counting = threading.Lock()
        self._conn: Connection | None = None
        self._transaction: Any = None
        self._group: _Group | None = None
        self.commits = 0
        """Commits made so far (tests read it)."""

    def close(self) -> None:
        """Close the kept connection (no write may be running)."""
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """Yield the shared connection inside a savepoint; return once the work is committed.

        Raises:
            sqlalchemy.exc.OperationalError: the commit that held the work failed.
        """
        with self._writing(raw=False) as conn:
            yield conn

    @contextmanager
    def driver(self) -> Iterator[Any]:
        """As :meth:`transaction`, but yield the driver's connection (``sqlite3``) inside a
        savepoint made by plain SQL: for work that runs its own statements on the driver's
        cursor (:mod:`~bees_cli.cloud.server.sqlite_claims`), without SQLAlchemy's cost per
        savepoint.

        Raises:
            sqlalchemy.exc.OperationalError: the commit that held the work failed.
            sqlite3.Error: the savepoint could not be made or released.
        """
        with self._writing(raw=True) as driver:
            yield driver

    @contextmanager
    def _writing(self, *, raw: bool) -> Iterator[Any]:
        """Queue on the lock, run the work in a savepoint of the open transaction, settle the
        group, and return once it is committed (:meth:`transaction`, :meth:`driver`)."""
        with self._counting:
            self._queued += 1
        try:
            self.lock.acquire()
        finally:
            with self._counting:
                self._queued -= 1
        try:
            group, savepoint, conn = self._begin(raw=raw)
            try:
                yield conn
            except BaseException as failure:
                self._undo(savepoint, group, failure)
                raise
            try:
                savepoint.commit()
            except BaseException as error:
                self._fail(group, error)
                raise
            group.members += 1
            self._settle(group)
            while not group.done:
                self._done.wait()
        finally:
            self.lock.release()
        if group.error is not None:
            raise group.error

    def _begin(self, *, raw: bool = False) -> tuple[_Group, Any, Any]:
        """Open the transaction if none is, and a savepoint in it (the lock is held); with
        ``raw``, a plain SQL savepoint on the driver's connection, which is returned."""
        if self._group is None:
            if self._conn is None or self._conn.invalidated or self._conn.closed:
                self._conn = self.engine.connect()
            try:
                self._transaction = self._conn.begin()
            except BaseException:
                self._discard()
                raise
            self._group = _Group()
        group, conn = self._group, self._conn
        assert conn is not None
        try:
            if raw:
                driver = conn.connection.driver_connection
                return group, _Savepoint(driver), driver
            return group, conn.begin_nested(), conn
        except BaseException as error:
            self._fail(group, error)
            raise

    def _settle(self, group: _Group) -> None:
        """Commit now unless another writer is queued to add its work (the lock is held)."""
        if self._group is not group:
            return
        if group.members == 0:
            if self._queued == 0:  # nothing in it: end it, so other processes may write
                self._group, transaction = None, self._transaction
                self._transaction = None
                self._finish(group, None)
                transaction.rollback()
            return
        if self._queued == 0 or group.members >= GROUP_MOST:
            self._commit()

    def _undo(self, savepoint: Any, group: _Group, failure: BaseException) -> None:
        """Roll back one writer's work; the others' stays and is settled as usual."""
        try:
            savepoint.rollback()
            self._settle(group)
        except BaseException as error:
            self._fail(group, error)
            raise failure from error

    def _commit(self) -> None:
        """Commit the open transaction for every writer in it (the lock is held)."""
        group, transaction = self._group, self._transaction
        assert group is not None
        self._group, self._transaction = None, None
        error: BaseException | None = None
        try:
            transaction.commit()
            self.commits += 1
        except BaseException as failed:
            error = failed
            self._discard()
        self._finish(group, error)

    def _fail(self, group: _Group, error: BaseException) -> None:
        """The connection broke mid-transaction: fail every writer in the group (their
        work is lost with the transaction) and start afresh."""
        if self._group is group:
            self._group, self._transaction = None, None
        self._finish(group, error)
        self._discard()

    def _finish(self, group: _Group, error: BaseException | None) -> None:
        if not group.done:
            group.error = error
            group.done = True
            self._done.notify_all()

    def _discard(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()
            finally:
                self._conn = None
