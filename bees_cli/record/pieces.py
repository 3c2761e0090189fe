"""The local record's pieces (work an agent handed to another agent): the typed model and the
``pieces`` table, a part of :class:`~bees_cli.record.local.LocalRecord`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bees_cli.record.connected import Connected, now_utc


class PieceStatus(StrEnum):
    """Where a piece is (a closed set; the ``reason`` beside it is for people)."""

    WAITING = "waiting"
    """Not running yet: its eligibility check or its agent's slot waits (re-checked every 15 s);
    or its model call waits for its next try (``reason``: ``rate limited by SERVER until
    14:05``, ``retrying model call, try 2 of 5``)."""
    RUNNING = "running"
    """Its agent works (``reason``, when set: it tries a failed model call again)."""
    FINISHED = "finished"
    """Its agent finished: ``result`` holds its answer and files."""
    FAILED = "failed"
    """It failed (``reason``); its caller's tool call failed with that reason."""
    STOPPED = "stopped"
    """It was stopped with its run (a cancel or a relinquish) before it finished."""


LIVE_STATUSES = frozenset({PieceStatus.WAITING, PieceStatus.RUNNING})
"""Statuses of a piece that has not ended (``bees status`` counts them)."""

END_STATUSES = frozenset({PieceStatus.FINISHED, PieceStatus.FAILED, PieceStatus.STOPPED})
"""Statuses of a piece that ended."""


class PieceResult(BaseModel):
    """What a finished piece gives back to its caller: its final ``text`` (a model agent's
    answer; a command agent's ``answer.md``, else its stdout) and the ``files`` in its folder
    (paths relative to that folder, sorted)."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    files: list[str] = Field(default_factory=list)


class Piece(BaseModel):
    """One piece of a run (DESIGN.md, Words: piece): a sub-task a stage's agent (or another
    piece's agent) handed to an agent, run as a child workflow with its own folder.

    Attributes:
        item_id: the work item.
        piece: its name, ``rR-aA-pN`` (:func:`~bees_cli.agents.pieces.piece_name`); unique
            within the stage.
        stage, round, attempt: the caller's stage, its round and the stage attempt that
            handed the piece out.
        seq: its number among the pieces of that stage attempt (from 1).
        parent: the piece that handed it out, or None when the stage's agent did.
        depth: 1 when the stage's agent handed it out, the parent's depth + 1 otherwise.
        chain: the callers' agents, the stage's agent first, the caller last (a cycle check).
        named: the agent the caller asked for.
        agent, pick_reason: the agent chosen (the stage's order, ``named`` first) and why;
            None until chosen.
        task: what the caller asked, in words.
        input: the caller's input object (JSON).
        ask_digest: :func:`~bees_cli.agents.pieces.ask_digest` of (named, task, input).
        status: :class:`PieceStatus`; ``reason`` says why it waits or failed.
        result: what it gave back (finished pieces).
        exit_code: a command agent's exit status; ``prompt_tokens`` and
            ``completion_tokens``: a model agent's tokens (None: not that kind or not run).
        restart_stage: the stage the piece restarts at after a handover (its caller's stage,
            which restarts from the top); ``restart_piece``: the sub-task to restart, this
            piece's name (None once it finished: it is answered from ``result``).
        workflow_id: its Temporal workflow's id; ``folder``: its folder, absolute.
        started, ended: UTC text (:func:`bees_cli.utc.format_utc`).
    """

    model_config = ConfigDict(extra="ignore")

    item_id: str
    piece: str
    stage: str
    round: int = 1
    attempt: int = 1
    seq: int
    parent: str | None = None
    depth: int = 1
    chain: list[str] = Field(default_factory=list)
    named: str
    agent: str | None = None
    pick_reason: str | None = None
    task: str
    input: Any = Field(default_factory=dict)
    ask_digest: str
    status: PieceStatus = PieceStatus.WAITING
    reason: str | None = None
    result: PieceResult | None = None
    exit_code: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    restart_stage: str | None = None
    restart_piece: str | None = None
    workflow_id: str
    folder: str
    started: str | None = None
    ended: str | None = None

    @property
    def live(self) -> bool:
        """True while the piece has not ended (waiting or running)."""
        return self.status in LIVE_STATUSES

    def usage(self) -> str:
        """Return what it used, for ``bees item show``: ``in 120 / out 40 tokens``,
        ``exit 0``, or ``-``."""
        if self.prompt_tokens is not None or self.completion_tokens is not None:
            return f"in {self.prompt_tokens or 0} / out {self.completion_tokens or 0} tokens"
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        return "-"


class PiecesPart(Connected):
    """The ``pieces`` table (version 10): one row per piece, its whole model as JSON beside the
    columns the look-ups use."""

    def put_piece(self, piece: Piece) -> None:
        """Insert or replace the piece's row (keyed by item, stage and piece name); the item
        goes to the shared record's outbox, whose run summary names its pieces."""
        with self._connect() as db:
            _write_piece(db, piece)

    def update_piece(self, item_id: str, stage: str, name: str, **changes: Any) -> Piece:
        """Change fields of a stored piece (validated by :class:`Piece`); return it.

        Raises:
            KeyError: no such piece.
        """
        found = self.piece(item_id, stage, name)
        if found is None:
            raise KeyError(f"{item_id}/{stage}/{name}")
        changed = Piece.model_validate({**found.model_dump(mode="json"), **changes})
        self.put_piece(changed)
        return changed

    def update_live_piece(self, item_id: str, stage: str, name: str,
                          **changes: Any) -> Piece | None:
        """Change fields of a piece that has not ended (waiting or running), in one
        transaction; return it, or None when it ended or is missing (nothing written).

        Why: a piece's check or slot can still be finishing in its thread after the run
        stopped the piece and recorded it ``stopped``; its write must not make the piece
        live again, or an item shows ``done`` beside a piece ``running`` for ever (issue 23,
        point 3). Only the end of a piece moves it out of ``waiting``/``running``.
        """
        with self._connect() as db:
            began = not db.in_transaction  # inside a step: its transaction
            if began:
                db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT data FROM pieces WHERE item_id = ? AND stage = ? AND"
                             " piece = ?", (item_id, stage, name)).fetchone()
            found = None if row is None else Piece.model_validate(json.loads(row["data"]))
            changed = None if found is None or not found.live else Piece.model_validate(
                {**found.model_dump(mode="json"), **changes})
            if changed is not None:
                _write_piece(db, changed)
            if began:
                db.execute("COMMIT")
        return changed

    def piece(self, item_id: str, stage: str, name: str) -> Piece | None:
        """Return one piece, or None."""
        with self._connect() as db:
            row = db.execute("SELECT data FROM pieces WHERE item_id = ? AND stage = ? AND"
                             " piece = ?", (item_id, stage, name)).fetchone()
        return None if row is None else Piece.model_validate(json.loads(row["data"]))

    def pieces(self, item_id: str, stage: str | None = None) -> list[Piece]:
        """Return the item's pieces (of one stage, or all), in the order they were handed
        out (stage, round, attempt, number)."""
        query = "SELECT data FROM pieces WHERE item_id = ?"
        args: list[Any] = [item_id]
        if stage is not None:
            query += " AND stage = ?"
            args.append(stage)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY stage, round, attempt, seq", args).fetchall()
        return [Piece.model_validate(json.loads(r["data"])) for r in rows]

    def live_pieces(self) -> dict[str, int]:
        """Return item id → how many of its pieces wait or run (items with none left out)."""
        marks = ", ".join("?" for _ in LIVE_STATUSES)
        with self._connect() as db:
            rows = db.execute(f"SELECT item_id, count(*) AS n FROM pieces WHERE status IN"
                              f" ({marks}) GROUP BY item_id",
                              sorted(str(s) for s in LIVE_STATUSES)).fetchall()
        return {r["item_id"]: int(r["n"]) for r in rows}

    def saved_piece(self, item_id: str, stage: str, digest: str) -> Piece | None:
        """Return the latest finished piece of the item's ``stage`` whose ask has ``digest``
        (:func:`~bees_cli.agents.pieces.ask_digest`), or None: a stage restarted from the top
        that asks the same again is answered from its saved result, not run again."""
        with self._connect() as db:
            row = db.execute(
                "SELECT data FROM pieces WHERE item_id = ? AND stage = ? AND ask_digest = ?"
                " AND status = ? ORDER BY round DESC, attempt DESC, seq DESC LIMIT 1",
                (item_id, stage, digest, str(PieceStatus.FINISHED))).fetchone()
        return None if row is None else Piece.model_validate(json.loads(row["data"]))


