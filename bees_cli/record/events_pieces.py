"""Facts of pieces (issue 14): handed out, its agent picked, waiting, and how it ended; the
pick an agent choice gives (a stage's too)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bees_cli.record.event_base import EventBase
from bees_cli.record.reasons import (
    EventTier,
    ReasonField,
    Skip,
    read_reasons,
    read_tier,
    tier_words,
)


class PickData(BaseModel):
    """An agent pick (``bees_cli.agents.selection.Pick`` as JSON): ``reason`` is the tier
    that yielded the agent (``stage``: with the ``process`` and ``of_stage`` whose agents
    they are), ``skipped`` each agent looked at and not used, and why (as codes).

    Stored picks give ``reason`` as words (``stage agents of weekly-report.Draft``); they
    are read as their tier (``other``, with the words in ``text``, when none fits)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    agent: str | None = None
    reason: EventTier
    process: str | None = Field(default=None, exclude_if=lambda v: v is None)
    of_stage: str | None = Field(default=None, exclude_if=lambda v: v is None)
    text: str | None = Field(default=None, exclude_if=lambda v: v is None)
    skipped: list[Skip] = Field(default_factory=list)

    _tier = model_validator(mode="before")(read_tier)

    def words(self) -> str:
        """Return the tier as people read it (``stage agents of weekly-report.Draft``)."""
        return tier_words(self.reason, self.process, self.of_stage, self.text)


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
    reason: EventTier | None = None
    """Which tier of agent choice picked it (``caller``: the agent the caller named; stored
    words are read as their tier, see :class:`~bees_cli.record.events.PickData`)."""
    process: str | None = Field(default=None, exclude_if=lambda v: v is None)
    of_stage: str | None = Field(default=None, exclude_if=lambda v: v is None)
    text: str | None = Field(default=None, exclude_if=lambda v: v is None)
    pick: PickData | None = None
    """The whole pick (each agent skipped, and why), as a stage's pick gives it."""

    _tier = model_validator(mode="before")(read_tier)

    def render(self) -> str:
        why = (tier_words(self.reason, self.process, self.of_stage, self.text)
               if self.reason else None)
        return self.where() + f"piece {self.piece}: picked {self.agent or '?'} ({why})"


class PieceWaiting(EventBase):
    """The piece waits: its eligibility check failed or its agent is busy (re-checked)."""

    kind: Literal["piece_waiting"] = "piece_waiting"
    piece: str
    reasons: list[ReasonField] = Field(default_factory=list)
    """Why it waits (stored as one ``reason`` sentence, its reasons joined with ``"; "``)."""

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any) -> Any:
        """Read the stored ``reason`` sentence as its reasons."""
        if isinstance(data, dict) and "reasons" not in data and data.get("reason"):
            return {**data, "reasons": read_reasons(data["reason"])}
        return data

    def render(self) -> str:
        why = "; ".join(r.words() for r in self.reasons) or None
        return self.where() + f"piece {self.piece} waits: {why}"


class _PieceEnd(EventBase):
    piece: str
    agent: str | None = None
    reason: ReasonField | None = None

    def render(self) -> str:
        word = self.kind.removeprefix("piece_")
        why = f": {self.reason.words()}" if self.reason else ""
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
