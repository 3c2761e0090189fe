"""Opening ``record.db``: read-only when this computer's home cannot be written, and a disk
that is read-only or full as one line naming the file (issue 12, point 7).

Every connection to the record goes through :func:`opened` (the local record, the fire log,
the shared record). When the file or its folder cannot be written (a read-only mount, a
home owned by someone else) or its disk is full, the file is opened with ``mode=ro``, so
reading commands such as ``bees status`` work; a write then fails as
:class:`~bees_cli.errors.DiskError`, never with a traceback. Without its ``-wal`` and
``-shm`` files, SQLite cannot open a WAL file read-only in a folder it cannot write unless
it is told the file is ``immutable`` (then there is no WAL content to miss: the last writer
checkpointed it when it closed).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bees_cli.errors import BeesError, DiskError

BUSY_TIMEOUT = 30.0
"""Seconds a connection waits for another writer's lock before it fails."""

SQLITE_BUSY = 5
"""SQLite's result code for a lock it could not take (``sqlite_errorcode & 0xff``)."""

SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 8, 10, 13, 14
"""SQLite's primary result codes that mean the disk, not the data (``sqlite_errorcode & 0xff``)."""

_DISK_WHY: dict[int, str] = {
    SQLITE_READONLY: "it is read-only here",
    SQLITE_IOERR: "the disk failed to write it (disk I/O error)",
    SQLITE_FULL: "the disk is full",
    SQLITE_CANTOPEN: "it cannot be opened or created (is its folder read-only?)",
}


FULL_BELOW = 128 * 1024
"""Bytes: a disk with less free space than this is full for the record (SQLite needs 32 KiB
for the ``-shm`` file and a few pages of ``-wal`` for the smallest write)."""


def disk_full(folder: Path) -> bool:
    """Return True when the disk of ``folder`` has less than :data:`FULL_BELOW` bytes free
    for this user."""
    import shutil

    try:
        return shutil.disk_usage(folder).free < FULL_BELOW
    except OSError:
        return False


def read_only(path: Path) -> bool:
    """Return True when the record ``path`` exists but this process cannot write it: the file
    or its folder is read-only (a read-only mount, a home owned by someone else), or its disk
    is full (:func:`disk_full`)."""
    if not path.exists():
        return False
    writable = os.access(path.parent, os.W_OK) and os.access(path, os.W_OK)
    return not writable or disk_full(path.parent)


def use_wal(db: sqlite3.Connection, *, wait: float = BUSY_TIMEOUT,
            sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic) -> None:
    """Put the record ``db`` in WAL mode (a no-op when it is already).

    Switching an old file from its rollback journal takes the exclusive lock from a shared
    one; when two connections switch at once, SQLite fails one of them at once with
    ``SQLITE_BUSY`` instead of waiting (it would deadlock), so the busy timeout does not
    help. The switch is tried again every 50 ms for up to ``wait`` s.

    Raises:
        sqlite3.OperationalError: still locked after ``wait`` s, or any other error.
    """
    deadline = clock() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            code = int(getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
            if code != SQLITE_BUSY or clock() >= deadline:
                raise
        sleep(0.05)


def connect(path: Path, *, any_thread: bool = False) -> sqlite3.Connection:
    """Open an autocommit connection to ``path``: read-only when :func:`read_only` says so.

    Args:
        path: the record file.
        any_thread: the connection may be closed from another thread than the one that
            opened it (a held connection, :mod:`bees_cli.record.held`); it is still used by
            one thread at a time.

    Raises:
        sqlite3.DatabaseError: as SQLite raised it (:func:`opened` maps it).
    """
    if not read_only(path):
        return sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None,
                               check_same_thread=not any_thread)
    # without its -wal and -shm files SQLite would have to make them to read a WAL file;
    # then nothing is in a -wal to miss, and the file may be read as immutable
    wal_present = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    options = "mode=ro" if wal_present else "mode=ro&immutable=1"
    return sqlite3.connect(f"{path.absolute().as_uri()}?{options}", uri=True,
                           timeout=BUSY_TIMEOUT, isolation_level=None,
                           check_same_thread=not any_thread)


