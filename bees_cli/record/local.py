"""The local record: this computer's work items and their history, SQLite (WAL) in the data dir.

Written by ``bees item create`` and by the engine's activities; read by ``bees status`` and
``bees item show`` without touching Temporal, so they answer in milliseconds.

Tables::

    items   one row per work item: id, process, title, stage, status, reason, agent, since, …
    events  its history: one row per fact (a pick, a stage start or end, a review verdict,
            a wait); ``key`` is unique per item, so an activity that is retried writes a fact
            once.

Statuses (``items.status``): ``pending`` (recorded, its run not started yet: no engine),
``starting`` (its run was started, no stage yet), ``waiting`` (eligibility failed; ``reason``
says why), ``running``, ``failed`` (``reason``), ``waiting for a person`` (``reason``),
``done``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bees_cli.errors import NotFound

ACTIVE_STATUSES: frozenset[str] = frozenset({"pending", "starting", "running"})
"""Statuses that keep ``bees run --exit-when-idle`` running: work is under way or about to be."""

END_STATUSES: frozenset[str] = frozenset({"done", "failed", "waiting for a person"})
"""Statuses where an item stops until a person acts (or forever, for ``done``)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY,
    process TEXT NOT NULL,
    title TEXT NOT NULL,
    workspace TEXT NOT NULL,
    run_folder TEXT NOT NULL,
    stage TEXT,
    status TEXT NOT NULL,
    reason TEXT,
    agent TEXT,
    since TEXT NOT NULL,
    created TEXT NOT NULL,
    input TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL REFERENCES items(id),
    key TEXT NOT NULL,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    stage TEXT,
    round INTEGER,
    data TEXT NOT NULL,
    UNIQUE (item_id, key)
);
"""


def now_utc() -> str:
    """Return the current UTC time as ISO 8601 with seconds (``2025-01-06T09:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ItemRow:
    """One work item as the local record holds it (see the module docstring for statuses).

    ``input`` is the JSON of the run's workflow input (snapshot included), kept so
    ``bees run`` can start a pending item.
    """

    id: str
    process: str
    title: str
    workspace: str
    run_folder: str
    stage: str | None
    status: str
    reason: str | None
    agent: str | None
    since: str
    created: str
    input: str = field(repr=False)

    @property
    def status_text(self) -> str:
        """Return the status as users read it: ``waiting: REASON``, ``failed: REASON``…"""
        if self.status in ("waiting", "failed") and self.reason:
            return f"{self.status}: {self.reason}"
        if self.status == "pending":
            return "waiting: the engine is not running (bees run)"
        return self.status

    def to_json(self) -> dict[str, Any]:
        """Return the row as JSON (without the workflow input)."""
        return {
            "id": self.id,
            "process": self.process,
            "title": self.title,
            "workspace": self.workspace,
            "run_folder": self.run_folder,
            "stage": self.stage,
            "status": self.status,
            "status_text": self.status_text,
            "reason": self.reason,
            "agent": self.agent,
            "since": self.since,
            "created": self.created,
        }


@dataclass(frozen=True)
class Event:
    """One fact of an item's history: ``kind`` (``pick``, ``stage_started``, ``stage_finished``,
    ``stage_failed``, ``review``, ``waiting``, ``done``, …) with its ``data`` (a JSON object)."""

    seq: int
    at: str
    kind: str
    stage: str | None
    round: int | None
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """Return the event as JSON."""
        return {"at": self.at, "kind": self.kind, "stage": self.stage, "round": self.round,
                **self.data}


class LocalRecord:
    """The SQLite file of the local record; each call opens a short connection (safe across
    processes and threads).

    Args:
        path: the database file, e.g. ``data_dir() / "record.db"``; created when missing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout=30000")
            # WAL with NORMAL sync survives a crash of Bees; only an OS crash may lose the
            # last writes, which the engine writes again on replay
            db.execute("PRAGMA synchronous=NORMAL")
            db.row_factory = sqlite3.Row
            yield db
        finally:
            db.close()

    # -- writing ---------------------------------------------------------------------------

    def add_item(self, *, id: str, process: str, title: str, workspace: str, run_folder: str,
                 input: str, stage: str | None) -> None:
        """Record a new item as ``pending`` at ``stage`` (its first stage)."""
        at = now_utc()
        with self._connect() as db:
            db.execute(
                "INSERT INTO items (id, process, title, workspace, run_folder, stage, status,"
                " since, created, input) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                (id, process, title, workspace, run_folder, stage, at, at, input),
            )
            db.execute(
                "INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data)"
                " VALUES (?, 'created', ?, 'created', NULL, NULL, '{}')",
                (id, at),
            )

    def set_state(self, item_id: str, *, status: str, stage: str | None = None,
                  reason: str | None = None, agent: str | None = None,
                  only_if: frozenset[str] | None = None) -> None:
        """Set the item's status (and stage, reason, agent); ``since`` moves only when the
        status, stage, reason or agent changed. With ``only_if``, change nothing unless the
        current status is one of these."""
        at = now_utc()
        with self._connect() as db:
            row = db.execute(
                "SELECT stage, status, reason, agent FROM items WHERE id = ?", (item_id,)
            ).fetchone()
            if row is None:
                return
            if only_if is not None and row["status"] not in only_if:
                return
            new_stage = stage if stage is not None else row["stage"]
            if (row["stage"], row["status"], row["reason"], row["agent"]) == (
                new_stage, status, reason, agent
            ):
                return
            db.execute(
                "UPDATE items SET stage = ?, status = ?, reason = ?, agent = ?, since = ?"
                " WHERE id = ?",
                (new_stage, status, reason, agent, at, item_id),
            )

    def add_event(self, item_id: str, *, key: str, kind: str, stage: str | None = None,
                  round: int | None = None, data: dict[str, Any] | None = None) -> None:
        """Add a fact to the item's history; a second fact with the same ``key`` is ignored."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, key, now_utc(), kind, stage, round, json.dumps(data or {})),
            )

    # -- reading ---------------------------------------------------------------------------

    def items(self, *, statuses: frozenset[str] | None = None) -> list[ItemRow]:
        """Return every item (oldest first), or those whose status is in ``statuses``."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM items ORDER BY id").fetchall()
        found = [ItemRow(**dict(r)) for r in rows]
        if statuses is not None:
            found = [r for r in found if r.status in statuses]
        return found

    def item(self, item_id: str) -> ItemRow:
        """Return the item ``item_id``; a unique prefix of the id (at least 6 characters),
        case-insensitive, is enough.

        Raises:
            NotFound: no item, or the prefix matches several.
        """
        wanted = item_id.strip().upper()
        with self._connect() as db:
            row = db.execute("SELECT * FROM items WHERE id = ?", (wanted,)).fetchone()
            if row is None and len(wanted) >= 6:
                rows = db.execute(
                    "SELECT * FROM items WHERE id LIKE ? ORDER BY id", (wanted + "%",)
                ).fetchall()
                if len(rows) > 1:
                    raise NotFound(f"{item_id!r} matches {len(rows)} items",
                                   hint="give more of the id")
                row = rows[0] if rows else None
        if row is None:
            raise NotFound(f"no work item {item_id!r} on this computer",
                           hint="`bees status` lists this computer's items")
        return ItemRow(**dict(row))

    def events(self, item_id: str) -> list[Event]:
        """Return the item's history, oldest first."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT seq, at, kind, stage, round, data FROM events WHERE item_id = ?"
                " ORDER BY seq", (item_id,)
            ).fetchall()
        return [Event(r["seq"], r["at"], r["kind"], r["stage"], r["round"], json.loads(r["data"]))
                for r in rows]


def open_record() -> LocalRecord:
    """Return this computer's local record (``<data dir>/record.db``)."""
    from bees_cli.machine.paths import data_dir

    return LocalRecord(data_dir() / "record.db")


def human_since(iso: str, now: datetime | None = None) -> str:
    """Return how long ago ``iso`` (UTC, as :func:`now_utc` writes it) was: ``"5s ago"``,
    ``"2m ago"``, ``"3h ago"``, ``"4d ago"``."""
    then = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    if seconds < 86400:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"
