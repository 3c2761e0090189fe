"""The rows ``bees status`` lists: the columns it shows, the most relevant first, up to a limit.

Why (issue 16, point 3): ``bees status`` must stay near-constant as items grow, so it reads
neither an item's workflow input (``items.input``) nor every row: the most relevant
``limit`` rows of this computer (items not ended first, then the latest changed), then the
team's latest changed rows up to the same limit, and a count of the rest.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bees_cli.record import storage
from bees_cli.record.rows import SHOWN_COLUMNS, ItemRow
from bees_cli.record.schema import ENDED_FIRST
from bees_cli.record.states import Status

STATUS_LIMIT = 50
"""How many rows ``bees status`` lists unless ``--all``."""


@dataclass(frozen=True)
class LocalPage:
    """This computer's rows of one listing.

    Attributes:
        rows: the rows shown, oldest id first; ``input`` is not read (empty).
        more: rows of this computer not shown (past the limit).
        held: item id → what its approval waits for, without the action's input:
            ``mail.send``, ``finish Send``, ``mail.send may already have run``.
    """

    rows: list[ItemRow]
    more: int = 0
    held: dict[str, str] = field(default_factory=dict)


def _marks(values: Sequence[str]) -> str:
    return ", ".join("?" for _ in values)


@contextmanager
def _read(path: Path, db: sqlite3.Connection | None) -> Iterator[sqlite3.Connection]:
    """Yield ``db`` when given (a read of several parts, one connection:
    :meth:`~bees_cli.record.local.LocalRecord.reading`), else a short connection to ``path``."""
    if db is not None:
        yield db
        return
    with storage.opened(path) as opened:
        yield opened


def local_page(path: Path, *, limit: int | None, hide: Sequence[str] = (),
               statuses: Sequence[str] | None = None, exact: bool = True,
               db: sqlite3.Connection | None = None) -> LocalPage:
    """Return up to ``limit`` rows of the record at ``path`` (every row when None): items
    not done nor cancelled first, then the latest changed; shown oldest id first.

    Args:
        path: the record file (``record.db``).
        limit: how many rows at most, or None for all.
        hide: ids never listed (relinquished items another computer continued).
        statuses: list only items in one of these statuses (the app's filters, applied
            before the limit); None: any status.
        exact: count the rows not shown (``more``); False: ``more`` is 1 when any is left,
            found by reading one row past the limit instead of counting every row (the
            app's list, issue 29 point 1: a count reads the whole index).
        db: read through this connection (one read of several parts), not a new one.
    """
    terms = [f"id NOT IN ({_marks(hide)})"] if hide else []
    if statuses is not None:
        terms.append(f"status IN ({_marks(statuses)})")
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    args = (*hide, *(statuses or ()))
    probe = 0 if exact or limit is None else 1
    with _read(path, db) as db:
        rows = db.execute(
            f"SELECT {', '.join(SHOWN_COLUMNS)} FROM items{where}"
            f" ORDER BY {ENDED_FIRST}, since DESC, id DESC LIMIT ?",
            (*args, -1 if limit is None else limit + probe)).fetchall()
        if probe:
            total = len(rows)
            rows = rows[:limit]
        else:
            total = len(rows) if limit is None or len(rows) < limit else db.execute(
                f"SELECT count(*) FROM items{where}", args).fetchone()[0]
        ids = [r["id"] for r in rows if r["status"] == Status.WAITING_FOR_APPROVAL]
        waiting = db.execute(
            f"SELECT item_id, data FROM approvals WHERE status = 'waiting' AND item_id IN"
            f" ({', '.join('?' for _ in ids)}) ORDER BY item_id, id", ids).fetchall()
    shown = sorted((ItemRow.from_row(r) for r in rows), key=lambda r: r.id)
    held: dict[str, str] = {}
    for request in waiting:
        held.setdefault(request["item_id"], held_what(json.loads(request["data"])))
    return LocalPage(rows=shown, more=total - len(shown), held=held)


def held_what(request: dict[str, Any]) -> str:
    """Return what an approval request (its JSON) waits for, without the action's input:
    ``mail.send``, ``finish Send``, or ``mail.send may already have run``."""
    action = request.get("action")
    if not action:
        return f"finish {request.get('stage') or '?'}"
    if request.get("interrupted_at"):
        return f"{action} may already have run"
    return str(action)


def free_rows(path: Path, db: sqlite3.Connection | None = None) -> list[ItemRow]:
    """Return this computer's relinquished (``free``) rows, without their input (``db``:
    read through this connection, not a new one)."""
    with _read(path, db) as db:
        rows = db.execute(f"SELECT {', '.join(SHOWN_COLUMNS)} FROM items WHERE status = ?",
                          (str(Status.FREE),)).fetchall()
    return [ItemRow.from_row(r) for r in rows]


@dataclass(frozen=True)
class TeamPage:
    """The team's rows of one listing (``team_row`` dicts) and how many are not shown."""

    rows: list[dict[str, Any]]
    more: int = 0