def disk_error(path: Path, error: sqlite3.DatabaseError) -> DiskError | None:
    """Return the :class:`DiskError` that SQLite's ``error`` about ``path`` means (read-only,
    full, cannot open, I/O error), or None when it is about something else."""
    if not isinstance(error, sqlite3.OperationalError):
        return None
    code = int(getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
    why = _DISK_WHY.get(code)
    if why is None:
        return None
    full = code == SQLITE_FULL or disk_full(path.parent)
    return DiskError(path, _DISK_WHY[SQLITE_FULL] if full else why, full=full)


def open_connection(path: Path, *, corrupt: Callable[[sqlite3.DatabaseError], BeesError]
                    | None = None, any_thread: bool = False) -> sqlite3.Connection:
    """Open a connection to the record ``path`` with the record's settings: rows as
    ``sqlite3.Row``, a busy timeout of :data:`BUSY_TIMEOUT` s, ``synchronous=NORMAL``.

    Why NORMAL: in WAL mode a commit then survives a crash of Bees; only an OS crash or a
    power cut may lose the last commits, which the engine writes again on replay. What must
    survive a power cut (an intent, a held action's journal) is committed with
    ``synchronous=FULL`` (:meth:`~bees_cli.record.connected.Connected._durable`).

    Args:
        path: the record file.
        corrupt: what a file that is not a database becomes, or None to let it surface.
        any_thread: see :func:`connect`.

    Raises:
        DiskError: the disk is read-only or full, or the file cannot be opened.
        BeesError: ``corrupt``'s error.
    """
    with mapped(path, corrupt=corrupt):
        db = connect(path, any_thread=any_thread)
        try:
            db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
            db.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            db.close()
            raise
    db.row_factory = sqlite3.Row
    return db


@contextmanager
def mapped(path: Path, *, corrupt: Callable[[sqlite3.DatabaseError], BeesError] | None = None
           ) -> Iterator[None]:
    """Raise SQLite's errors about ``path`` inside as what they mean: a :class:`DiskError`
    (read-only, full, cannot open, I/O error), ``corrupt``'s error for a file that is not a
    database; any other error as it is."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        found = _mapped(path, error, corrupt)
        if found is None:
            raise
        raise found from None


@contextmanager
def opened(path: Path, *, corrupt: Callable[[sqlite3.DatabaseError], BeesError] | None = None
           ) -> Iterator[sqlite3.Connection]:
    """Open a short connection to the record ``path`` (:func:`open_connection`), closed after.

    Args:
        path: the record file.
        corrupt: what a file that is not a database becomes (exactly ``DatabaseError``), or
            None to let it surface.

    Raises:
        DiskError: the disk is read-only or full, or the file cannot be opened.
        BeesError: ``corrupt``'s error.
    """
    db = open_connection(path, corrupt=corrupt)
    try:
        with mapped(path, corrupt=corrupt):
            yield db
    finally:
        db.close()


def _mapped(path: Path, error: sqlite3.DatabaseError,
            corrupt: Callable[[sqlite3.DatabaseError], BeesError] | None) -> BeesError | None:
    found = disk_error(path, error)
    if found is not None:
        return found
    # exactly DatabaseError: not a database, or malformed (locks and constraints are
    # subclasses and stay what they are)
    if corrupt is not None and type(error) is sqlite3.DatabaseError:
        return corrupt(error)
    return None


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """Run the block in one ``BEGIN IMMEDIATE`` transaction of ``db``: committed at its end
    (also on a ``return`` inside it), rolled back when it (or the commit) raises.

    Raises:
        BaseException: whatever the block or the commit raised, after the rollback.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
