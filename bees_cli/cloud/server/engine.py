"""The Bees Cloud database connection: URLs, SQLite pragmas, PostgreSQL pool, transactions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bees_cli.cloud.server.group_commit import GroupCommit
from bees_cli.errors import UserError
from bees_cli.utc import to_us, utc_now

Clock = Callable[[], datetime]
"""Returns the server's current time as an aware ``datetime`` (UTC)."""


def default_sqlite_url() -> str:
    """Return the default database URL: ``cloud.db`` in this computer's data dir (SQLite)."""
    from bees_cli.machine.paths import data_dir

    return f"sqlite:///{data_dir() / 'cloud.db'}"


def create_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Return a SQLAlchemy engine for ``url`` set up for Bees Cloud.

    SQLite: WAL journal, 30 s busy timeout, ``synchronous=FULL`` and every
    transaction ``BEGIN IMMEDIATE`` unless the connection has the execution option
    ``bees_read`` (writers queue instead of failing on a lock upgrade).
    PostgreSQL (``postgresql+psycopg://``): a pool, READ COMMITTED; a dropped
    connection fails one request (503, which clients retry) and is replaced.

    Args:
        url: SQLAlchemy URL.
        pool_size: pooled connections kept open (as many again may overflow).

    Raises:
        UserError: the URL is not a SQLite or PostgreSQL URL, or the SQLite folder is missing.
    """
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            folder = Path(database).expanduser().resolve().parent
            if not folder.is_dir():
                raise UserError(f"{folder}: no such folder for the SQLite database")
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=pool_size,
            max_overflow=pool_size,
        )

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            read = conn.get_execution_options().get("bees_read", False)
            conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

        return engine
    if backend == "postgresql":
        return sa.create_engine(
            parsed, pool_size=pool_size, max_overflow=pool_size * 2, pool_recycle=3600
        )
    raise UserError(
        f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}",
        hint="use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB",
    )


class Database:
    """One database of Bees Cloud: its engine, its clock and its transactions; thread-safe.

    Args:
        url: SQLAlchemy URL (``sqlite:///…`` or ``postgresql+psycopg://…``).
        clock: returns the server's current time (UTC); injected by tests.

    Raises:
        UserError: unsupported URL.
    """

    def __init__(self, url: str, *, clock: Clock = utc_now) -> None:
        self.url = url
        self.clock = clock
        self.engine = create_engine(url)
        self.dialect = self.engine.dialect.name
        self._groups = (
            GroupCommit(self.engine, threading.Lock()) if self.dialect == "sqlite" else None
        )

    def close(self) -> None:
        """Close every pooled connection."""
        if self._groups is not None:
            self._groups.close()
        self.engine.dispose()

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Connection]:
        """Yield a connection inside one transaction, committed when the block ends.

        On SQLite, writers of this process queue on a lock first.
        Why: SQLite lets one writer in at a time; a Python lock makes the others wait
        in order instead of polling the file lock with growing sleeps. Their transactions
        are committed in groups (:mod:`~bees_cli.cloud.server.group_commit`): the block
        runs in a savepoint of a shared transaction, and this returns once it is committed.

        Args:
            write: False for a read-only transaction (SQLite ``BEGIN``, no lock).
        """
        if write and self._groups is not None:
            with self._groups.transaction() as conn:
                yield conn
            return
        with self.engine.connect() as conn:
            if not write:
                conn.execution_options(bees_read=True)
            with conn.begin():
                yield conn

    @contextmanager
    def driver_transaction(self) -> Iterator[Any]:
        """Yield SQLite's driver connection (``sqlite3``) inside a savepoint of the group
        commit, as :meth:`transaction` does for a write; return once it is committed.

        Why: work that runs its own statements on the driver's cursor (the owner claims of
        :mod:`~bees_cli.cloud.server.sqlite_claims`) without SQLAlchemy's cost per statement.

        Raises:
            ValueError: the database is not SQLite.
            sqlalchemy.exc.OperationalError: the commit that held the work failed.
        """
        if self._groups is None:
            raise ValueError("only SQLite has a driver transaction")
        with self._groups.driver() as driver:
            yield driver

    def insert(self, table: sa.Table) -> Any:
        """Return the dialect's ``INSERT`` for ``table`` (it has ``on_conflict_do_nothing``)."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects import postgresql

            return postgresql.insert(table)
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(table)

    def bytewise(self, column: Any) -> Any:
        """Return ``column`` compared by UTF-8 bytes, as Python and SQLite compare text.

        Why: PostgreSQL compares text by the database's collation (``en_US`` ignores
        punctuation at first), which would order machine ids unlike the computers do.
        """
        return column.collate("C") if self.dialect == "postgresql" else column

    def now_us(self) -> int:
        """Return the server clock as integer microseconds since the Unix epoch (UTC)."""
        return to_us(self.clock())
