"""The local record's busy-agent slots and the decisions queued while ``bees run`` is down:
the ``slots`` and ``controls`` tables, a part of :class:`~bees_cli.record.local.LocalRecord`."""

from __future__ import annotations

import json
from typing import Any

from bees_cli.record import storage
from bees_cli.record.connected import Connected, now_utc
from bees_cli.record.states import SLOT_KEEPING_STATUSES


class SlotsAndControls(Connected):
    """Slots of agents with ``max_concurrent_runs`` (first come first served) and the queue
    of a person's decisions (see the tables in :mod:`bees_cli.record.local`)."""

    # -- busy agents -----------------------------------------------------------------------

    def acquire_slot(self, *, agent: str, item_id: str, stage: str,
                     cap: int) -> tuple[bool, list[str], int]:
        """Ask a slot of ``agent`` (at most ``cap`` granted at once) for the item's stage.

        First come first served: the asker joins the agent's queue (once; a repeated ask
        keeps its place, and a slot already granted to this item and stage is granted again,
        so a restarted attempt reclaims its own slot). It is granted when fewer than ``cap``
        slots are held and no earlier asker still waits.

        Returns:
            ``(granted, holders, position)``: the item ids holding the agent's slots (when
            not granted), and the asker's 1-based place among the waiters (0 when granted).
        """
        with self._connect() as db:
            with storage.immediate(db):
                db.execute(
                    "INSERT OR IGNORE INTO slots (agent, item_id, stage, requested)"
                    " VALUES (?, ?, ?, ?)", (agent, item_id, stage, now_utc()))
                rows = db.execute(
                    "SELECT seq, item_id, stage, granted FROM slots WHERE agent = ?"
                    " ORDER BY seq", (agent,)).fetchall()
                mine = next(r for r in rows if r["item_id"] == item_id and r["stage"] == stage)
                holders = [r["item_id"] for r in rows if r["granted"]]
                waiters = [r for r in rows if not r["granted"]]
                if mine["granted"]:
                    return True, [], 0
                position = 1 + [r["seq"] for r in waiters].index(mine["seq"])
                if len(holders) < cap and position == 1:
                    db.execute("UPDATE slots SET granted = 1 WHERE seq = ?", (mine["seq"],))
                    return True, [], 0
                return False, holders, position

    def release_slot(self, item_id: str, stage: str | None = None) -> int:
        """Give back the item's slot or queue place (of ``stage``, or all); return how many."""
        with self._connect() as db:
            if stage is None:
                cursor = db.execute("DELETE FROM slots WHERE item_id = ?", (item_id,))
            else:
                cursor = db.execute("DELETE FROM slots WHERE item_id = ? AND stage = ?",
                                    (item_id, stage))
            return cursor.rowcount

    def free_stale_slots(self) -> int:
        """Free the slots of items that are not running (see :data:`SLOT_KEEPING_STATUSES`)
        or not in the record; return how many. ``bees run`` calls it when it starts."""
        keep = sorted(str(s) for s in SLOT_KEEPING_STATUSES)
        marks = ", ".join("?" for _ in keep)
        with self._connect() as db:
            cursor = db.execute(
                "DELETE FROM slots WHERE item_id NOT IN"
                f" (SELECT id FROM items WHERE status IN ({marks}))", keep)
            return cursor.rowcount

    def slots(self, agent: str | None = None) -> list[dict[str, Any]]:
        """Return the slot rows (of one agent, or all), in queue order:
        ``{"agent", "item_id", "stage", "requested", "granted"}``."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT agent, item_id, stage, requested, granted FROM slots"
                + (" WHERE agent = ?" if agent else "") + " ORDER BY seq",
                (agent,) if agent else ()).fetchall()
        return [{**dict(r), "granted": bool(r["granted"])} for r in rows]

    # -- queued controls -------------------------------------------------------------------

    def queue_control(self, item_id: str, name: str, payload: dict[str, Any]) -> int:
        """Queue a person's decision for ``bees run`` to deliver; return its number."""
        with self._connect() as db:
            cursor = db.execute(
                "INSERT INTO controls (item_id, name, payload, at) VALUES (?, ?, ?, ?)",
                (item_id, name, json.dumps(payload), now_utc()))
            return int(cursor.lastrowid or 0)

    def queue_decision(self, item_id: str, name: str,
                       payload: dict[str, Any]) -> dict[str, Any] | None:
        """Queue a person's decision unless one already queued for the item answers the same
        request (``request_id`` equal, or either is None: all); in one transaction.

        Returns:
            None when queued; else the payload of the decision queued earlier (nothing is
            queued: a request is answered once, so ``--ran`` then ``--again`` cannot both
            reach the run).
        """
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            rows = db.execute(
                "SELECT payload FROM controls WHERE state = 'queued' AND item_id = ? AND name = ?"
                " ORDER BY seq", (item_id, name)).fetchall()
            wanted = payload.get("request_id")
            for row in rows:
                earlier = json.loads(row["payload"])
                if None in (wanted, earlier.get("request_id")) or earlier.get(
                        "request_id") == wanted:
                    db.execute("ROLLBACK")
                    return dict(earlier)
            db.execute("INSERT INTO controls (item_id, name, payload, at) VALUES (?, ?, ?, ?)",
                       (item_id, name, json.dumps(payload), now_utc()))
            db.execute("COMMIT")
        return None

    def claim_controls(self, only: int | None = None) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Take the queued decisions (or only number ``only``) for delivery: each is taken
        by one caller. Returns ``(seq, item_id, name, payload)`` oldest first."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            query = "SELECT seq, item_id, name, payload FROM controls WHERE state = 'queued'"
            args: tuple[Any, ...] = ()
            if only is not None:
                query += " AND seq = ?"
                args = (only,)
            rows = db.execute(query + " ORDER BY seq", args).fetchall()
            for row in rows:
                db.execute("UPDATE controls SET state = 'sent' WHERE seq = ?", (row["seq"],))
            db.execute("COMMIT")
        return [(r["seq"], r["item_id"], r["name"], json.loads(r["payload"])) for r in rows]

    def queued_payloads(self, name: str, item_id: str | None = None) -> list[dict[str, Any]]:
        """Return the payloads (with ``item_id`` added) of the decisions named ``name`` that
        still wait for ``bees run`` to deliver them, of item ``item_id`` or of every item,
        oldest first."""
        query = "SELECT item_id, payload FROM controls WHERE state = 'queued' AND name = ?"
        args: tuple[Any, ...] = (name,)
        if item_id is not None:
            query += " AND item_id = ?"
            args += (item_id,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY seq", args).fetchall()
        return [{**json.loads(r["payload"]), "item_id": r["item_id"]} for r in rows]

    def queued_controls(self) -> int:
        """Return how many decisions wait for ``bees run`` to deliver them."""
        with self._connect() as db:
            row = db.execute("SELECT COUNT(*) AS n FROM controls WHERE state = 'queued'"
                             ).fetchone()
        return int(row["n"])
