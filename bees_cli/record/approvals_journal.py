"""The local record's approval requests, action journal and intents (at most once through a
power cut): the ``approvals``, ``journal`` and ``intents`` tables, a part of
:class:`~bees_cli.record.local.LocalRecord`."""

from __future__ import annotations

import json
from typing import Any

from bees_cli.record import storage
from bees_cli.record.connected import Connected


class ApprovalsAndJournal(Connected):
    """Approval requests, the journal of add-on actions, and the intents written before an
    action runs (see the tables in :mod:`bees_cli.record.local`)."""

    # -- approvals -------------------------------------------------------------------------

    def put_approval(self, item_id: str, request: dict[str, Any]) -> None:
        """Insert or replace approval request ``request["id"]`` of the item (an
        :class:`~bees_cli.engine.models.ApprovalRequest` as JSON)."""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO approvals (item_id, id, stage, status, data)"
                " VALUES (?, ?, ?, ?, ?)",
                (item_id, int(request["id"]), request["stage"], request["status"],
                 json.dumps(request)))

    def approvals(self, item_id: str | None = None, *,
                  status: str | None = "waiting") -> list[dict[str, Any]]:
        """Return approval requests (of one item, or all), oldest item and id first, with
        status ``status`` (every status when None). Each is the request's JSON."""
        query = "SELECT data FROM approvals WHERE 1 = 1"
        args: list[Any] = []
        if item_id is not None:
            query += " AND item_id = ?"
            args.append(item_id)
        if status is not None:
            query += " AND status = ?"
            args.append(status)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY item_id, id", args).fetchall()
        return [json.loads(r["data"]) for r in rows]

    # -- journal ---------------------------------------------------------------------------

    def add_journal(self, item_id: str, entry: dict[str, Any]) -> None:
        """Journal one run of an add-on action (a
        :class:`~bees_cli.engine.models.JournalEntry` as JSON); the same run twice is kept
        once (same stage, action, digest and time)."""
        with self._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO journal (item_id, stage, action, digest, exit_code, at,"
                " data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, entry["stage"], entry["action"], entry["digest"],
                 int(entry["exit_code"]), entry["at"], json.dumps(entry)))

    def journal(self, item_id: str) -> list[dict[str, Any]]:
        """Return the item's journal, oldest first: each entry's JSON (``stage``, ``round``,
        ``attempt``, ``action``, ``kind``, ``digest``, ``exit_code``, ``stdout``, ``at``,
        ``request_id``). Meant for the checkpoint of a handover."""
        with self._connect() as db:
            rows = db.execute("SELECT data FROM journal WHERE item_id = ? ORDER BY seq",
                              (item_id,)).fetchall()
        return [json.loads(r["data"]) for r in rows]

    def journal_hit(self, item_id: str, stage: str, action: str,
                    digest: str) -> dict[str, Any] | None:
        """Return the first successful (exit 0) run of ``action`` with input ``digest`` in
        ``stage`` of the item, or None."""
        with self._connect() as db:
            row = db.execute(
                "SELECT data FROM journal WHERE item_id = ? AND stage = ? AND action = ?"
                " AND digest = ? AND exit_code = 0 ORDER BY seq LIMIT 1",
                (item_id, stage, action, digest)).fetchone()
        return None if row is None else dict(json.loads(row["data"]))

    def approval(self, item_id: str, request_id: int) -> dict[str, Any] | None:
        """Return approval request ``request_id`` of the item (its JSON), or None."""
        with self._connect() as db:
            row = db.execute("SELECT data FROM approvals WHERE item_id = ? AND id = ?",
                             (item_id, request_id)).fetchone()
        return None if row is None else dict(json.loads(row["data"]))

    # -- intents (at most once through a power cut) ----------------------------------------

    def add_intent(self, item_id: str, *, stage: str, action: str, digest: str,
                   attempt: int, at: str) -> int:
        """Write, durably (synchronous FULL: on disk when this returns), that ``action`` with
        input ``digest`` is about to run in the item's ``stage``; return the intent's id."""
        with self._durable() as db:
            cursor = db.execute(
                "INSERT INTO intents (item_id, stage, action, digest, attempt, at)"
                " VALUES (?, ?, ?, ?, ?, ?)", (item_id, stage, action, digest, attempt, at))
            return int(cursor.lastrowid or 0)

    def open_intent(self, item_id: str, stage: str, action: str,
                    digest: str) -> dict[str, Any] | None:
        """Return the latest intent of ``action`` with input ``digest`` in the item's
        ``stage`` that has no result (``seq``, ``attempt``, ``at``), or None."""
        with self._connect() as db:
            row = db.execute(
                "SELECT seq, attempt, at FROM intents WHERE item_id = ? AND stage = ?"
                " AND action = ? AND digest = ? AND ended IS NULL ORDER BY seq DESC LIMIT 1",
                (item_id, stage, action, digest)).fetchone()
        return None if row is None else dict(row)

    def end_intent(self, item_id: str, seq: int, how: str,
                   entry: dict[str, Any] | None) -> None:
        """End intent ``seq`` (``how``: ``result``, ``ran`` or ``again``) and journal
        ``entry`` (see :meth:`add_journal`) with it, in one durable transaction."""
        with self._durable() as db:
            with storage.immediate(db):
                if entry is not None:
                    db.execute(
                        "INSERT OR IGNORE INTO journal (item_id, stage, action, digest,"
                        " exit_code, at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (item_id, entry["stage"], entry["action"], entry["digest"],
                         int(entry["exit_code"]), entry["at"], json.dumps(entry)))
                db.execute("UPDATE intents SET ended = ? WHERE seq = ?", (how, seq))