def _write_piece(db: sqlite3.Connection, piece: Piece) -> None:
    """Insert or replace the piece's row and put its item in the shared record's outbox."""
    db.execute("INSERT OR REPLACE INTO sync_outbox (item_id, origin) VALUES (?, ?)",
               (piece.item_id, now_utc()))
    db.execute(
        "INSERT OR REPLACE INTO pieces (item_id, stage, piece, round, attempt, seq,"
        " parent, depth, agent, status, ask_digest, data, updated)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (piece.item_id, piece.stage, piece.piece, piece.round, piece.attempt,
         piece.seq, piece.parent, piece.depth, piece.agent, str(piece.status),
         piece.ask_digest, piece.model_dump_json(), now_utc()))


SUMMARY_PIECES = 10
"""At most this many pieces are named in a run summary (the latest; the rest counted)."""


def piece_names(db: sqlite3.Connection, item_ids: Sequence[str]) -> dict[str, list[str]]:
    """Return item id → its pieces of the item's current stage as the shared record's run
    summary names them (``alpha r1-a1-p1 finished``), in the order handed out."""
    found: dict[str, list[str]] = {}
    for item_id in item_ids:
        rows = db.execute(
            "SELECT p.piece, p.agent, p.status, p.data FROM pieces p JOIN items i"
            " ON i.id = p.item_id AND i.stage = p.stage WHERE p.item_id = ?"
            " ORDER BY p.round, p.attempt, p.seq", (item_id,)).fetchall()
        names = [f"{r['agent'] or json.loads(r['data'])['named']} {r['piece']} {r['status']}"
                 for r in rows]
        if len(names) > SUMMARY_PIECES:  # the shared record's fields stay small
            names = [f"{len(names) - SUMMARY_PIECES} earlier", *names[-SUMMARY_PIECES:]]
        if names:
            found[item_id] = names
    return found
