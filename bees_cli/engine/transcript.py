"""A model stage's transcript: ``RUN/logs/STAGE.transcript.jsonl``, and what it used.

One JSON object a line, appended and synced before the activity that wrote it completes:
``opening`` (the first messages), ``reply`` (the model's answer with its tokens, seconds,
model and estimated cost) and ``tool`` (a call and its result), each with its round,
attempt and turn (issue 13, points 2 and 8); while a reply streams, ``partial`` entries
hold its text as it comes (shown only: the ``reply`` counts; issue 26, point 2). It lives
next to the stage's logs, so it travels with a handover.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.agents.pieces import piece_stage
from bees_cli.record.views import ModelUsage

if TYPE_CHECKING:
    from bees_cli.engine.model_models import TurnContext

SUFFIX = ".transcript.jsonl"


def transcript_path(run_folder: str, stage: str) -> Path:
    """Return ``RUN/logs/STAGE.transcript.jsonl`` (next to the stage's logs)."""
    return Path(run_folder) / "logs" / f"{stage}{SUFFIX}"


def transcript_lines(path: Path) -> list[dict[str, Any]]:
    """Return the transcript's entries, oldest first (a torn last line is skipped)."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def append_entry(path: Path, entry: dict[str, Any]) -> None:
    """Append one entry durably (written and synced before the caller goes on)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())


def stage_usage(run_folder: str) -> list[ModelUsage]:
    """Return what each model stage of the run used, by stage name (from its transcript):
    the model, the turns, the tokens in and out, seconds, and the estimated cost (None
    unless the agent declared prices)."""
    folder = Path(run_folder) / "logs"
    if not folder.is_dir():
        return []
    usage = []
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        replies = [e for e in transcript_lines(path) if e.get("kind") == "reply"]
        if not replies:
            continue
        costs = [e.get("cost") for e in replies]
        priced = [float(c) for c in costs if c is not None]
        usage.append(ModelUsage(
            stage=path.name[: -len(SUFFIX)], model=str(replies[-1].get("model") or "?"),
            turns=len(replies),
            tokens_in=sum(int(e.get("prompt_tokens", 0)) for e in replies),
            tokens_out=sum(int(e.get("completion_tokens", 0)) for e in replies),
            seconds=round(sum(float(e.get("seconds", 0.0)) for e in replies), 3),
            cost=None if len(priced) < len(costs) else sum(priced)))
    return usage


def transcript_name(context: TurnContext) -> str:
    """Return the name the agent's transcript is kept under: the stage, or a piece's
    ``STAGE/pieces/PIECE``."""
    return context.stage if context.piece is None else piece_stage(context.stage, context.piece)


def same_entry(entry: dict[str, Any], context: TurnContext, turn: int, kind: str) -> bool:
    """True when transcript ``entry`` is the ``kind`` entry of ``context``'s round, attempt
    and ``turn`` (the one a repeated call finds already written)."""
    return (entry.get("kind"), entry.get("round"), entry.get("attempt"), entry.get("turn")) == (
        kind, context.round, context.attempt, turn)
