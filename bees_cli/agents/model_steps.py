"""What a model agent is offered and how its answers are read: tools, schemas, the next step.

Pure (no I/O): tool names map ``ADDON.ACTION`` ↔ ``ADDON__ACTION`` (the protocol allows only
``[a-zA-Z0-9_-]`` in a function name); a review answers a verdict through ``response_format``
JSON Schema; ``tool_mode: json`` asks each step as ``{"tool", "arguments"}`` or ``{"final"}``
(issue 13, points 3, 4 and 5).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from bees_cli.agents.chat_wire import (
    ChatResponse,
    FunctionDef,
    Message,
    ResponseFormat,
    ToolDef,
)
from bees_cli.errors import ModelAnswerInvalid, ModelToolCallInvalid

READ_FILE = "read_file"
WRITE_FILE = "write_file"
BUILT_INS = (READ_FILE, WRITE_FILE)
"""The two built-in tools (files inside the stage's folder and the item's linked folders)."""
SEPARATOR = "__"
"""Stands for the ``.`` of ``ADDON.ACTION`` in a function name."""

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["approve", "changes_requested"]},
        "comments": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["verdict", "comments"],
    "additionalProperties": False,
}
"""A review's answer: approve, or changes requested with comments."""

STEP_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "object", "properties": {"tool": {"type": "string"},
                                          "arguments": {"type": "object"}},
         "required": ["tool", "arguments"], "additionalProperties": False},
        {"type": "object", "properties": {"final": {"type": "string"}},
         "required": ["final"], "additionalProperties": False},
    ]
}
"""One step in ``tool_mode: json``: call a tool, or say the final answer."""


def function_name(tool: str) -> str:
    """Return the protocol's function name of ``tool`` (``mail.send`` → ``mail__send``)."""
    return tool.replace(".", SEPARATOR)


def tool_name(function: str) -> str:
    """Return the tool a function name stands for (``mail__send`` → ``mail.send``)."""
    if function in BUILT_INS:
        return function
    return function.replace(SEPARATOR, ".", 1)


class Verdict(BaseModel):
    """A review's verdict as the model answers it."""

    verdict: Literal["approve", "changes_requested"]
    comments: list[str] = Field(default_factory=list)


class JsonStep(BaseModel):
    """One step of ``tool_mode: json``: ``tool`` with ``arguments``, or ``final``."""

    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    final: str | None = None


def file_tools(folders: list[str]) -> list[ToolDef]:
    """Return the built-in file tools; ``folder`` is one of ``folders`` (default: the
    stage's own folder)."""
    folder = {"type": "string", "enum": folders,
              "description": "which folder (default: this stage's own folder)"}
    path = {"type": "string", "description": "a relative path inside the folder"}
    return [
        ToolDef(function=FunctionDef(
            name=READ_FILE, description="Read a text file.",
            parameters={"type": "object", "properties": {"path": path, "folder": folder},
                        "required": ["path"]})),
        ToolDef(function=FunctionDef(
            name=WRITE_FILE, description="Write a text file (replacing it).",
            parameters={"type": "object", "properties": {
                "path": path, "folder": folder, "content": {"type": "string"}},
                "required": ["path", "content"]})),
    ]


def addon_tool(tool: str, description: str | None, schema: dict[str, Any] | None) -> ToolDef:
    """Return add-on action ``tool`` (``ADDON.ACTION``) as a function with its input schema."""
    return ToolDef(function=FunctionDef(
        name=function_name(tool), description=description or f"add-on action {tool}",
        parameters=schema or {"type": "object", "properties": {}}))


def step_schema(tools: list[ToolDef], *, review: bool) -> dict[str, Any]:
    """Return the JSON Schema of one step in json mode: one branch per tool (its name fixed,
    its arguments following its input schema, so a grammar-constrained model cannot get
    them wrong), and the final answer (a review: its verdict)."""
    branches: list[dict[str, Any]] = [
        {"type": "object",
         "properties": {"tool": {"const": t.function.name}, "arguments": t.function.parameters},
         "required": ["tool", "arguments"], "additionalProperties": False}
        for t in tools]
    branches.append(VERDICT_SCHEMA if review else STEP_SCHEMA["anyOf"][1])
    return {"anyOf": branches}


def response_format(*, review: bool, json_mode: bool,
                    tools: list[ToolDef] | None = None) -> ResponseFormat | None:
    """Return what the next answer must follow: a step (json mode, see :func:`step_schema`),
    a verdict (a review's final answer in native mode), or None (free text or tool calls)."""
    if json_mode:
        return ResponseFormat.for_schema("step", step_schema(tools or [], review=review))
    if review:
        return ResponseFormat.for_schema("verdict", VERDICT_SCHEMA)
    return None


