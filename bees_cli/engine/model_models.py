"""Inputs and outputs of the model loop's activities (``bees.model_call``, ``bees.tool_call``).

Part of Temporal's history: fields are only ever added, with defaults (issue 13, point 2).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

MODEL_CALL_ACTIVITY = "bees.model_call"
"""One model call of a model agent's stage (one turn)."""
TOOL_CALL_ACTIVITY = "bees.tool_call"
"""One tool call of a model agent's stage (an add-on action or a built-in file tool)."""

StepKind = Literal["tools", "final", "verdict", "invalid"]


class TurnContext(BaseModel):
    """Which stage, round, attempt and turn a call belongs to, and what the stage knows.

    ``attempt`` is the stage attempt (a person's retry starts a new one); ``turn`` counts the
    model calls of that attempt from 1. Together they key the transcript's saved replies.
    """

    item_id: str
    title: str
    run_folder: str
    stage: str
    round: int
    attempt: int
    agent: str
    folders: dict[str, str] = Field(default_factory=dict)
    previous: dict[str, str] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)
    snapshot_digest: str | None = None
    piece: str | None = None
    """A piece's name (issue 14): the agent works in the piece's folder, with its own
    transcript; None: the stage itself."""
    task: str | None = None
    """A piece's task as its agent reads it."""


class ModelCallInput(BaseModel):
    """Input of ``bees.model_call``: the conversation after the opening (which the activity
    builds from the snapshot: instructions, stage, earlier outputs, comments)."""

    context: TurnContext
    turn: int
    messages: list[dict[str, Any]] = Field(default_factory=list)


class ToolAsk(BaseModel):
    """One tool call the model asked for: its call id, the tool (``ADDON.ACTION`` or a
    built-in), and its arguments; ``problem`` says why it cannot run (told back once)."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    problem: str | None = None
    read: bool = False
    """A read-kind tool (``read_file``, an add-on action or MCP tool of kind ``read``): the
    loop runs it together with the read calls next to it (issue 26, point 7)."""


class ModelStep(BaseModel):
    """Output of ``bees.model_call``: the model's next step, read and checked.

    ``tools``: run ``calls``; ``final``: the work is done (``text``); ``verdict``: a review's
    verdict with ``comments``; ``invalid``: the answer is not what was asked (``problem``).
    ``message`` is the assistant message to append to the conversation. ``missing``: a
    final answer or verdict that came before these of ``runner.required_tools`` ran (not
    written in the stage's folder; the loop tells it back once, then fails the stage).
    """

    kind: StepKind
    message: dict[str, Any]
    calls: list[ToolAsk] = Field(default_factory=list)
    text: str | None = None
    verdict: str | None = None
    comments: list[str] = Field(default_factory=list)
    problem: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    output_dir: str = ""
    from_transcript: bool = False
    missing: list[str] = Field(default_factory=list)
    unmet: str | None = None
    """A final answer of a work stage that did not leave its declared ``output`` (why: ``its
    output summary.json does not exist in the stage's folder``); told back once, then the
    stage fails (issue 26, point 5)."""


class ToolCallInput(BaseModel):
    """Input of ``bees.tool_call``: run one tool for the stage's model agent."""

    context: TurnContext
    turn: int
    call: ToolAsk


class ToolResult(BaseModel):
    """Output of ``bees.tool_call``: the text given back to the model as the tool's result,
    and how it ended: ``ran``, ``journal`` (answered from the journal), ``failed`` (ran and
    failed, or a file tool or piece that failed), ``not_run`` (the action's gate turned it
    down before it ran: an input its schema refuses, a program that cannot start), or
    ``refused`` (refused or denied by a person). Only ``ran``, ``journal`` and ``failed``
    count as called for ``required_tools`` (:data:`CALLED_OUTCOMES`)."""

    content: str
    outcome: Literal["ran", "journal", "refused", "failed", "not_run"] = "ran"


CALLED_OUTCOMES = frozenset({"ran", "journal", "failed"})
"""Outcomes of a tool call that ran (or was answered from the journal): a required tool so
called is not offered again; a refused, denied or not-run call leaves it offered, so the
model may call it again with a corrected input."""
