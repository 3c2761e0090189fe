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
PATH_CHARS = 200
"""Longest path a file tool's schema allows (a grammar-following model stops there)."""
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

SCHEMA_TOKENS = 40
"""Tokens of a reply kept for the JSON around its strings (keys, quotes, brackets)."""
MAX_COMMENTS = 3
"""At most this many comments in a verdict whose reply is bounded."""


def _bounded(reply_tokens: int | None) -> int | None:
    """Return the longest string (characters) that fits a reply of ``reply_tokens`` tokens
    with its JSON around it (a token is at least one character), or None: unbounded."""
    if reply_tokens is None:
        return None
    return max(1, reply_tokens - SCHEMA_TOKENS)


def verdict_schema(reply_tokens: int | None = None) -> dict[str, Any]:
    """Return :data:`VERDICT_SCHEMA`, its comments bounded so the verdict fits a reply of
    ``reply_tokens`` (None: unbounded): a grammar-following server always closes it."""
    chars = _bounded(reply_tokens)
    if chars is None:
        return VERDICT_SCHEMA
    comment = {"type": "string", "maxLength": max(1, chars // MAX_COMMENTS - 4)}
    return {**VERDICT_SCHEMA, "properties": {
        **VERDICT_SCHEMA["properties"],
        "comments": {"type": "array", "items": comment, "maxItems": MAX_COMMENTS}}}


def final_schema(reply_tokens: int | None = None) -> dict[str, Any]:
    """Return json mode's final-answer branch, its text bounded to fit ``reply_tokens``."""
    chars = _bounded(reply_tokens)
    text: dict[str, Any] = {"type": "string"}
    if chars is not None:
        text["maxLength"] = chars
    return {"type": "object", "properties": {"final": text}, "required": ["final"],
            "additionalProperties": False}


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
    path = {"type": "string", "maxLength": PATH_CHARS,
            "description": "a relative path inside the folder"}
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


def step_schema(tools: list[ToolDef], *, review: bool, reply_tokens: int | None = None,
                final: bool = True) -> dict[str, Any]:
    """Return the JSON Schema of one step in json mode: one branch per tool (its name fixed,
    its arguments following its input schema, so a grammar-constrained model cannot get
    them wrong), and the final answer (a review: its verdict), its strings bounded to fit
    a reply of ``reply_tokens``; ``final`` False leaves the final answer out (required
    tools not called yet)."""
    branches: list[dict[str, Any]] = [
        {"type": "object",
         "properties": {"tool": {"const": t.function.name}, "arguments": t.function.parameters},
         "required": ["tool", "arguments"], "additionalProperties": False}
        for t in tools]
    if final or not branches:
        branches.append(verdict_schema(reply_tokens) if review else final_schema(reply_tokens))
    return {"anyOf": branches}


def response_format(*, review: bool, json_mode: bool, tools: list[ToolDef] | None = None,
                    reply_tokens: int | None = None, final: bool = True) -> ResponseFormat | None:
    """Return what the next answer must follow: a step (json mode, see :func:`step_schema`),
    a verdict (a review's final answer in native mode), or None (free text or tool calls)."""
    if json_mode:
        return ResponseFormat.for_schema("step", step_schema(
            tools or [], review=review, reply_tokens=reply_tokens, final=final))
    if review:
        return ResponseFormat.for_schema("verdict", verdict_schema(reply_tokens))
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


def cut_reply_problem(max_reply_tokens: int | None, agent: str) -> str:
    """Say that the model's reply stopped at its token limit before its JSON closed, and
    which setting of which agent file to raise (``runner.max_reply_tokens``; unset, the
    server's own limit cut it)."""
    if max_reply_tokens is None:
        return ("the model's reply was cut at the server's reply limit before its JSON "
                f"closed: set max_reply_tokens in agents/{agent}.yaml")
    return (f"the model's reply was cut at max_reply_tokens ({max_reply_tokens}) before its "
            f"JSON closed: raise max_reply_tokens in agents/{agent}.yaml")


def _unread(response: ChatResponse, error: ModelAnswerInvalid, cut: str | None) -> Read:
    """An answer whose JSON did not parse: ``cut`` when the server cut it for length (the
    cause, and its cure), else the parse error."""
    if cut is not None and response.cut_for_length:
        return Read(kind="invalid", problem=cut)
    return Read(kind="invalid", problem=str(error))


def read_step(response: ChatResponse, *, review: bool, json_mode: bool,
              offered: set[str], turn: int, cut: str | None = None) -> Read:
    """Read the model's answer as its next step.

    Args:
        response: the model's answer.
        review: the stage is a review (its final answer is a verdict).
        json_mode: the agent's ``tool_mode`` is ``json``.
        offered: the function names offered (an unknown name is a problem told back once).
        turn: the turn number (makes call ids for json mode).
        cut: what to say when the server cut the reply for length (``finish_reason``
            ``length``) and its JSON did not parse (:func:`cut_reply_problem`); None: the
            parse error is said.

    Returns:
        The step; ``invalid`` with the problem when the answer is not what was asked.
    """
    message = response.message
    if json_mode:
        return _json_step(response, review=review, offered=offered, turn=turn, cut=cut)
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
            return _unread(response, error, cut)
        return Read(kind="verdict", verdict=verdict.verdict, comments=list(verdict.comments))
    return Read(kind="final", text=message.content or "")


def _json_step(response: ChatResponse, *, review: bool, offered: set[str], turn: int,
               cut: str | None) -> Read:
    try:
        value = response.json_content()
    except ModelAnswerInvalid as error:
        return _unread(response, error, cut)
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
        # the schema offered these names only: another (a tool not offered, or a required
        # one already called) is an invalid step, told back once, never the gate's to refuse
        function = step.tool if step.tool in offered else function_name(step.tool)
        if function not in offered:
            names = ", ".join(sorted(offered)) or "none"
            return Read(kind="invalid", problem=f"the step names tool {step.tool!r}, which "
                        f"is not offered at this step (offered: {names})")
        return Read(kind="tools", calls=[_call(f"step-{turn}", function, step.arguments, None,
                                               offered)])
    if step.final is not None and not review:
        return Read(kind="final", text=step.final)
    wanted = '{"verdict": ..., "comments": [...]}' if review else '{"final": "..."}'
    return Read(kind="invalid", problem=f"the answer is neither a tool call nor {wanted}")


def not_called(required: list[str], called: set[str]) -> list[str]:
    """Return the tools of ``required`` (``runner.required_tools``, ``ADDON.ACTION``) not in
    ``called`` (the tools whose call ran this attempt: a refused, denied or turned-down call
    does not count), in their order: a final answer before them is not taken (issue 26,
    point 3)."""
    return [tool for tool in required if tool not in called]


def told_not_called(missing: list[str]) -> str:
    """Return what the model is told once when its final answer came before ``missing``
    (``you have not called mail.send; call it before your final answer``)."""
    it = "it" if len(missing) == 1 else "each"
    return f"you have not called {', '.join(missing)}; call {it} before your final answer"


def failed_not_called(missing: list[str]) -> str:
    """Return the stage's reason when the final answer still came before ``missing`` after
    the model was told once."""
    were = "was" if len(missing) == 1 else "were"
    return (f"the final answer came before {', '.join(missing)} {were} called "
            "(runner.required_tools), also after the model was told once")


def opening(*, instructions: str, title: str, stage: str, kind: str, folders: list[str],
            previous: dict[str, str], comments: list[str], tools_text: str | None,
            attached: dict[str, str] | None = None) -> list[Message]:
    """Return the conversation's first two messages: the agent's instructions, and the task.

    ``tools_text`` lists the tools and their input schemas in the system message (json
    mode; empty: json mode with no tool offered, so only the answer is asked for; None:
    native mode); ``attached`` gives files' text in the task, by ``FOLDER/FILE`` (the
    agent's ``attach``).
    """
    system = instructions.strip() or "You are a careful worker."
    if tools_text is not None:
        final = ('{"verdict": "approve"|"changes_requested", "comments": [...]}'
                 if kind == "review" else '{"final": TEXT}')
        if tools_text:
            system += ("\n\nAnswer each step with one JSON object: "
                       '{"tool": NAME, "arguments": {...}} to use a tool, or '
                       + final + " when done. Tools:\n" + tools_text)
        else:
            system += "\n\nAnswer with one JSON object: " + final
    task = [f"Work item: {title}", f"Stage: {stage} ({kind})",
            f"Folders you may use: {', '.join(folders)}"]
    if previous:
        task.append("Earlier stages' folders: " + ", ".join(previous))
    for name, text in (attached or {}).items():
        task.append(f"--- {name} ---\n{text.strip()}\n--- end of {name} ---")
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