class Read(BaseModel):
    """The model's answer read as one step (the engine's ``ModelStep`` carries it)."""

    kind: Literal["tools", "final", "verdict", "invalid"]
    calls: list[tuple[str, str, dict[str, Any], str | None]] = Field(default_factory=list)
    text: str | None = None
    verdict: str | None = None
    comments: list[str] = Field(default_factory=list)
    problem: str | None = None


def _call(call_id: str, function: str, arguments: dict[str, Any], problem: str | None,
          offered: set[str]) -> tuple[str, str, dict[str, Any], str | None]:
    tool = tool_name(function)
    if problem is None and function not in offered and "." not in tool:
        names = ", ".join(sorted(offered)) or "none"
        problem = f"there is no tool {function!r} (tools: {names})"
    return call_id, tool, arguments, problem


def read_step(response: ChatResponse, *, review: bool, json_mode: bool,
              offered: set[str], turn: int) -> Read:
    """Read the model's answer as its next step.

    Args:
        response: the model's answer.
        review: the stage is a review (its final answer is a verdict).
        json_mode: the agent's ``tool_mode`` is ``json``.
        offered: the function names offered (an unknown name is a problem told back once).
        turn: the turn number (makes call ids for json mode).

    Returns:
        The step; ``invalid`` with the problem when the answer is not what was asked.
    """
    message = response.message
    if json_mode:
        return _json_step(response, review=review, offered=offered, turn=turn)
    if message.tool_calls:
        calls = []
        for call in message.tool_calls:
            try:
                arguments, problem = call.parsed_arguments(), None
            except ModelToolCallInvalid as error:
                arguments, problem = {}, str(error)
            calls.append(_call(call.id, call.function.name, arguments, problem, offered))
        return Read(kind="tools", calls=calls)
    if review:
        try:
            verdict = response.parsed_content(Verdict)
        except ModelAnswerInvalid as error:
            return Read(kind="invalid", problem=str(error))
        return Read(kind="verdict", verdict=verdict.verdict, comments=list(verdict.comments))
    return Read(kind="final", text=message.content or "")


def _json_step(response: ChatResponse, *, review: bool, offered: set[str], turn: int) -> Read:
    try:
        value = response.json_content()
    except ModelAnswerInvalid as error:
        return Read(kind="invalid", problem=str(error))
    if review and isinstance(value, dict) and "verdict" in value:
        try:
            verdict = Verdict.model_validate(value)
        except ValidationError as error:
            return Read(kind="invalid", problem=f"not a valid verdict: {error.errors()[0]['msg']}")
        return Read(kind="verdict", verdict=verdict.verdict, comments=list(verdict.comments))
    try:
        step = JsonStep.model_validate(value)
    except ValidationError as error:
        return Read(kind="invalid", problem=f"not a valid step: {error.errors()[0]['msg']}")
    if step.tool is not None:
        return Read(kind="tools", calls=[_call(f"step-{turn}", step.tool, step.arguments, None,
                                               offered)])
    if step.final is not None and not review:
        return Read(kind="final", text=step.final)
    wanted = '{"verdict": ..., "comments": [...]}' if review else '{"final": "..."}'
    return Read(kind="invalid", problem=f"the answer is neither a tool call nor {wanted}")


def opening(*, instructions: str, title: str, stage: str, kind: str, folders: list[str],
            previous: dict[str, str], comments: list[str], tools_text: str | None) -> list[Message]:
    """Return the conversation's first two messages: the agent's instructions, and the task.

    ``tools_text`` (json mode) lists the tools and their input schemas in the system message.
    """
    system = instructions.strip() or "You are a careful worker."
    if tools_text:
        system += ("\n\nAnswer each step with one JSON object: "
                   '{"tool": NAME, "arguments": {...}} to use a tool, or '
                   + ('{"verdict": "approve"|"changes_requested", "comments": [...]}'
                      if kind == "review" else '{"final": TEXT}')
                   + " when done. Tools:\n" + tools_text)
    task = [f"Work item: {title}", f"Stage: {stage} ({kind})",
            f"Folders you may use: {', '.join(folders)}"]
    if previous:
        task.append("Earlier stages' folders: " + ", ".join(previous))
    if comments:
        task.append("Review comments to address:\n" + "\n".join(f"- {c}" for c in comments))
    if kind == "review":
        task.append("Answer with your verdict: approve, or changes_requested with comments.")
    return [Message(role="system", content=system), Message(role="user", content="\n".join(task))]


def tools_text(tools: list[ToolDef]) -> str:
    """Return ``tools`` as lines ``NAME: DESCRIPTION; arguments SCHEMA`` (json mode)."""
    return "\n".join(
        f"- {t.function.name}: {t.function.description or ''}; arguments "
        f"{json.dumps(t.function.parameters, separators=(',', ':'))}" for t in tools)
