"""A short SQLite connection per call to the local record, shared by its parts."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from bees_cli.utc import format_utc, utc_now


def now_utc() -> str:
    """Return the current UTC time as :func:`bees_cli.utc.format_utc` writes it
    (``2025-01-06T09:00:00.000000Z``)."""
    return format_utc(utc_now())


class Connected:
    """What the parts of the local record share: the file and a short connection to it.

    :class:`~bees_cli.record.local.LocalRecord` provides :meth:`_connect`; the parts
    (:mod:`~bees_cli.record.approvals_journal`, :mod:`~bees_cli.record.slots_controls`) use it.
    """

    path: Path

    def _connect(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError


