"""Schedule fires and owner claims of this computer, kept in the local record file.

Tables (in ``record.db``; :mod:`bees_cli.record.schema` makes and migrates them)::

    fires       one row per fire handled here: schedule, key, scheduled instant (UTC),
                wall-clock time, when handled, outcome, detail, cloud tries
    fired_keys  the schedule keys this computer has handled: one key fires at most once
                per computer (a daily schedule's repeated hour fires once; an hourly
                one's second occurrence has a key of its own);
                ``held`` once the key is this machine's, ``item_id`` the one item it makes
    claims      the owner claim of each item made here: ``owner``, ``taken``,
                ``unreachable`` (retried every 15 s), ``no_cloud``, ``error``

Every time column holds :func:`bees_cli.utc.format_utc` text (migration 6 rewrote older
texts), so equal instants are equal text and text order is time order.

Outcomes (``fires.outcome``) and how ``bees schedules`` shows them::

    ran_here       ran here (ITEM)
    taken          taken by COMPUTER
    skipped        skipped (late by N s)
    not_eligible   not eligible (REASONS)
    gave_up        gave up (cloud unreachable after 5 tries)
    already_fired  already fired here
    missed         missed (this computer was asleep or bees run was down)
    failed         failed (MESSAGE)       the key was granted but the item could not be made
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from bees_cli.record import schema, storage
from bees_cli.record.storage import opened, read_only
from bees_cli.utc import format_utc, parse_utc


class FireOutcome(StrEnum):
    """How a fire handled here ended (``fires.outcome``; the module docstring shows each)."""

    RAN_HERE = "ran_here"
    TAKEN = "taken"
    SKIPPED = "skipped"
    NOT_ELIGIBLE = "not_eligible"
    GAVE_UP = "gave_up"
    ALREADY_FIRED = "already_fired"
    FAILED = "failed"
    MISSED = "missed"


class ClaimStatus(StrEnum):
    """The outcome of the latest owner claim of an item made here (``claims.status``)."""

    OWNER = "owner"
    TAKEN = "taken"
    UNREACHABLE = "unreachable"
    NO_CLOUD = "no_cloud"
    ERROR = "error"


OUTCOMES = tuple(FireOutcome)
"""Every fire outcome, in the module docstring's order."""


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    """Open a short autocommit connection to the record file (WAL, 30 s busy timeout; read-only
    when the file cannot be written here, see :func:`bees_cli.record.storage.opened`)."""
    with opened(path) as db:
        yield db


@dataclass(frozen=True)
class FireRow:
    """One fire handled on this computer (see the module docstring for outcomes).

    ``scheduled`` and ``handled`` are UTC times as :func:`bees_cli.utc.format_utc` writes
    them; ``local`` the wall-clock time in the schedule's zone (``2025-01-06T09:00``);
    ``tries`` the key requests sent.
    """

    schedule_id: str
    key: str
    scheduled: str
    local: str
    handled: str
    outcome: FireOutcome
    detail: str | None
    tries: int

    @property
    def text(self) -> str:
        """Return the outcome as ``bees schedules`` shows it, e.g. ``taken by maya-laptop``."""
        return outcome_text(self.outcome, self.detail)

    def to_json(self) -> dict[str, Any]:
        """Return the row as JSON, with ``text``."""
        return {"schedule": self.schedule_id, "key": self.key, "scheduled": self.scheduled,
                "local": self.local, "handled": self.handled, "outcome": str(self.outcome),
                "detail": self.detail, "tries": self.tries, "text": self.text}


def outcome_text(outcome: FireOutcome, detail: str | None) -> str:
    """Return the human text of a fire's outcome (module docstring)."""
    if outcome is FireOutcome.RAN_HERE:
        return f"ran here ({detail})"
    if outcome is FireOutcome.TAKEN:
        return f"taken by {detail}"
    if outcome is FireOutcome.SKIPPED:
        return f"skipped (late by {detail} s)"
    if outcome is FireOutcome.ALREADY_FIRED:
        return "already fired here"
    if outcome is FireOutcome.MISSED:
        return "missed (this computer was asleep or bees run was down)"
    return f"{outcome.value.replace('_', ' ')} ({detail})"


@dataclass(frozen=True)
class KeyRow:
    """The local row of one schedule key: ``held`` (UTC ISO) once this machine holds it,
    ``item_id`` the one item it makes, ``made`` whether that item is in the record."""

    key: str
    schedule_id: str | None
    workspace: str | None
    scheduled: str
    held: str | None
    item_id: str | None
    made: bool


