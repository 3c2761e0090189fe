"""Rows of the local record rebuilt after a loss (issue 12, point 7): an item whose run the
engine still has (the record was lost), an item whose run the engine lost.

The engine side (asking each run where its item is) is
:mod:`bees_cli.usecases.recover`; this module only writes what it is given.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from bees_cli.record import storage
from bees_cli.record.event_base import EventBase
from bees_cli.record.events import Created
from bees_cli.record.events_recovery import Lost, Recovered
from bees_cli.record.local import ItemRow, LocalRecord, now_utc
from bees_cli.record.reasons import read_reason
from bees_cli.record.states import LOST_TEXT, Status, WaitKind


@dataclass(frozen=True)
class RebuiltItem:
    """One item's row as its run tells it: the ``items`` columns, plus the approval requests
    (JSON of :class:`~bees_cli.engine.models.ApprovalRequest`) and journal entries (JSON of
    :class:`~bees_cli.engine.models.JournalEntry`) the run holds. ``created`` is UTC text
    (:func:`bees_cli.utc.format_utc`)."""

    id: str
    process: str
    title: str
    workspace: str
    run_folder: str
    input: str
    stage: str | None
    status: Status
    reason: str | None
    agent: str | None
    created: str
    wait: WaitKind | None = None
    approvals: list[dict[str, Any]] = field(default_factory=list)
    journal: list[dict[str, Any]] = field(default_factory=list)


def restore_item(record: LocalRecord, item: RebuiltItem) -> bool:
    """Write the row of ``item`` when the record has none, with its approval requests, its
    journal and two facts (``created`` at its creation time, ``recovered`` now), in one
    transaction.

    Returns:
        True when the row was written, False when the record already had one (nothing is
        changed then).

    Raises:
        DiskError: the record cannot be written here.
    """
    now = now_utc()
    with storage.opened(record.path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            cursor = db.execute(
                "INSERT OR IGNORE INTO items (id, process, title, workspace, run_folder, stage,"
                " status, reason, agent, wait, since, created, input)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (item.id, item.process, item.title, item.workspace, item.run_folder, item.stage,
                 str(item.status), item.reason, item.agent,
                 None if item.wait is None else str(item.wait), now, item.created, item.input))
            if cursor.rowcount == 0:
                db.execute("ROLLBACK")
                return False
            _fact(db, item.id, "created", item.created, Created())
            _fact(db, item.id, f"recovered:{now}", now, Recovered(
                stage=item.stage, status=str(item.status), requests=len(item.approvals),
                journal=len(item.journal)))
            for request in item.approvals:
                db.execute(
                    "INSERT OR REPLACE INTO approvals (item_id, id, stage, status, data)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (item.id, int(request["id"]), request["stage"], request["status"],
                     json.dumps(request)))
            for entry in item.journal:
                db.execute(
                    "INSERT OR IGNORE INTO journal (item_id, stage, action, digest, exit_code,"
                    " at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (item.id, entry["stage"], entry["action"], entry["digest"],
                     int(entry["exit_code"]), entry["at"], json.dumps(entry)))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return True


def mark_lost(record: LocalRecord, row: ItemRow) -> bool:
    """Mark item ``row`` ``lost`` at the stage it was at (the engine has no run of it): its
    waiting approval requests are closed (status ``lost``), its agent slots freed, and a
    ``lost`` fact says what it was. Nothing changes when its status moved meanwhile.

    Returns:
        True when it was marked.

    Raises:
        DiskError: the record cannot be written here.
    """
    now = now_utc()
    with storage.opened(record.path) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            cursor = db.execute(
                "UPDATE items SET status = ?, reason = ?, wait = NULL, model_retry = NULL,"
                " since = ?"
                " WHERE id = ? AND status = ? AND since = ?",
                (str(Status.LOST), LOST_TEXT, now, row.id, str(row.status), row.since))
            if cursor.rowcount == 0:
                db.execute("ROLLBACK")
                return False
            db.execute(
                "UPDATE approvals SET status = 'lost', data = json_set(data, '$.status', 'lost')"
                " WHERE item_id = ? AND status = 'waiting'", (row.id,))
            db.execute("DELETE FROM slots WHERE item_id = ?", (row.id,))
            _fact(db, row.id, f"lost:{now}", now, Lost(
                stage=row.stage, was=row.status_text, reason=read_reason(LOST_TEXT)))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return True


def _fact(db: sqlite3.Connection, item_id: str, key: str, at: str, fact: EventBase) -> None:
    """Add ``fact`` to the item's history inside the caller's transaction, stored as
    :meth:`~bees_cli.record.local.LocalRecord.add_fact` stores it."""
    db.execute("INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data)"
               " VALUES (?, ?, ?, ?, ?, ?, ?)", (item_id, key, at, fact.kind, fact.stage,
                                                 fact.round, json.dumps(fact.stored_data())))
