"""Facts of pieces (issue 14): handed out, its agent picked, waiting, and how it ended."""

from __future__ import annotations

from typing import Literal

from bees_cli.record.event_base import EventBase


class PieceStarted(EventBase):
    """An agent handed a piece of its stage to another agent (``named``)."""

    kind: Literal["piece_started"] = "piece_started"
    piece: str
    parent: str | None = None
    caller: str | None = None
    named: str | None = None
    task: str = ""
    depth: int = 1

    def render(self) -> str:
        by = f"piece {self.parent}" if self.parent else "the stage"
        return self.where() + (f"piece {self.piece} handed to {self.named or '?'} by "
                               f"{self.caller or '?'} ({by}, depth {self.depth}): {self.task}")


class PiecePicked(EventBase):
    """The piece's agent was chosen (the stage's order, the caller's named agent first)."""

    kind: Literal["piece_picked"] = "piece_picked"
    piece: str
    agent: str | None = None
    reason: str | None = None

    def render(self) -> str:
        return self.where() + f"piece {self.piece}: picked {self.agent or '?'} ({self.reason})"


class PieceWaiting(EventBase):
    """The piece waits: its eligibility check failed or its agent is busy (re-checked)."""

    kind: Literal["piece_waiting"] = "piece_waiting"
    piece: str
    reason: str | None = None

    def render(self) -> str:
        return self.where() + f"piece {self.piece} waits: {self.reason}"


class _PieceEnd(EventBase):
    piece: str
    agent: str | None = None
    reason: str | None = None

    def render(self) -> str:
        word = self.kind.removeprefix("piece_")
        why = f": {self.reason}" if self.reason else ""
        return self.where() + f"piece {self.piece} ({self.agent or '?'}) {word}{why}"


class PieceFinished(_PieceEnd):
    """The piece's agent finished; its result went back to the caller."""

    kind: Literal["piece_finished"] = "piece_finished"


class PieceFailed(_PieceEnd):
    """The piece failed; the caller's tool call failed with the reason."""

    kind: Literal["piece_failed"] = "piece_failed"


class PieceStopped(_PieceEnd):
    """The piece was stopped with its run."""

    kind: Literal["piece_stopped"] = "piece_stopped"