_KEY_ROW = ("SELECT * FROM (SELECT k.key, k.schedule_id, k.workspace, k.scheduled, k.held,"
            " k.item_id, EXISTS (SELECT 1 FROM items i WHERE i.id = k.item_id) AS made"
            " FROM fired_keys k) AS k")


@dataclass(frozen=True)
class ClaimRow:
    """The owner claim of one item made here: ``status`` and when it was last ``tried`` (UTC)."""

    item_id: str
    status: ClaimStatus
    computer: str | None
    detail: str | None
    tried: str
    epoch: int | None = None
    """The owner generation Bees Cloud granted this machine (``owner``); None when not known
    (no cloud, not granted, or a claim noted by an older Bees)."""


class FireLog:
    """The fires, fired keys and claims tables of one record file.

    Args:
        path: the record database (``record.db``); the tables are created when missing.
        db: read through this connection instead (a read of several parts in one
            transaction, :meth:`~bees_cli.record.local.LocalRecord.reading`, whose record
            made the tables): no table is made, and it is only read.
    """

    def __init__(self, path: Path, *, db: sqlite3.Connection | None = None) -> None:
        self.path = path
        self._db = db
        if db is not None:
            return
        writable = not read_only(path)  # a read-only record is read as it is
        if writable:
            path.parent.mkdir(parents=True, exist_ok=True)
        with connect(path) as db:
            if writable:
                storage.use_wal(db)
            schema.upgrade(db, path)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """Yield the connection given to read through, else a short one."""
        if self._db is not None:
            yield self._db
            return
        with connect(self.path) as db:
            yield db

    # -- fires -----------------------------------------------------------------------------

    def mark_key(self, key: str, scheduled: datetime, now: datetime, *,
                 schedule_id: str | None = None, workspace: str | None = None) -> bool:
        """Note that this computer handles ``key`` for the instant ``scheduled``.

        Returns:
            True when the key is new here, or was noted for this same instant (a retried
            fire goes on); False when another instant already took it (a repeated hour).
        """
        with connect(self.path) as db:
            db.execute("INSERT OR IGNORE INTO fired_keys (key, scheduled, at, schedule_id,"
                       " workspace) VALUES (?, ?, ?, ?, ?)",
                       (key, format_utc(scheduled), format_utc(now), schedule_id, workspace))
            row = db.execute("SELECT scheduled FROM fired_keys WHERE key = ?", (key,)).fetchone()
        return parse_utc(row["scheduled"]) == scheduled

    def key(self, key: str) -> KeyRow | None:
        """Return the local row of schedule key ``key``, or None when it was never handled."""
        with connect(self.path) as db:
            row = db.execute(_KEY_ROW + " WHERE k.key = ?", (key,)).fetchone()
        return None if row is None else _key(row)

    def hold_key(self, key: str, now: datetime) -> None:
        """Note that this machine holds ``key`` (granted by Bees Cloud, or no cloud to ask);
        the first time is kept."""
        with connect(self.path) as db:
            db.execute("UPDATE fired_keys SET held = COALESCE(held, ?) WHERE key = ?",
                       (format_utc(now), key))

    def reserve_item(self, key: str, item_id: str) -> str:
        """Name the one item held key ``key`` makes: ``item_id`` unless one was named before.

        Returns:
            The key's item id (the earlier one when a retry or duplicate got there first).
        """
        with connect(self.path) as db:
            db.execute("UPDATE fired_keys SET item_id = COALESCE(item_id, ?) WHERE key = ?",
                       (item_id, key))
            row = db.execute("SELECT item_id FROM fired_keys WHERE key = ?", (key,)).fetchone()
        return str(row["item_id"])

    def held_without_item(self) -> list[KeyRow]:
        """Return the keys held here whose item is not in the record yet, oldest first (a
        crash between the grant and the making)."""
        with connect(self.path) as db:
            # text order is time order: every time here is format_utc text (module docstring)
            rows = db.execute(_KEY_ROW + " WHERE k.held IS NOT NULL AND k.schedule_id IS NOT"
                              " NULL AND NOT k.made ORDER BY k.scheduled").fetchall()
        return [_key(r) for r in rows]

    def last_scheduled(self, schedule_id: str) -> datetime | None:
        """Return the latest scheduled instant of a fire row of ``schedule_id``, or None."""
        with connect(self.path) as db:
            # MAX of text is the latest time: every time here is format_utc text
            row = db.execute("SELECT MAX(scheduled) AS last FROM fires WHERE schedule_id = ?",
                             (schedule_id,)).fetchone()
        return None if row["last"] is None else parse_utc(row["last"])

    def fire_row(self, schedule_id: str, scheduled: datetime) -> FireRow | None:
        """Return the row of the fire of ``schedule_id`` at the instant ``scheduled``, or None."""
        with connect(self.path) as db:
            # text equality is instant equality: every time here is format_utc text
            row = db.execute("SELECT schedule_id, key, scheduled, local, handled, outcome,"
                             " detail, tries FROM fires WHERE schedule_id = ? AND scheduled = ?",
                             (schedule_id, format_utc(scheduled))).fetchone()
        return None if row is None else FireRow(**{**dict(row),
                                                   "outcome": FireOutcome(row["outcome"])})

    def add_fire(self, *, schedule_id: str, key: str, scheduled: datetime, local: str,
                 handled: datetime, outcome: FireOutcome | str, detail: str | None,
                 tries: int = 0) -> FireRow:
        """Record how a fire ended (one row per schedule and instant; a retry replaces it).

        Raises:
            ValueError: ``outcome`` is not a :class:`FireOutcome` value.
        """
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown fire outcome {outcome!r}")
        row = FireRow(schedule_id, key, format_utc(scheduled), local, format_utc(handled),
                      FireOutcome(outcome), detail, tries)
        with connect(self.path) as db:
            db.execute(
                "INSERT OR REPLACE INTO fires (schedule_id, key, scheduled, local, handled,"
                " outcome, detail, tries) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (row.schedule_id, row.key, row.scheduled, row.local, row.handled,
                 str(row.outcome), row.detail, row.tries))
        return row

    def fires(self, schedule_id: str | None = None, *, limit: int | None = None,
              outcome: FireOutcome | None = None) -> list[FireRow]:
        """Return fires handled here, newest scheduled first (of one schedule, or all; of
        one ``outcome``, or all)."""
        query = ("SELECT schedule_id, key, scheduled, local, handled, outcome, detail, tries"
                 " FROM fires WHERE 1 = 1")
        args: list[Any] = []
        if schedule_id is not None:
            query += " AND schedule_id = ?"
            args.append(schedule_id)
        if outcome is not None:
            query += " AND outcome = ?"
            args.append(str(outcome))
        query += " ORDER BY scheduled DESC, seq DESC"  # format_utc text: text order is time order
        if limit is not None:
            query += " LIMIT ?"
            args.append(limit)
        with connect(self.path) as db:
            rows = db.execute(query, args).fetchall()
        return [FireRow(**{**dict(r), "outcome": FireOutcome(r["outcome"])}) for r in rows]

    # -- claims ----------------------------------------------------------------------------

    def set_claim(self, item_id: str, status: ClaimStatus | str, *, computer: str | None,
                  detail: str | None, tried: datetime, epoch: int | None = None) -> None:
        """Record the outcome of the latest owner claim of ``item_id`` made here (``epoch``:
        the owner generation granted, when known).

        Raises:
            ValueError: ``status`` is not a :class:`ClaimStatus` value.
        """
        status = ClaimStatus(status)
        with connect(self.path) as db:
            db.execute(
                "INSERT OR REPLACE INTO claims (item_id, status, computer, detail, tried, epoch)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (item_id, str(status), computer, detail, format_utc(tried), epoch))

    def claim(self, item_id: str) -> ClaimRow | None:
        """Return the latest claim of ``item_id`` made here, or None."""
        with self._reading() as db:
            row = db.execute("SELECT * FROM claims WHERE item_id = ?", (item_id,)).fetchone()
        return None if row is None else _claim(row)

    def claims(self, status: ClaimStatus | str) -> list[ClaimRow]:
        """Return every claim in ``status`` (e.g. ``unreachable``), oldest item first."""
        with connect(self.path) as db:
            rows = db.execute("SELECT * FROM claims WHERE status = ? ORDER BY item_id",
                              (str(ClaimStatus(status)),)).fetchall()
        return [_claim(r) for r in rows]


def _key(row: sqlite3.Row) -> KeyRow:
    return KeyRow(**{**dict(row), "made": bool(row["made"])})


def _claim(row: sqlite3.Row) -> ClaimRow:
    return ClaimRow(**{**dict(row), "status": ClaimStatus(row["status"])})
