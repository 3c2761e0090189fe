"""``--json`` documents of requests waiting for a person: ``bees approvals``, approve, deny."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, JsonValue

from bees_cli.cli.json_models.base import DISPLAY_KEYS, Out, Part
from bees_cli.record.views import UtcTime


class ToolCallOut(Part):
    """One tool call a held finish's stage made: ``tool``, its ``input``, its ``outcome``
    (``ran``, ``journal``, ``failed``, ``refused``, ``not_run``)."""

    tool: str
    input: JsonValue
    outcome: str | None = None


class ApprovalOut(Part):
    """One request waiting for a person (``request_id`` is what ``--action`` takes)."""

    request_id: int
    item_id: str
    title: str
    process: str
    stage: str
    round: int
    action: str | None
    kind: str
    summary: str
    input: JsonValue = Field(description="The held action's input as the agent gave it (an "
                             "object for an add-on action; null for a stage's finish), each "
                             "field whole; past 64,000 characters, long texts are shortened.")
    digest: str | None = None
    status: str
    asked_at: UtcTime
    interrupted_at: UtcTime | None = None
    """An action that may already have run: when its intent was written, with no result."""
    final_answer: str | None = None
    """A held finish: the text the stage's model agent ended with (null: an action, or a
    command agent's stage)."""
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    """A held finish: the tools its stage round's latest attempt called, in order."""
    tools_not_called: list[str] = Field(default_factory=list)
    """A held finish: the agent's tools it never called."""



def approval_out(row: dict[str, Any]) -> ApprovalOut:
    """Return one ``bees approvals --json`` row of the use case's row (the request's ``id``
    is ``request_id``; who decided, when and why stay out: it still waits; what waits is
    ``action`` (null: the stage's finish), ``kind``, ``summary`` and ``input``, not the text
    view's one line ``what``; ``input`` is the JSON value itself, not its text: issue 23,
    point 8)."""
    from bees_cli.usecases.approvals import request_input

    data = {k: v for k, v in row.items()
            if k not in DISPLAY_KEYS | {"who", "at", "reason", "answer", "edited_input"}}
    return ApprovalOut.model_validate({"request_id": row["id"], **data,
                                       "input": request_input(row.get("input"))})


class ApprovalsOut(Out):
    """``bees approvals``, and ``bees approvals show ITEM`` (that item's requests)."""

    approvals: list[ApprovalOut]


class DecisionOut(Out):
    """``bees approve`` and ``bees deny``: the requests decided now, or ``queued`` for the
    next ``bees run``."""

    item_id: str
    decision: Literal["approved", "denied"]
    who: str
    at: UtcTime
    decided: list[int]
    queued: bool
    input: JsonValue = Field(default=None, description="The corrected input approved instead "
                             "of the agent's (bees approve --input): what the action runs "
                             "with; null: approved as asked, or a denial.")
