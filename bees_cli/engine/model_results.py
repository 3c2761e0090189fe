"""What a model activity writes besides the reply it saves: a transcript entry, the stage's
result file (``answer.md`` or ``verdict.json``), and a reply that asked for more tool calls
than one reply may, turned into an invalid step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bees_cli.agents.chat_wire import ChatResponse
from bees_cli.engine.model_models import ModelStep, TurnContext
from bees_cli.utc import format_utc, utc_now

ANSWER_FILE = "answer.md"
"""A work stage's final answer, in its output folder."""


def too_many_calls(response: ChatResponse, asked: int, most: int, seconds: float,
                   from_transcript: bool) -> ModelStep:
    """Return a reply asking for more than ``most`` tool calls as an invalid step: none of
    its calls runs; the loop tells the model why once, then fails the stage with it (issue
    26, point 1). The assistant message keeps its text, not its calls, so the conversation
    sent next stays one the protocol accepts (no call without a result)."""
    return ModelStep(
        kind="invalid", message={"role": "assistant", "content": response.message.content
                                 or ""},
        problem=f"the reply asked for {asked} tool calls, more than the {most} one "
        "reply may ask (runner.max_tool_calls); none of them ran",
        prompt_tokens=response.usage.prompt_tokens,
        completion_tokens=response.usage.completion_tokens, seconds=seconds,
        from_transcript=from_transcript)


def transcript_entry(context: TurnContext, turn: int, kind: str, **data: Any) -> dict[str, Any]:
    """Return a transcript line of turn ``turn`` of the stage round and attempt of
    ``context``: its ``kind`` (``opening``, ``reply``, ``tool``…), the time (UTC) and
    ``data``."""
    return {"kind": kind, "round": context.round, "attempt": context.attempt, "turn": turn,
            "at": format_utc(utc_now()), **data}


def write_result(folder: Path, kind: str, text: str | None, verdict: str | None,
                 comments: list[str]) -> None:
    """Write a finished stage's result into its output ``folder``: a ``final`` answer's
    ``text`` as :data:`ANSWER_FILE`, else a review's ``verdict.json`` (verdict and
    comments)."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "final":
        (folder / ANSWER_FILE).write_text(text or "", encoding="utf-8")
    else:
        (folder / "verdict.json").write_text(
            json.dumps({"verdict": verdict, "comments": comments}), encoding="utf-8")
