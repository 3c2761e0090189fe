"""Inputs and outputs of pieces in the engine: the ``bees.delegate`` update, the ``bees.piece``
child workflow and its activities (issue 14).

They travel through Temporal as JSON and are part of its history: add fields with defaults,
never rename.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from bees_cli.engine.snapshot import LoopView
from bees_cli.record.event_base import EventBase
from bees_cli.why import Reason

PIECE_WORKFLOW = "bees.piece"
"""Temporal workflow type of a piece: a child of the item's run (``bees.item``)."""
DELEGATE_UPDATE = "bees.delegate"
"""Update sent to the item's run by ``bees delegate`` (and a model agent's ``delegate``
tool): hand a sub-task to another agent; returns at once with the piece."""
PIECES_QUERY = "bees.pieces"
"""Query answered by the item's run: its pieces as it knows them (:class:`PieceView`)."""

PIECE_ELIGIBLE_ACTIVITY = "bees.piece_eligible"
"""Activity: check eligibility and choose a piece's agent, failing (retryably) until it can
start here (re-checked every 15 s, as a stage)."""
PIECE_SLOT_ACTIVITY = "bees.piece_slot"
"""Activity: take a slot of a piece's capped agent, failing (retryably) until one frees or
ten minutes passed (as a stage)."""
PIECE_RUN_ACTIVITY = "bees.piece_run"
"""Activity: run a piece's command agent in the piece's folder, heartbeating."""
PIECE_RECORD_ACTIVITY = "bees.piece_record"
"""Activity: write a piece's row (and one fact of the item's history) to the local record."""

PieceState = Literal["waiting", "running", "finished", "failed", "stopped"]
"""A piece's status (the values of :class:`~bees_cli.record.pieces.PieceStatus`)."""


class DelegateAsk(BaseModel):
    """Input of ``bees.delegate``: the caller (the stage's agent, or the agent of piece
    ``caller_piece``) in ``stage`` (its ``round`` and ``attempt``) hands ``task`` with
    ``input`` (a JSON value) to ``agent``."""

    stage: str
    round: int = 1
    attempt: int = 1
    caller_agent: str
    caller_piece: str | None = None
    agent: str
    task: str
    input: Any = Field(default_factory=dict)


class DelegateAnswer(BaseModel):
    """Answer of ``bees.delegate``: the piece started (``piece``, its ``workflow_id``,
    ``folder`` and ``depth``); the caller waits for its end in the local record."""

    piece: str
    workflow_id: str
    folder: str
    depth: int


class PieceInput(BaseModel):
    """Input of the ``bees.piece`` workflow (its id is ``workflow_id``).

    ``piece`` is its name (``rR-aA-pN``); ``parent`` the piece that handed it out (None: the
    stage's agent); ``chain`` the callers' agents, the stage's first; ``named`` the agent the
    caller asked for; ``folders`` and ``previous`` what the stage has (linked folders and
    earlier stages' outputs); ``ask_digest`` identifies the ask (a saved result answers it).
    """

    item_id: str
    title: str
    run_folder: str
    snapshot_digest: str | None = None
    stage: str
    round: int = 1
    attempt: int = 1
    seq: int
    piece: str
    parent: str | None = None
    depth: int = 1
    chain: list[str] = Field(default_factory=list)
    named: str
    task: str
    input: Any = Field(default_factory=dict)
    ask_digest: str
    workflow_id: str
    folder: str
    folders: dict[str, str] = Field(default_factory=dict)
    previous: dict[str, str] = Field(default_factory=dict)


class PieceCheckOutput(BaseModel):
    """Output of ``bees.piece_eligible``: the chosen ``agent`` and why (``pick_reason``,
    ``pick`` as :meth:`~bees_cli.agents.selection.Pick.to_json`), or the ``reasons`` to
    wait."""

    ok: bool
    reasons: list[str] = Field(default_factory=list)
    agent: str | None = None
    pick_reason: str | None = None
    pick: dict[str, Any] | None = None
    folders: dict[str, str] = Field(default_factory=dict)
    """The folders the item reads, name → path here (as a stage's check gives them)."""
    cap: int | None = None
    """The agent's ``max_concurrent_runs`` (None: no cap, no slot to take)."""
    loop: LoopView | None = None
    """A model agent's loop settings (None: a command agent)."""


class PieceRunInput(BaseModel):
    """Input of ``bees.piece_run``: run the piece's command ``agent``."""

    piece: PieceInput
    agent: str
    folders: dict[str, str] = Field(default_factory=dict)


class PieceOutput(BaseModel):
    """How a piece ended (the result of ``bees.piece_run``, of the model loop, and of the
    ``bees.piece`` workflow): ``status`` ``finished`` (``text`` and ``files`` of its folder)
    or ``failed`` (``reason``; ``why``: as its code, None in an output an older history
    carries); a command agent's ``exit_code``, a model agent's tokens."""

    status: PieceState
    reason: str | None = None
    why: Reason | None = None
    agent: str | None = None
    text: str = ""
    files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class PieceRecordInput(BaseModel):
    """Input of ``bees.piece_record``: write the piece (``start``: its whole row, when it is
    handed out) or change fields of its row (``changes``: status, agent, pick_reason,
    reason, result…), and add the fact ``kind`` (data ``data``) to the item's history once
    (``key``)."""

    item_id: str
    stage: str
    piece: str
    start: PieceInput | None = None
    changes: dict[str, Any] = Field(default_factory=dict)
    kind: str
    key: str
    round: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, fact: EventBase, *, item_id: str, piece: str, key: str,
           start: PieceInput | None = None, changes: dict[str, Any] | None = None) -> Self:
        """Return the input that writes the piece's row and stores ``fact`` (a piece's model
        of :mod:`bees_cli.record.events_pieces`): the one place a piece's fact becomes
        ``kind`` and ``data`` (its fields set, reasons as codes), as
        :meth:`~bees_cli.engine.models.RecordInput.of` does for the item's facts."""
        assert fact.stage is not None, "a piece's fact has its stage"
        return cls(item_id=item_id, stage=fact.stage, piece=piece, start=start,
                   changes=dict(changes or {}), kind=fact.kind, key=key, round=fact.round,
                   data=fact.stored_data())


class PieceView(BaseModel):
    """One piece as the item's run holds it (the ``bees.pieces`` query, and the run's
    memory): enough to check a caller, refuse a cycle, and stop it with the run."""

    piece: str
    stage: str
    round: int = 1
    attempt: int = 1
    parent: str | None = None
    depth: int = 1
    chain: list[str] = Field(default_factory=list)
    named: str
    agent: str | None = None
    status: PieceState = "waiting"
    workflow_id: str
    restart_stage: str | None = None
