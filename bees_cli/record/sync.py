"""The shared record on this computer: push our item changes, pull the team's, every 15 s.

Rules (DESIGN.md, "Shared record"; post, "What Bees Cloud holds"): every
:data:`SYNC_EVERY` seconds a computer sends the stage, status and a run summary of its
items and fetches what the team sent. Per item the change with the later origin time (the
clock of the computer that made it) wins, ties broken by machine id, then by the
SHA-256 of the fields — the same order Bees Cloud applies, so every computer ends with
the same team table.

How changes are found: SQLite triggers on the local ``items`` table (made by
:mod:`bees_cli.record.schema`) note each item whose
stage, status, reason, agent or title changed in ``sync_outbox``, with this computer's
clock at that moment (UTC, milliseconds) as the origin time. A push sends the outbox and
removes what it sent (a change made during the push stays for the next one). A round
with nothing changed costs one ``GET /v1/me`` (the clock skew) and one empty pull.

Tables (in ``record.db``)::

    sync_outbox  item_id → origin time of its latest unsent change
    team_items   the team's items as last pulled: fields, origin time, machine, person
    sync_meta    key → value: cursor, last sync time, skew (server minus local, seconds),
                 last error

Fields pushed per item: ``title``, ``process``, ``stage``, ``status``, ``status_text``,
``reason``, ``agent``, ``summary``, ``computer``, ``machine_id``, ``person``, ``created``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import BeesError, CloudError
from bees_cli.record import states
from bees_cli.record.fires import connect, iso, parse_iso
from bees_cli.record.local import LocalRecord
from bees_cli.record.schema import NOW_MS

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.machine.computer import Computer

log = logging.getLogger(__name__)

SYNC_EVERY = 15.0
"""Seconds between sync rounds (DESIGN.md: every 15 s)."""
SKEW_WARN = 5.0
"""Seconds of clock skew against Bees Cloud above which status and doctor warn."""



@dataclass(frozen=True)
class TeamItem:
    """One item of the team as the shared record holds it (``fields`` as pushed)."""

    item_id: str
    fields: dict[str, Any]
    origin_time: datetime
    machine_id: str
    person: str

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


@dataclass(frozen=True)
class SyncResult:
    """One sync round: changes pushed and applied, entries pulled, skew (server minus
    local, seconds) and the new cursor."""

    pushed: int
    pulled: int
    skew: float
    cursor: int


class SharedRecord:
    """The sync tables of one record file (see the module docstring).

    Args:
        path: the record database; the local record's tables are made first, then the
            sync tables and triggers.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        LocalRecord(path)  # makes or migrates every table (bees_cli.record.schema)
        with connect(path) as db:
            seeded = db.execute("SELECT value FROM sync_meta WHERE key = 'seeded'").fetchone()
            if seeded is None:  # items made before the triggers existed
                db.execute("BEGIN IMMEDIATE")
                db.execute(f"INSERT OR IGNORE INTO sync_outbox (item_id, origin)"
                           f" SELECT id, {NOW_MS} FROM items")
                db.execute("INSERT OR REPLACE INTO sync_meta VALUES ('seeded', '1')")
                db.execute("COMMIT")

    # -- meta ------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        """Return one ``sync_meta`` value (``cursor``, ``last_sync``, ``skew``, ``error``)."""
        with connect(self.path) as db:
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
                "SELECT o.item_id, o.origin, i.* FROM sync_outbox o JOIN items i"
                " ON i.id = o.item_id ORDER BY o.item_id").fetchall()
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
            changes.append((data["item_id"], data["origin"], fields))
        return changes

    def sent(self, sent: list[tuple[str, str]]) -> None:
        """Drop outbox rows that were sent, unless they changed again meanwhile."""
        with connect(self.path) as db:
            db.executemany("DELETE FROM sync_outbox WHERE item_id = ? AND origin = ?", sent)

    # -- pull ------------------------------------------------------------------------------

    def apply(self, entries: list[wire.RecordEntry], cursor: int) -> int:
        """Apply pulled entries with last-writer-wins and move the cursor; return how many won.

        Order: :class:`bees_cli.cloud.wire.RecordKey` (later origin time, then greater
        machine id, then greater SHA-256 of the canonical fields), the key Bees Cloud
        computes with the same code, so pages applied in any order agree.
        """
        from bees_cli.cloud.wire import RecordKey, canonical_json

        won = 0
        with connect(self.path) as db:
            db.execute("BEGIN IMMEDIATE")
            for entry in entries:
                text = canonical_json(entry.fields)
                origin, machine_id, digest = RecordKey.of(entry)
                cursor_row = db.execute(
                    "INSERT INTO team_items (item_id, fields, origin_us, machine_id, digest,"
                    " person, seq) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (item_id) DO UPDATE SET fields = excluded.fields,"
                    " origin_us = excluded.origin_us, machine_id = excluded.machine_id,"
                    " digest = excluded.digest, person = excluded.person, seq = excluded.seq"
                    " WHERE (excluded.origin_us, excluded.machine_id, excluded.digest) >"
                    " (team_items.origin_us, team_items.machine_id, team_items.digest)"
                    " RETURNING item_id",
                    (entry.item_id, text, origin, machine_id, digest, entry.person,
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
        with connect(self.path) as db:
            rows = db.execute("SELECT * FROM team_items ORDER BY item_id").fetchall()
        return [TeamItem(r["item_id"], json.loads(r["fields"]),
                         datetime.fromtimestamp(r["origin_us"] / 1e6, UTC), r["machine_id"],
                         r["person"]) for r in rows]


class Syncer:
    """Runs sync rounds for one computer against its Bees Cloud.

    Args:
        computer: this computer (needs a sign-in).
        client: an async cloud client to use (kept open by the caller); None makes one
            per round with two retries.
        clock: this computer's clock (UTC), for the skew.
        interval: seconds between rounds in :meth:`run`.
    """

    def __init__(self, computer: Computer, *, client: AsyncCloudClient | None = None,
                 clock: Callable[[], datetime] | None = None,
                 interval: float = SYNC_EVERY) -> None:
        self.computer = computer
        self.client = client
        self.clock = clock
        self.interval = interval
        self.shared = SharedRecord(computer.record_path)

    async def sync_once(self) -> SyncResult:
        """Measure the skew, push the outbox, pull the team's changes since the cursor.

        Raises:
            CloudError: the cloud could not be reached or refused (the round changes
                nothing but what was already sent).
        """
        from bees_cli.cloud import wire

        client = self.client or self.computer.cloud(retries=2)
        assert client is not None, "sync needs a Bees Cloud sign-in"
        try:
            skew = await client.skew()
            changes = await asyncio.to_thread(self.shared.outbox, self.computer)
            if changes:
                records = [wire.RecordChange(item_id=item_id, fields=fields,
                                             origin_time=parse_iso(origin),
                                             machine_id=self.computer.machine_id)
                           for item_id, origin, fields in changes]
                refused = await self._push(client, records)
                # A refused change stays in the outbox until it can be sent.
                kept = {(r.item_id, r.origin_time) for r in refused}
                await asyncio.to_thread(self.shared.sent, [
                    (i, o) for i, o, _ in changes if (i, parse_iso(o)) not in kept])
            cursor = await asyncio.to_thread(lambda: self.shared.cursor)
            pulled = await client.pull_all(cursor)
            await asyncio.to_thread(self.shared.apply, list(pulled.changes), pulled.cursor)
            now = self.clock() if self.clock else datetime.now(UTC)
            await asyncio.to_thread(self.shared.set_meta, skew=f"{skew.skew_seconds:.3f}",
                                    last_sync=iso(now), error=None)
            return SyncResult(len(changes), len(pulled.changes), skew.skew_seconds,
                              pulled.cursor)
        finally:
            if self.client is None:
                await client.aclose()

    async def _push(self, client: AsyncCloudClient,
                    records: list[wire.RecordChange]) -> list[wire.RefusedChange]:
        """Push; return the changes Bees Cloud refused (each with its code and reason)."""
        answer = await client.push(records)
        for refused in answer.refused:
            log.warning("shared record: %s not sent (%s): %s", refused.item_id, refused.code,
                        refused.message)
        return list(answer.refused)

    async def run(self, stop: asyncio.Event, say: Callable[[str], None] | None = None) -> None:
        """Sync every :attr:`interval` seconds until ``stop`` is set; failures are noted
        (``sync_meta.error``, one line said when it changes) and never end the loop."""
        last_error: str | None = None
        while not stop.is_set():
            try:
                await self.sync_once()
                if last_error is not None and say:
                    say("shared record: synced again")
                last_error = None
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the loop must survive anything
                text = error.message if isinstance(error, CloudError) else repr(error)
                if text != last_error and say:
                    say(f"shared record: sync failed: {text}")
                last_error = text
                # a Bees error is news; anything else is a bug: keep its traceback
                log.warning("shared record sync failed: %s", text,
                            exc_info=not isinstance(error, BeesError))
                try:
                    await asyncio.to_thread(self.shared.set_meta, error=text)
                except Exception:  # noqa: BLE001
                    pass
            try:
                await asyncio.wait_for(stop.wait(), self.interval)
            except TimeoutError:
                pass


def team_rows(record_path: Path, local_ids: set[str]) -> list[dict[str, Any]]:
    """Return ``bees status`` rows of the team's items not held in this computer's record.

    Each row: ``id``, ``process``, ``title``, ``stage``, ``status``, ``status_text``
    (``Draft, running on maya-laptop``), ``computer``, ``person``, ``agent``, ``since``
    (the change's origin time, UTC).
    """
    rows = []
    for item in SharedRecord(record_path).team():
        if item.item_id in local_ids:
            continue
        fields = item.fields
        rows.append({
            "id": item.item_id, "item_id": item.item_id, "process": fields.get("process"),
            "title": fields.get("title"),
            "stage": fields.get("stage"), "status": fields.get("status"),
            "status_text": item.where, "computer": item.computer, "person": item.person,
            "agent": fields.get("agent"),
            "since": item.origin_time.strftime("%Y-%m-%dT%H:%M:%SZ"), "team": True,
        })
    return rows


def team_view(local_ids: set[str]) -> tuple[list[dict[str, Any]], str | None]:
    """Return this computer's view for ``bees status``: the team's rows (see
    :func:`team_rows`) and the clock-skew warning, if any."""
    from bees_cli.machine.paths import data_dir

    path = data_dir() / "record.db"
    return team_rows(path, local_ids), skew_warning(path)


def skew_warning(record_path: Path) -> str | None:
    """Return a warning line when the last measured skew is over :data:`SKEW_WARN` s."""
    skew = SharedRecord(record_path).skew
    if skew is None or abs(skew) <= SKEW_WARN:
        return None
    side = "behind" if skew > 0 else "ahead of"
    return (f"warning: this computer's clock is {abs(skew):.1f} s {side} Bees Cloud's;"
            " the shared record trusts each computer's clock (fix the system clock)")
