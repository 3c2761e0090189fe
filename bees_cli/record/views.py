"""What ``bees item show --json`` prints, as typed models, and its generated JSON Schema.

Run ``python -m bees_cli.record.views [DIR]`` to write ``item-show.json``; DIR defaults to
``./schemas/output`` (beside the workspace schemas, STYLE.md habit 6).
``tests/record/test_views.py`` checks the committed file is current and that real output
validates against it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bees_cli.record.events import EventBase, HistoryEvent, parse_event_json
from bees_cli.record.pieces import Piece
from bees_cli.record.states import Status, WaitKind


class ItemView(BaseModel):
    """One item of the local record as ``--json`` shows it (``ItemRow.to_json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    item_id: str
    """The same id again, under the name ``bees approvals --json`` uses."""
    process: str
    title: str
    workspace: str
    run_folder: str
    stage: str | None
    status: Status
    status_text: str
    """The status as people read it (``waiting: REASON``…)."""
    reason: str | None
    wait: WaitKind | None
    """Why it waits, when its writer said so."""
    agent: str | None
    since: str
    created: str
    """When the item was first created (on the computer that created it, its clock)."""
    created_on: str | None
    """The name of the computer that created it (this one, or the one that handed it over)."""


class ModelUsage(BaseModel):
    """What one model stage used, from its transcript (issue 13, point 8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: str
    model: str
    turns: int
    tokens_in: int
    tokens_out: int
    seconds: float
    cost: float | None = None
    """Estimated from the agent's declared prices; None when it declares none."""


class ItemShow(BaseModel):
    """``bees item show --json``: the item, its typed history, its logs, journal, approvals."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: ItemView
    since_human: str
    """How long ago ``item.since`` was: ``5s ago``, ``2m ago``…"""
    history: list[HistoryEvent]
    """Every fact, oldest first (one model per ``kind``)."""
    logs: list[str]
    """Each stage attempt's stdout and stderr files."""
    engine_log: str
    journal: list[dict[str, Any]]
    """Its add-on action runs (the engine's ``JournalEntry`` as JSON)."""
    approvals: list[dict[str, Any]]
    """Every approval request, any status (the engine's ``ApprovalRequest`` as JSON)."""
    models: list[ModelUsage] = Field(default_factory=list)
    """Each model stage's model, turns, tokens in and out, and estimated cost."""
    pieces: list[Piece] = Field(default_factory=list)
    """Work its agents handed to other agents (issue 14), in the order handed out."""

    @field_validator("history", mode="before")
    @classmethod
    def _typed(cls, value: Any) -> Any:
        """Read each fact given as JSON with :func:`parse_event_json` (never fails on one)."""
        if not isinstance(value, list):
            return value
        return [parse_event_json(e) if isinstance(e, dict) else e for e in value]

    def events(self) -> list[EventBase]:
        """Return the history as :class:`~bees_cli.record.events.EventBase` models."""
        return list(self.history)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON ``bees item show --json`` prints."""
        return self.model_dump(mode="json", by_alias=True)


def piece_tree(pieces: list[Piece]) -> list[str]:
    """Return the pieces as ``bees item show`` draws them: under their stage (and round), each
    piece under the piece that handed it out, with its agent, pick reason, status and what it
    used (tokens or exit code).

    Example line: ``    r1-a1-p1  alpha (named by the caller)  finished  exit 0``.
    """
    lines: list[str] = []
    stages: list[tuple[str, int]] = list(dict.fromkeys((p.stage, p.round) for p in pieces))
    for stage, round_ in stages:
        lines.append(f"  {stage} round {round_}")
        mine = [p for p in pieces if (p.stage, p.round) == (stage, round_)]

        def draw(parent: str | None, depth: int, mine: list[Piece] = mine) -> None:
            for piece in (p for p in mine if p.parent == parent):
                status = str(piece.status) + (f": {piece.reason}" if piece.reason else "")
                lines.append(f"{'  ' * (depth + 1)}{piece.piece}  {piece.agent or piece.named}"
                             f" ({piece.pick_reason or 'not picked yet'})  {status}  "
                             f"{piece.usage()}")
                draw(piece.piece, depth + 1)

        draw(None, 1)
    return lines


SCHEMA_FILES: dict[str, type[BaseModel]] = {"item-show.json": ItemShow}
"""File name of each command output schema → the model it describes."""


def generate() -> dict[str, str]:
    """Return file name → JSON Schema text (2-space indent, trailing newline)."""
    out: dict[str, str] = {}
    for name, model in SCHEMA_FILES.items():
        schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                  **model.model_json_schema(by_alias=True, mode="serialization")}
        out[name] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def main(argv: list[str]) -> None:
    """Write every output schema into ``argv[0]`` (default ``schemas/output``)."""
    folder = Path(argv[0] if argv else "schemas/output")
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in generate().items():
        (folder / name).write_text(text, encoding="utf-8")
        print(folder / name)


if __name__ == "__main__":
    main(sys.argv[1:])