def team_page(path: Path, *, limit: int | None, show: Sequence[str] = (),
              statuses: Sequence[str] | None = None, exact: bool = True,
              db: sqlite3.Connection | None = None) -> TeamPage:
    """Return up to ``limit`` team rows not held in this computer's record, latest changed
    first (every row when None), as :func:`bees_cli.record.sync.team_row` makes them.

    Args:
        path: the record file.
        limit: how many rows at most, or None for all; 0 reads none (only counts them).
        show: ids of this record listed as team rows anyway (continued elsewhere).
        statuses: list only items in one of these statuses (applied before the limit);
            None: any status.
        exact: count the rows not shown; False: ``more`` is 1 when any is left (see
            :func:`local_page`).
        db: read through this connection (one read of several parts), not a new one.
    """
    from bees_cli.record.shared import TeamItem, team_row
    from bees_cli.utc import from_us

    where = " WHERE (item_id NOT IN (SELECT id FROM items)" + (
        f" OR item_id IN ({_marks(show)}))" if show else ")")
    if statuses is not None:
        where += f" AND json_extract(fields, '$.status') IN ({_marks(statuses)})"
    args = (*show, *(statuses or ()))
    probe = 0 if exact or limit is None else 1
    with _read(path, db) as db:
        rows = db.execute(
            "SELECT item_id, fields, origin_us, machine_id, person FROM team_items"
            f"{where} ORDER BY origin_us DESC, item_id LIMIT ?",
            (*args, -1 if limit is None else limit + probe)).fetchall()
        if probe:
            total = len(rows)
            rows = rows[:limit]
        else:
            total = len(rows) if limit is None or len(rows) < limit else db.execute(
                f"SELECT count(*) FROM team_items{where}", args).fetchone()[0]
    items = [TeamItem(r["item_id"], json.loads(r["fields"]), from_us(r["origin_us"]),
                      r["machine_id"], r["person"]) for r in rows]
    return TeamPage(rows=[team_row(item) for item in sorted(items, key=lambda i: i.item_id)],
                    more=total - len(items))


class RecordVersion:
    """A number that changes whenever a change is committed to the record: SQLite's
    ``PRAGMA data_version`` on one connection held open for it (and never written through).

    Why (issue 29, point 1): the app's list answers a poll with "unchanged" from this
    number, read in microseconds, instead of reading and rendering its rows every second.
    Any commit counts (an event, a sync's note), so the number changes more often than the
    rows do; never less often.

    Args:
        path: the record file (``record.db``).
    """

    def __init__(self, path: Path) -> None:
        import threading

        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __call__(self) -> int:
        """Return the record's version now (a connection's own count: compare it only with
        numbers this object returned).

        Raises:
            DiskError: the record cannot be opened.
        """
        with self._lock:
            if self._db is None:
                self._db = storage.open_connection(self.path, any_thread=True)
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        """Close the held connection (the next call opens another)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def process_stages(path: Path, item_id: str) -> list[dict[str, Any]]:
    """Return the stages of item ``item_id``'s process as its snapshot holds them (each
    ``name``, ``kind`` and ``reviews``, in order), read from its workflow input; ``[]`` when
    the item is not in this record or its input has no snapshot (an older Bees)."""
    with storage.opened(path) as db:
        found = db.execute("SELECT json_extract(input, '$.snapshot.process.stages') FROM items"
                           " WHERE id = ? AND json_valid(input)", (item_id,)).fetchone()
    stages = json.loads(found[0]) if found and found[0] else []
    return [s for s in stages if isinstance(s, dict) and s.get("name")]


@dataclass(frozen=True)
class TeamComputer:
    """One computer of the team as the shared record knows it.

    Attributes:
        machine_id: its machine id.
        computer: its name (from its latest change).
        person: whose it is.
        last_heard: when its latest change was made (its origin time, UTC).
        items: how many of the team's items it last changed.
        active: its items not ended nor free (``team_row`` dicts), latest changed first, at
            most the ``active`` asked for.
        under_way: how many of its items are not ended nor free (listed or not).
    """

    machine_id: str
    computer: str
    person: str
    last_heard: datetime
    items: int
    active: list[dict[str, Any]]
    under_way: int = 0


ENDED = ("done", "cancelled", "free")
"""Statuses of a team item no computer works on."""


def team_computers(path: Path, *, skip: str, active: int = 20) -> list[TeamComputer]:
    """Return every computer of the team that pushed a change to the shared record, as this
    computer last pulled it, the latest heard from first (this computer, ``skip``, left out).

    Args:
        path: the record file.
        skip: this computer's machine id.
        active: at most this many items under way listed per computer.
    """
    from bees_cli.record.shared import TeamItem, team_row
    from bees_cli.utc import from_us

    ended = _marks(ENDED)
    with storage.opened(path) as db:
        # SQLite: the bare columns of a max() group come from the row with the max
        computers = db.execute(
            "SELECT machine_id, person, json_extract(fields, '$.computer') AS computer,"
            " max(origin_us) AS last_us, count(*) AS n FROM team_items WHERE machine_id != ?"
            " GROUP BY machine_id ORDER BY last_us DESC", (skip,)).fetchall()
        rows = db.execute(
            "SELECT item_id, fields, origin_us, machine_id, person FROM team_items"
            f" WHERE machine_id != ? AND json_extract(fields, '$.status') NOT IN ({ended})"
            " ORDER BY origin_us DESC, item_id", (skip, *ENDED)).fetchall()
    under_way: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["machine_id"]] = counts.get(r["machine_id"], 0) + 1
        mine = under_way.setdefault(r["machine_id"], [])
        if len(mine) < active:
            mine.append(team_row(TeamItem(r["item_id"], json.loads(r["fields"]),
                                          from_us(r["origin_us"]), r["machine_id"],
                                          r["person"])))
    return [TeamComputer(machine_id=c["machine_id"],
                         computer=str(c["computer"] or c["machine_id"][:8]),
                         person=c["person"], last_heard=from_us(c["last_us"]), items=c["n"],
                         active=under_way.get(c["machine_id"], []),
                         under_way=counts.get(c["machine_id"], 0))
            for c in computers]
