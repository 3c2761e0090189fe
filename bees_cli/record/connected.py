"""The local record's connection, shared by its parts: this thread's, kept between calls."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from bees_cli.utc import format_utc, utc_now


def now_utc() -> str:
    """Return the current UTC time as :func:`bees_cli.utc.format_utc` writes it
    (``2025-01-06T09:00:00.000000Z``)."""
    return format_utc(utc_now())


class Connected:
    """What the parts of the local record share: the file and this thread's connection to it.

    :class:`~bees_cli.record.local.LocalRecord` provides :meth:`_connect`; the parts
    (:mod:`~bees_cli.record.approvals_journal`, :mod:`~bees_cli.record.slots_controls`) use it.
    """

    path: Path

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    @contextmanager
    def _durable(self) -> Iterator[sqlite3.Connection]:
        """Yield the connection with ``synchronous=FULL``: each commit inside is on disk
        when it returns (fsynced, survives a power cut); ``NORMAL`` again after.

        Never inside :meth:`~bees_cli.record.local.LocalRecord.step`: SQLite refuses to
        change the setting inside a transaction (``sqlite3.OperationalError``).
        """
        with self._connect() as db:
            db.execute("PRAGMA synchronous=FULL")
            try:
                yield db
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                db.execute("PRAGMA synchronous=NORMAL")


