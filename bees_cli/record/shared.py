"""The shared record's tables in ``record.db``: the outbox of our changes, the team's rows.

How changes are found: SQLite triggers on the local ``items`` table (made by
:mod:`bees_cli.record.schema`) note each item whose
stage, status, reason, agent or title changed in ``sync_outbox``, with this computer's
clock at that moment as the origin time (UTC, :func:`bees_cli.utc.format_utc` text; SQLite's
clock has milliseconds). A push sends the outbox and removes what it sent (a change made
during the push stays for the next one). A round with nothing changed costs one
``GET /v1/me`` (the clock skew) and one empty pull.

Tables (in ``record.db``)::

    sync_outbox  item_id → origin time of its latest unsent change
    team_items   the team's items as last pulled: fields, owner generation, origin time,
                 machine, person
    sync_meta    key → value: cursor, last sync time, skew (server minus local, seconds),
                 last error (and its code)
    sync_refused item_id → the change Bees Cloud refused and why (code, message, offset)

Fields pushed per item: ``title``, ``process``, ``stage``, ``status``, ``status_text``,
``reason``, ``agent``, ``summary``, ``computer``, ``machine_id``, ``person``, ``created``;
and ``tokens``, ``tokens_in``, ``tokens_out``, the tokens (in plus out, in, out) of the
item's model stages, finished or failed, only when there are some (issue 13, point 8;
optional fields: old servers and computers keep them as any other field).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict

from bees_cli.record import states
from bees_cli.record.fires import connect
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import piece_names
from bees_cli.record.schema import NOW_UTC
from bees_cli.record.storage import read_only
from bees_cli.utc import display_utc, from_us

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.machine.computer import Computer

TOKEN_SUMS = ", ".join(
    f"(SELECT SUM(json_extract(e.data, '$.{field}')) FROM events e WHERE e.item_id = o.item_id"
    f" AND e.kind IN ('stage_finished', 'stage_failed')) AS {field}"
    for field in ("tokens", "tokens_in", "tokens_out"))
"""The item's model tokens from its stage facts: total, in, out (facts older than the split
carry only ``tokens``)."""


RefusalCode = Literal["not_owner", "machine_not_yours", "clock_ahead", "too_large",
                      "superseded", "refused"]
"""Why Bees Cloud refused one change (the server's codes, :data:`bees_cli.cloud.wire.RefusalCode`;
``refused``: an older server's whole-request refusal, kept with its message)."""


class Refusal(BaseModel):
    """One change Bees Cloud refused, as kept in ``sync_refused``.

    The typed interface the sync reads from a push answer: each element of
    ``PushAnswer.refused`` (``wire.RefusedChange``: ``item_id``, ``code``, ``message``,
    ``offset_seconds``, ``owner``) becomes one of these.
    """

    model_config = ConfigDict(extra="forbid")

    item_id: str
    origin: str
    """The change's origin time (this computer's clock, UTC ISO 8601)."""
    code: RefusalCode
    message: str
    offset_seconds: float | None = None
    """For ``clock_ahead``: how far (seconds) the origin time was ahead of the server."""
    owner: str | None = None
    """For ``not_owner``: the computer that owns the item, when the server says."""
    at: str
    """When it was refused (this computer's clock, UTC ISO 8601)."""


def refusal_code(code: str) -> RefusalCode:
    """Return the server's refusal ``code`` when it is one of :data:`RefusalCode`, else
    ``refused`` (a code this Bees does not know, or an answer that named none)."""
    for known in get_args(RefusalCode):
        if code == known:
            return cast(RefusalCode, known)
    return "refused"


def refusal_of(refused: Any, origin: str, at: str) -> Refusal:
    """Return the :class:`Refusal` of one element of a push answer's ``refused`` list."""
    owner = getattr(refused, "owner", None)
    return Refusal.model_validate({
        "item_id": refused.item_id, "origin": origin,
        "code": refusal_code(str(refused.code)),
        "message": str(refused.message),
        "offset_seconds": getattr(refused, "offset_seconds", None),
        "owner": getattr(owner, "computer_name", None), "at": at})


@dataclass(frozen=True)
class TeamItem:
    """One item of the team as the shared record holds it (``fields`` as pushed)."""

    item_id: str
    fields: dict[str, Any]
    origin_time: datetime
    machine_id: str
    person: str
    generation: int = 0
    """The owner generation of the change (0: none known; see
    :class:`~bees_cli.cloud.wire.RecordKey`)."""

    @property
    def computer(self) -> str:
        """The name of the computer that runs it."""
        return str(self.fields.get("computer") or self.machine_id[:8])

    @property
    def where(self) -> str:
        """``Draft, running on maya-laptop``: stage, status and the computer running it."""
        stage = self.fields.get("stage") or "-"
        if self.fields.get("status") == states.Status.FREE:  # relinquished: no computer runs it
            return str(self.fields.get("status_text") or "free")
        return f"{stage}, {self.fields.get('status') or '?'} on {self.computer}"



class SharedRecord:
    """The sync tables of one record file (see the module docstring).

    Args:
        path: the record database; the local record's tables are made first, then the
            sync tables and triggers.
        db: read through this connection instead (a read of several parts in one
            transaction, :meth:`~bees_cli.record.local.LocalRecord.reading`, whose record
            made the tables): no table is made nor seeded, and it is only read.
    """

    def __init__(self, path: Path, *, db: sqlite3.Connection | None = None) -> None:
        self.path = path
        self._db = db
        if db is not None:
            return
        LocalRecord(path)  # makes or migrates every table (bees_cli.record.schema)
        with connect(path) as db:
            seeded = db.execute("SELECT value FROM sync_meta WHERE key = 'seeded'").fetchone()
            # items made before the triggers existed (a read-only record is seeded later)
            if seeded is None and not read_only(path):
                db.execute("BEGIN IMMEDIATE")
                db.execute(f"INSERT OR IGNORE INTO sync_outbox (item_id, origin)"
                           f" SELECT id, {NOW_UTC} FROM items")
                db.execute("INSERT OR REPLACE INTO sync_meta VALUES ('seeded', '1')")
                db.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """Yield the connection given to read through, else a short one."""
        if self._db is not None:
            yield self._db
            return
        with connect(self.path) as db:
            yield db

    # -- meta ------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        """Return one ``sync_meta`` value (``cursor``, ``last_sync``, ``skew``, ``error``)."""
        with self._reading() as db:
            row = db.execute("SELECT value FROM sync_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row["value"]

    def set_meta(self, **values: str | None) -> None:
        """Set ``sync_meta`` values."""
        with connect(self.path) as db:
            db.executemany("INSERT OR REPLACE INTO sync_meta (key, value) VALUES (?, ?)",
                           list(values.items()))

    @property
    def cursor(self) -> int:
        """The pull cursor: the greatest server sequence number pulled so far."""
        return int(self.meta("cursor") or 0)

    @property
    def skew(self) -> float | None:
        """The last measured skew (server minus local, seconds), or None before any sync."""
        value = self.meta("skew")
        return None if value is None else float(value)

    # -- push ------------------------------------------------------------------------------

    def outbox(self, computer: Computer) -> list[tuple[str, str, dict[str, Any]]]:
        """Return ``(item_id, origin, fields)`` of every unsent change, oldest item first."""
        with connect(self.path) as db:
            rows = db.execute(
                f"SELECT o.item_id, o.origin, i.*, {TOKEN_SUMS} FROM sync_outbox o JOIN items i"
                " ON i.id = o.item_id ORDER BY o.item_id").fetchall()
            pieces = piece_names(db, [row["item_id"] for row in rows])
        changes = []
        for row in rows:
            data = dict(row)
            status_text = states.status_text(data["status"], data["reason"])
            running = data["status"] == states.Status.RUNNING
            agent = f" ({data['agent']})" if data["agent"] and running else ""
            fields = {
                "title": data["title"], "process": data["process"], "stage": data["stage"],
                "status": data["status"], "status_text": status_text,
                "reason": data["reason"], "agent": data["agent"],
                "summary": f"{data['stage']}: {status_text}{agent}",
                "computer": computer.computer, "machine_id": computer.machine_id,
                "person": computer.person, "created": data["created"],
            }
            if data["tokens"]:  # model stages only: absent otherwise, so old fields are unchanged
                fields["tokens"] = int(data["tokens"])
                fields["tokens_in"], fields["tokens_out"] = (
                    int(data["tokens_in"] or 0), int(data["tokens_out"] or 0))
                fields["summary"] += (f"; {fields['tokens']} model tokens ("
                                      f"{fields['tokens_in']} in, {fields['tokens_out']} out)")
            if pieces.get(data["item_id"]):  # issue 14: the run's pieces, named
                fields["summary"] += "; pieces: " + ", ".join(pieces[data["item_id"]])
            changes.append((data["item_id"], data["origin"], fields))
        return changes

    def sent(self, sent: list[tuple[str, str]]) -> None:
        """Drop outbox rows that were sent, unless they changed again meanwhile; an item
        sent is no longer refused."""
        with connect(self.path) as db:
            # text equality: each origin is format_utc text read from this table unchanged
            db.executemany("DELETE FROM sync_outbox WHERE item_id = ? AND origin = ?", sent)
            db.executemany("DELETE FROM sync_refused WHERE item_id = ?",
                           [(item_id,) for item_id, _ in sent])

    def refuse(self, refusals: list[Refusal]) -> None:
        """Note changes Bees Cloud refused; they stay in the outbox (sent again next round)."""
        with connect(self.path) as db:
            db.executemany(
                "INSERT OR REPLACE INTO sync_refused (item_id, origin, code, message,"
                " offset_seconds, owner, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(r.item_id, r.origin, r.code, r.message, r.offset_seconds, r.owner, r.at)
                 for r in refusals])

    def drop(self, item_ids: list[str]) -> None:
        """Forget the unsent change and the refusal of each item (it runs elsewhere now)."""
        with connect(self.path) as db:
            db.executemany("DELETE FROM sync_outbox WHERE item_id = ?", [(i,) for i in item_ids])
            db.executemany("DELETE FROM sync_refused WHERE item_id = ?",
                           [(i,) for i in item_ids])

    def refused(self) -> list[Refusal]:
        """Return the changes Bees Cloud refused and that are still unsent, by item id."""
        with self._reading() as db:
            rows = db.execute("SELECT r.* FROM sync_refused r JOIN sync_outbox o"
                              " ON o.item_id = r.item_id ORDER BY r.item_id").fetchall()
        return [Refusal.model_validate(dict(row)) for row in rows]

    def elsewhere_items(self, item_ids: list[str]) -> list[str]:
        """Return which of ``item_ids`` another computer runs as far as this one knows:
        relinquished here (``free``) or ``waiting: owned by COMPUTER``."""
        with connect(self.path) as db:
            return [r["id"] for r in db.execute(
                f"SELECT id FROM items WHERE (status = 'free' OR wait = 'owned_elsewhere')"
                f" AND id IN"
                f" ({', '.join('?' * len(item_ids))})", item_ids).fetchall()]

    # -- pull ------------------------------------------------------------------------------

    def apply(self, entries: list[wire.RecordEntry], cursor: int) -> int:
        """Apply pulled entries with last-writer-wins and move the cursor; return how many won.

        Order: :class:`bees_cli.cloud.wire.RecordKey` (later owner generation, then later
        origin time, then greater machine id, then greater SHA-256 of the canonical
        fields), the key Bees Cloud computes with the same code, so pages applied in any
        order agree. An entry without a generation (an older server) counts as 0.
        """
        from bees_cli.cloud.wire import RecordKey, canonical_json

        won = 0
        with connect(self.path) as db:
            db.execute("BEGIN IMMEDIATE")
            for entry in entries:
                text = canonical_json(entry.fields)
                generation, origin, machine_id, digest = RecordKey.of(entry)
                cursor_row = db.execute(
                    "INSERT INTO team_items (item_id, fields, generation, origin_us, machine_id,"
                    " digest, person, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (item_id) DO UPDATE SET fields = excluded.fields,"
                    " generation = excluded.generation, origin_us = excluded.origin_us,"
                    " machine_id = excluded.machine_id, digest = excluded.digest,"
                    " person = excluded.person, seq = excluded.seq"
                    " WHERE (excluded.generation, excluded.origin_us, excluded.machine_id,"
                    " excluded.digest) > (team_items.generation, team_items.origin_us,"
                    " team_items.machine_id, team_items.digest)"
                    " RETURNING item_id",
                    (entry.item_id, text, generation, origin, machine_id, digest, entry.person,
                     entry.seq)).fetchall()
                won += len(cursor_row)
            db.execute("INSERT OR REPLACE INTO sync_meta (key, value) VALUES ('cursor', ?)",
                       (str(max(cursor, self._cursor(db))),))
            db.execute("COMMIT")
        return won

    @staticmethod
    def _cursor(db: Any) -> int:
        row = db.execute("SELECT value FROM sync_meta WHERE key = 'cursor'").fetchone()
        return int(row["value"]) if row else 0

    def team(self) -> list[TeamItem]:
        """Return the team's items as last pulled, by item id."""
        with self._reading() as db:
            rows = db.execute("SELECT * FROM team_items ORDER BY item_id").fetchall()
        return [TeamItem(r["item_id"], json.loads(r["fields"]),
                         from_us(r["origin_us"]), r["machine_id"],
                         r["person"], r["generation"]) for r in rows]



def team_rows(record_path: Path, local_ids: set[str]) -> list[dict[str, Any]]:
    """Return ``bees status`` rows (:func:`team_row`) of the team's items not held in this
    computer's record."""
    return [team_row(item) for item in SharedRecord(record_path).team()
            if item.item_id not in local_ids]


def team_row(item: TeamItem) -> dict[str, Any]:
    """Return the ``bees status`` row of a team item: ``id``, ``process``, ``title``,
    ``stage``, ``status``, ``status_text`` (``Draft, running on maya-laptop``), ``computer``,
    ``person``, ``agent``, ``since`` (the change's origin time, UTC)."""
    fields = item.fields
    return {
        "id": item.item_id, "item_id": item.item_id, "process": fields.get("process"),
        "title": fields.get("title"),
        "stage": fields.get("stage"), "status": fields.get("status"),
        "status_text": item.where, "computer": item.computer, "person": item.person,
        "agent": fields.get("agent"),
        "since": display_utc(item.origin_time), "team": True,
    }
