"""One connection to ``record.db`` per thread, opened once and kept (issue 16, point 2).

Why: opening a connection for each call cost a stage five connects, and closing the last
connection of a WAL file checkpoints it (an fsync and a rewrite of ``-wal``) every time:
~14 ms a write against ~0.3 ms on a kept connection. A kept connection is still correct
across processes (``bees run`` beside CLI commands): the file is in WAL mode, each statement
(or :meth:`~bees_cli.record.local.LocalRecord.step`) is its own transaction and sees every
commit made before it began, and a writer waits for another's lock up to
:data:`~bees_cli.record.storage.BUSY_TIMEOUT` s (``BEGIN IMMEDIATE`` takes the lock before
reading, so two writers never deadlock on an upgrade).

A connection is opened again when the file is no longer the one it was opened on (moved
aside, deleted and made again: its device and inode changed) or the process forked. The
connections are closed when their :class:`HeldConnections` is collected, or at exit (the
last one out checkpoints the WAL, as a short connection did).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bees_cli.errors import BeesError
from bees_cli.record import storage

FileIdentity = tuple[int, int]
"""A file's ``(st_dev, st_ino)``: which file a path names now."""


def identity(path: Path) -> FileIdentity | None:
    """Return the identity of the file at ``path``, or None when there is none."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


@dataclass
class _Held:
    db: sqlite3.Connection
    file: FileIdentity | None
    pid: int


def _close_all(opened: list[sqlite3.Connection], lock: threading.Lock, pid: int) -> None:
    if os.getpid() != pid:  # a forked child never closes (nor checkpoints) its parent's
        return
    with lock:
        dbs = list(opened)
        opened.clear()
    for db in dbs:
        with contextlib.suppress(sqlite3.Error):
            db.close()


class HeldConnections:
    """This thread's connection to one record file, kept between calls.

    Args:
        path: the record file.
        corrupt: what a file that is not a database becomes (see
            :func:`~bees_cli.record.storage.mapped`).
    """

    def __init__(self, path: Path,
                 corrupt: Callable[[sqlite3.DatabaseError], BeesError] | None = None) -> None:
        self.path = path
        self._corrupt = corrupt
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[sqlite3.Connection] = []
        self._finalizer = weakref.finalize(self, _close_all, self._opened, self._lock,
                                           os.getpid())

    def get(self, file: FileIdentity | None) -> sqlite3.Connection:
        """Return this thread's connection, opened (again) when it has none, or when
        ``file`` (the path's :func:`identity` now) is not the file it was opened on, or
        in a forked child.

        Raises:
            DiskError: the disk is read-only or full, or the file cannot be opened.
            BeesError: ``corrupt``'s error.
        """
        held: _Held | None = getattr(self._local, "held", None)
        pid = os.getpid()
        if held is not None and held.pid == pid and held.file == file and file is not None:
            return held.db
        if held is not None:
            self.drop()
        db = storage.open_connection(self.path, corrupt=self._corrupt, any_thread=True)
        with self._lock:
            self._opened.append(db)
        self._local.held = _Held(db, identity(self.path) if file is None else file, pid)
        return db

    def drop(self) -> None:
        """Close this thread's connection (after an error, or when its file changed); the
        next :meth:`get` opens a new one."""
        held: _Held | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is None:
            return
        with self._lock:
            if held.db in self._opened:
                self._opened.remove(held.db)
        if held.pid == os.getpid():  # a forked child leaves its parent's connection alone
            with contextlib.suppress(sqlite3.Error):
                held.db.close()

    @property
    def step(self) -> sqlite3.Connection | None:
        """This thread's connection while it runs a step's transaction, else None."""
        found: sqlite3.Connection | None = getattr(self._local, "step", None)
        return found

    @step.setter
    def step(self, db: sqlite3.Connection | None) -> None:
        self._local.step = db

    def close(self) -> None:
        """Close every thread's connection (none may be in use)."""
        _close_all(self._opened, self._lock, os.getpid())
        self._local = threading.local()
