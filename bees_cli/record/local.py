"""The local record: this computer's work items and their history, SQLite (WAL) in the data dir.

Written by ``bees item create`` and by the engine's activities; read by ``bees status`` and
``bees item show`` without touching Temporal, so they answer in milliseconds.

Tables::

    items   one row per work item: id, process, title, stage, status, reason, agent, since, …
    events  its history: one row per fact (a pick, a stage start or end, a review verdict,
            a wait); ``key`` is unique per item, so an activity that is retried writes a fact
            once.
    approvals  what waits (or waited) for a person's approval: one row per request
    journal    each run of an add-on action: stage, action, input digest, exit code, stdout
    intents    each add-on action about to run (version 3), written durably before it runs;
               ``ended`` is NULL until its result is journaled (``result``), or a person
               answered it after an interruption (``ran``, ``again``)
    slots      busy agents: one row per stage holding (``granted``) or waiting for a slot of
               its agent, first come first served by ``requested``
    controls   a person's decisions (approve, deny) queued while ``bees run`` is down;
               ``bees run`` delivers them when it starts

Statuses (``items.status``) are the values of :class:`~bees_cli.record.states.Status`;
``items.wait`` (version 2) a :class:`~bees_cli.record.states.WaitKind` when the writer said
why the item waits. The tables and their migrations live in :mod:`bees_cli.record.schema`.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import Ambiguous, BeesError, IoFailure, NotFound
from bees_cli.record import schema, storage
from bees_cli.record.approvals_journal import ApprovalsAndJournal
from bees_cli.record.connected import now_utc
from bees_cli.record.held import HeldConnections, identity
from bees_cli.record.owned import OwnedElsewhere, refuse_team_item
from bees_cli.record.pieces import PiecesPart
from bees_cli.record.rows import SHOWN_COLUMNS, Event, ItemRow
from bees_cli.record.slots_controls import SlotsAndControls
from bees_cli.record.states import (
    ACTIVE_STATUSES,
    END_STATUSES,
    NOT_RUNNING_TEXT,
    SLOT_KEEPING_STATUSES,
    Status,
    WaitKind,
)
from bees_cli.utc import parse_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.record.events import EventBase

__all__ = ["ACTIVE_STATUSES", "END_STATUSES", "NOT_RUNNING", "SLOT_KEEPING_STATUSES", "Event",
           "ItemRow", "LocalRecord", "OwnedElsewhere", "Status", "WaitKind", "human_since",
           "item_journal", "now_utc", "open_record"]

NOT_RUNNING = NOT_RUNNING_TEXT
"""The reason of an item whose stage was running when ``bees run`` stopped."""


class LocalRecord(ApprovalsAndJournal, SlotsAndControls, PiecesPart):
    """The SQLite file of the local record; each thread keeps one connection to it, and each
    call is one transaction, or one :meth:`step` several (safe across processes and threads:
    :mod:`bees_cli.record.held`).

    Args:
        path: the database file, e.g. ``data_dir() / "record.db"``; created when missing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read_only = storage.read_only(path)
        """The file cannot be written here (a read-only home): reading works, a write raises
        :class:`~bees_cli.errors.DiskError` (:mod:`bees_cli.record.storage`)."""
        self.replaced = 0
        """How many times the file was found gone (moved aside or deleted while this object
        was in use) and started again empty: ``bees run`` then rebuilds its rows."""
        self._create()
        # given the path, not self: no cycle, so a dropped record closes its connections
        self._held = HeldConnections(path, functools.partial(_not_a_record, path))

    def _create(self) -> None:
        """Create (or upgrade) the file and its tables."""
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with storage.opened(self.path, corrupt=self._corrupt) as db:
            if not self.read_only:
                storage.use_wal(db)
            schema.upgrade(db, self.path)

    def _corrupt(self, error: sqlite3.DatabaseError) -> BeesError:
        return _not_a_record(self.path, error)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        stepping = self._held.step
        if stepping is not None:  # inside a step: its connection and its transaction
            yield stepping
            return
        file = identity(self.path)
        if file is None and not self.read_only:
            # moved aside or deleted while in use: start again with the tables, never a
            # bare file without them (``no such table``); ``bees run`` rebuilds the rows
            self._create()
            self.replaced += 1
            file = identity(self.path)
        db = self._held.get(file)
        with storage.mapped(self.path, corrupt=self._corrupt):
            try:
                yield db
                if db.in_transaction:  # left open: rolled back, as closing a connection did
                    db.execute("ROLLBACK")
            except sqlite3.Error:
                self._held.drop()  # closing rolls back; the next call opens a fresh one
                raise
            except BaseException:
                try:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                except sqlite3.Error:
                    self._held.drop()
                raise

    @contextmanager
    def step(self) -> Iterator[None]:
        """Make the record's calls inside (on this thread) one transaction: ``BEGIN
        IMMEDIATE`` (the write lock taken first, waiting for another writer up to
        :data:`~bees_cli.record.storage.BUSY_TIMEOUT` s), one commit at the end, nothing
        written when it raises. Nested, it joins the outer step.

        Why: a step of the engine (a stage's pick, its start, its end) writes a fact and the
        item's state; one commit makes them appear together and costs one write of the WAL.
        Calls that open their own transaction or commit durably (slots, controls, intents)
        are not made inside a step (SQLite refuses a nested ``BEGIN``).
        """
        if self._held.step is not None:
            yield
            return
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            self._held.step = db
            try:
                yield
            finally:
                self._held.step = None
            db.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """Yield this thread's connection inside one read transaction (``BEGIN``, deferred:
        the snapshot is taken at the first read), and make the record's calls inside (on this
        thread) read through it; ended at the block's end. Inside a :meth:`step` (or another
        reading) it joins that transaction.

        Why (issue 29, point 1): ``bees status``'s read (the app's item list) has about
        fifteen parts (the page, the free rows, the team's, the held approvals, the sync's
        notes); each on its own short connection cost a connect, a cold page cache and the
        schema parsed again, and parts could see different commits. Read together they cost
        one kept connection and see one snapshot. Only for reading: a write inside would
        have to upgrade the read lock (``SQLITE_BUSY`` when another writer holds it).

        Raises:
            DiskError: the disk is read-only or full, or the file cannot be opened.
        """
        stepping = self._held.step
        if stepping is not None:
            yield stepping
            return
        with self._connect() as db:
            db.execute("BEGIN")
            self._held.step = db
            try:
                yield db
            finally:
                self._held.step = None
            db.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection (none in use); else closed when collected, or at exit."""
        self._held.close()

    # -- writing ---------------------------------------------------------------------------

    def add_item(self, *, id: str, process: str, title: str, workspace: str, run_folder: str,
                 input: str, stage: str | None, created: str | None = None,
                 created_on: str | None = None, status: Status = Status.PENDING) -> None:
        """Record a new item as ``pending`` at ``stage`` (its first stage); ``status``
        ``free`` records one that is handed over before it ever starts here
        (``bees item create --on POOL``), so ``bees run`` never starts it.

        ``created`` (UTC text) and ``created_on`` (a computer's name) are given for an item
        another computer created and handed over: the item keeps that time, and its history,
        ``created`` fact included, comes with the handover (:mod:`bees_cli.record.story`).
        Otherwise it is created now, here, with a ``created`` fact.
        """
        at = now_utc()
        with self._connect() as db:
            db.execute(
                "INSERT INTO items (id, process, title, workspace, run_folder, stage, status,"
                " since, created, created_on, input) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (id, process, title, workspace, run_folder, stage, str(status), at,
                 created or at, created_on, input),
            )
            if created is None:
                db.execute(
                    "INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data)"
                    " VALUES (?, 'created', ?, 'created', NULL, NULL, '{}')",
                    (id, at),
                )

    def remove_item(self, item_id: str) -> None:
        """Remove an item and its history (an item whose creation failed half-way)."""
        with self._connect() as db:
            db.execute("DELETE FROM events WHERE item_id = ?", (item_id,))
            db.execute("DELETE FROM items WHERE id = ?", (item_id,))

    def restart_item(self, item_id: str, *, input: str, run_folder: str,
                     stage: str | None) -> None:
        """Make a relinquished item of this record ``pending`` again for its next run (a
        handover continued here): new workflow ``input``, ``run_folder`` and ``stage``."""
        at = now_utc()
        with self._connect() as db:
            db.execute(
                "UPDATE items SET input = ?, run_folder = ?, stage = ?, status = ?,"
                " reason = NULL, agent = NULL, wait = NULL, model_retry = NULL, since = ?"
                " WHERE id = ?",
                (input, run_folder, stage, str(Status.PENDING), at, item_id))

    def set_state(self, item_id: str, *, status: Status | str, stage: str | None = None,
                  reason: str | None = None, agent: str | None = None,
                  only_if: frozenset[Status] | frozenset[str] | None = None,
                  wait: WaitKind | None = None,
                  model_retry: dict[str, Any] | None = None) -> None:
        """Set the item's status (and stage, reason, agent, wait kind, model retry).

        ``since`` moves only when the status, stage, reason, agent or wait kind changed.

        Args:
            item_id: the item (a missing one is ignored).
            status: the new status (a :class:`Status` or its value).
            stage: the new stage; None keeps the current one.
            reason: the text people read beside the status, or None.
            agent: the agent running it, or None.
            only_if: change nothing unless the current status is one of these.
            wait: why it waits (for ``waiting`` and the statuses that wait for a person),
                else None. Decisions read this, never ``reason``.
            model_retry: the model call that waits for its next try or is tried again, as
                machine values beside ``reason`` (``ModelRetry`` as JSON), else None.

        Raises:
            ValueError: ``status`` is not a :class:`Status` value.
        """
        status = Status(status)
        at = now_utc()
        # one read-modify-write: another writer's status landing between the read and the
        # update (the item's workflow writing ``waiting`` while ``start_pending`` sets
        # ``starting`` only if still pending) would otherwise be overwritten
        atomic = self.step() if not self.read_only else nullcontext()
        with atomic, self._connect() as db:
            row = db.execute(
                "SELECT stage, status, reason, agent, wait, model_retry FROM items WHERE id = ?",
                (item_id,)).fetchone()
            if row is None:
                return
            if only_if is not None and row["status"] not in only_if:
                return
            new_stage = stage if stage is not None else row["stage"]
            new_wait = None if wait is None else str(wait)
            retry = None if model_retry is None else json.dumps(model_retry, sort_keys=True)
            if (row["stage"], row["status"], row["reason"], row["agent"], row["wait"],
                    row["model_retry"]) == (new_stage, status, reason, agent, new_wait, retry):
                return
            db.execute(
                "UPDATE items SET stage = ?, status = ?, reason = ?, agent = ?, wait = ?,"
                " model_retry = ?, since = ? WHERE id = ?",
                (new_stage, str(status), reason, agent, new_wait, retry, at, item_id),
            )

    def add_fact(self, item_id: str, fact: EventBase, *, key: str) -> None:
        """Add a fact (a model of :mod:`bees_cli.record.events`) to the item's history; a
        second fact with the same ``key`` in the same run of the item is ignored.

        Stored as before: ``kind``, ``stage`` and ``round`` in their columns and the fields
        the writer set as the JSON ``data`` (:meth:`EventBase.stored_data`); a fact read
        back as :class:`~bees_cli.record.events.UnknownEvent` is stored with its ``data``
        whole. ``at`` is the time of writing, whatever the fact says.
        """
        self._add_event(item_id, key=key, kind=fact.kind, stage=fact.stage, round=fact.round,
                        data=fact.stored_data())

    def _add_event(self, item_id: str, *, key: str, kind: str, stage: str | None = None,
                   round: int | None = None, data: dict[str, Any] | None = None) -> None:
        """Add a stored fact (``kind`` and its ``data``) to the item's history; a second
        fact with the same ``key`` in the same run of the item is ignored. Writers outside
        the record use :meth:`add_fact` (tests write old rows with this).

        Why per run: a continued run (``run`` 2 or more in the item's workflow input) numbers
        its approval requests and facts afresh and may start its restart stage's round again,
        so its keys are stored as ``runN:KEY`` and never hide a fact of an earlier run.
        """
        with self._connect() as db:
            found = db.execute(
                "SELECT CASE WHEN json_valid(input) THEN json_extract(input, '$.run') END"
                " AS run FROM items WHERE id = ?", (item_id,)).fetchone()
            run = found["run"] if found is not None else None
            if isinstance(run, int) and run > 1:
                key = f"run{run}:{key}"
            db.execute(
                "INSERT OR IGNORE INTO events (item_id, key, at, kind, stage, round, data)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, key, now_utc(), kind, stage, round, json.dumps(data or {})),
            )

    def relay_fact(self, item_id: str, *, key: str, kind: str, stage: str | None,
                   round: int | None, data: dict[str, Any]) -> None:
        """Store a fact a workflow already serialized (``bees.record``'s and
        ``bees.piece_record``'s input: ``kind`` and ``data``), unchanged.

        Why not :meth:`add_fact`: the input of an activity scheduled by a running (or saved)
        workflow history keeps the shape it was given; reading it into a model and back
        would drop or rewrite what an older workflow wrote.
        """
        self._add_event(item_id, key=key, kind=kind, stage=stage, round=round, data=data)

    # -- reading ---------------------------------------------------------------------------

    def items(self, *, statuses: frozenset[Status] | frozenset[str] | None = None
              ) -> list[ItemRow]:
        """Return every item (oldest first), or those whose status is in ``statuses``."""
        with self._connect() as db:
            rows = db.execute("SELECT * FROM items ORDER BY id").fetchall()
        found = [ItemRow.from_row(r) for r in rows]
        if statuses is not None:
            found = [r for r in found if r.status in statuses]
        return found

    def item(self, item_id: str, *, with_input: bool = True) -> ItemRow:
        """Return the item ``item_id``; a unique prefix of the id (at least 6 characters),
        case-insensitive, is enough.

        This is how every command finds the item it is given; one that only shows the item
        (``bees item show``) passes ``with_input=False`` and gets ``input`` empty, unread.

        Raises:
            NotFound: no item.
            Ambiguous: the prefix matches several.
            OwnedElsewhere: not here, but the team's shared record has it and another
                computer runs it (a ``NotFound``; exit 3 like a refusal).
        """
        wanted = item_id.strip().upper()
        columns = "*" if with_input else ", ".join(SHOWN_COLUMNS)
        with self._connect() as db:
            row = db.execute(f"SELECT {columns} FROM items WHERE id = ?", (wanted,)).fetchone()
            if row is None and len(wanted) >= 6:
                rows = db.execute(
                    f"SELECT {columns} FROM items WHERE id LIKE ? ORDER BY id", (wanted + "%",)
                ).fetchall()
                if len(rows) > 1:
                    raise Ambiguous(f"{item_id!r} matches {len(rows)} items",
                                   hint="give more of the id")
                row = rows[0] if rows else None
            if row is None:
                refuse_team_item(db, wanted)
        if row is None:
            raise NotFound(f"no work item {item_id!r} on this computer",
                           hint="`bees status` lists this computer's items")
        return ItemRow.from_row(row)

    def events(self, item_id: str) -> list[Event]:
        """Return the item's history, oldest first."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT seq, at, kind, stage, round, data, computer FROM events"
                " WHERE item_id = ? ORDER BY seq", (item_id,)
            ).fetchall()
        return [Event(r["seq"], r["at"], r["kind"], r["stage"], r["round"], json.loads(r["data"]),
                      r["computer"]) for r in rows]

def _not_a_record(path: Path, error: sqlite3.DatabaseError) -> BeesError:
    """The error of a ``record.db`` SQLite cannot read: an I/O failure on a named file
    (code ``io``, exit 1), with how to start afresh."""
    return IoFailure(
        f"{path} is not a Bees record ({error})",
        hint=f"move it aside (mv {path} {path}.bad) and Bees starts an empty one; the next "
        "`bees run` rebuilds the items whose runs the engine (temporal.db beside it) still has")


def item_journal(item_id: str) -> list[dict[str, Any]]:
    """Return the journal of item ``item_id`` in this computer's local record (see
    :meth:`LocalRecord.journal`); the checkpoint of a handover carries it."""
    return open_record().journal(item_id)


def open_record() -> LocalRecord:
    """Return this computer's local record (``<data dir>/record.db``)."""
    from bees_cli.machine.paths import data_dir

    return LocalRecord(data_dir() / "record.db")


def human_since(iso: str, now: datetime | None = None) -> str:
    """Return how long ago ``iso`` (UTC, as :func:`now_utc` writes it) was: ``"5s ago"``,
    ``"2m ago"``, ``"3h ago"``, ``"4d ago"``."""
    then = parse_utc(iso)
    seconds = max(0, int(((now or utc_now()) - then).total_seconds()))
    if seconds < 60:
        return f"{seconds}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    if seconds < 86400:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"
