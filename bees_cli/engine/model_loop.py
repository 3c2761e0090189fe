"""A model agent's stage as workflow code: each model call and each tool call is one activity.

Deterministic like :mod:`~bees_cli.engine.workflows`, which calls :func:`run_model_stage`
for an agent with a model runner: a worker lost between two calls resumes after the last
finished one (issue 13, point 2). Malformed or unknown tool calls and answers that are not
what was asked are told back to the model once; the turn limit and the token budget fail the
stage with the reason (point 7). A final answer before the agent's ``required_tools`` ran is
told back once in either tool mode, and the next one that still lacks them fails the stage
(issue 26, point 3): whether the model was told is the loop's state, rebuilt from the
history by a worker that takes the run over. Read-kind tool calls next to one another in one
reply run at once; every other call runs alone, in the order asked (issue 26, point 7).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import CancelledError as TemporalCancelled

with workflow.unsafe.imports_passed_through():
    from bees_cli.agents.model_steps import failed_not_called, told_not_called
    from bees_cli.engine.model_models import (
        MODEL_CALL_ACTIVITY,
        TOOL_CALL_ACTIVITY,
        ModelCallInput,
        ModelStep,
        ToolAsk,
        ToolCallInput,
        ToolResult,
        TurnContext,
    )
    from bees_cli.engine.models import RECORD_ACTIVITY, RecordInput, StageInput, StageOutput
    from bees_cli.engine.snapshot import LoopView
    from bees_cli.record.events import StageFinished
    from bees_cli.rules import MODEL_CALL_MOST_SECONDS
    from bees_cli.why import Reason

MODEL_LOOP = "model-loop"
"""Patch: an agent with a model runner runs the model loop instead of ``bees.run_stage``."""
OUTPUT_TOLD = "output-told"
"""Patch: a work stage's final answer that did not leave its declared ``output`` is told
back once, then fails the stage (issue 26, point 5). Asked only when that happens."""

REQUIRED_TOOLS_TOLD = "required-tools-told"
"""Patch: a final answer before the required tools ran is told back once, then fails the
stage (older runs finished the stage with it)."""

CONCURRENT_READS = "concurrent-reads"
"""Patch: read-kind tool calls next to one another in one reply run at once (older runs ran
every call one after the other)."""

MODEL_CALL_TIMEOUT = timedelta(seconds=MODEL_CALL_MOST_SECONDS)
"""Longest single model call (30 minutes): no agent's ``deadline_seconds`` may exceed it, so
the client's own deadline cuts a slow call first, with its reason."""
MODEL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A model call heartbeats while it waits for the model: a worker killed mid-call (kill -9,
a power cut) is noticed within this, and the turn is asked again, not after
MODEL_CALL_TIMEOUT."""
MODEL_CALL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                               maximum_interval=timedelta(seconds=30), maximum_attempts=5)
"""5xx, timeouts and 429s: bounded backoff (a 429's Retry-After overrides the interval)."""
RECORD_TIMEOUT = timedelta(seconds=60)
TOOL_CALL_TIMEOUT = timedelta(hours=24)
"""Longest tool call (an approval may hold it that long)."""
TOOL_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
TOOL_CALL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
                              maximum_interval=timedelta(seconds=10), maximum_attempts=0)
"""A lost worker's tool call is tried again; the action's intent journal keeps it once."""


def _cause(error: ActivityError) -> str:
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or error)


def _told(content: str, call_id: str, tool: str, json_mode: bool) -> dict[str, Any]:
    """Return the message giving ``content`` back to the model as a tool's result."""
    if json_mode:
        return {"role": "user", "content": f"Result of {tool}: {content}"}
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def usage(out: StageOutput) -> dict[str, int]:
    """Return a stage's token counts as a fact's data: ``tokens`` (in plus out, the field
    older facts have), ``tokens_in`` and ``tokens_out``; empty for a command agent (no
    tokens), so its facts are unchanged."""
    if not out.tokens_in and not out.tokens_out:
        return {}
    return {"tokens": out.tokens_in + out.tokens_out, "tokens_in": out.tokens_in,
            "tokens_out": out.tokens_out}


async def _finished(stage: StageInput, out: StageOutput, turns: int) -> None:
    """Record the stage's ``stage_finished`` fact (as ``bees.run_stage`` does), with its turns
    and tokens."""
    await workflow.execute_activity(RECORD_ACTIVITY, RecordInput.of(
        StageFinished(stage=stage.stage, round=stage.round, agent=stage.agent,
                      attempt=out.attempt, reason=None, verdict=out.verdict,
                      comments=list(out.comments), output_dir=out.output_dir,
                      turns=turns).model_copy(update=usage(out)),
        item_id=stage.item_id, status=None,
        key=f"{stage.stage}:{stage.round}:{out.attempt}:stage_finished"),
        start_to_close_timeout=RECORD_TIMEOUT)


async def run_model_stage(stage: StageInput, loop: LoopView,
                          between: Callable[[], None] = lambda: None) -> StageOutput:
    """Run a model agent's stage: ask, run the tools asked for, until a final answer.

    Args:
        stage: what ``bees.run_stage`` would get (attempt: its ``attempt_base``).
        loop: the agent's turn limit, token budget and tool mode.
        between: called after each model and tool call; it raises to stop the loop (a
            relinquish whose cancel the finished call swallowed).

    Returns:
        ok with the stage folder (a review: with its verdict), or not ok with the reason:
        the model call failed (401/403 at once, 5xx and 429 after bounded retries, the
        context exceeded), an invalid answer twice in a row, the turn limit, the budget.
    """
    context = _turn_context(stage)
    json_mode = loop.tool_mode == "json"
    folder = f"{stage.run_folder}/{stage.stage}"

    def failed(reason: str) -> StageOutput:
        why = Reason(code="agent_failed", agent=stage.agent, said=reason)
        return StageOutput(ok=False, reason=why.words(), why=why, output_dir=folder,
                           attempt=stage.attempt_base, tokens_in=used_in, tokens_out=used_out)

    messages: list[dict[str, Any]] = []
    used = used_in = used_out = turn = 0
    told = False
    told_missing = False  # told once that required tools were not called; never reset
    told_unmet = False  # told once that the declared output was not there; never reset
    while True:
        if turn >= loop.max_turns:
            return failed(f"the turn limit of {loop.max_turns} model calls was reached")
        turn += 1
        step = await _ask(context, turn, messages)
        if isinstance(step, str):
            return failed(step)
        between()
        used_in += step.prompt_tokens
        used_out += step.completion_tokens
        used = used_in + used_out
        messages.append(step.message)
        if loop.token_budget is not None and used > loop.token_budget:
            return failed(f"the token budget of {loop.token_budget} tokens was crossed "
                          f"({used} used in {turn} turns)")
        problems = [c.problem for c in step.calls if c.problem] + (
            [step.problem] if step.kind == "invalid" and step.problem else [])
        if problems:
            if told:
                return failed(problems[0])
            told = True
            if step.kind == "invalid":
                messages.append({"role": "user", "content": f"{problems[0]}. Answer again, "
                                 "as asked."})
            for call in step.calls:
                messages.append(_told(call.problem or "not run: another call of this turn "
                                      "was invalid", call.call_id, call.tool, json_mode))
            continue
        told = False
        if step.kind in ("final", "verdict") and step.missing \
                and workflow.patched(REQUIRED_TOOLS_TOLD):
            if told_missing:
                return failed(failed_not_called(step.missing))
            told_missing = True
            messages.append({"role": "user", "content": told_not_called(step.missing)})
            continue
        if step.kind == "final" and step.unmet and workflow.patched(OUTPUT_TOLD):
            if told_unmet:
                return failed(f"{step.unmet}, also after the model was told once")
            told_unmet = True
            messages.append({"role": "user",
                             "content": f"{step.unmet}; write it before your final answer"})
            continue
        if step.kind in ("final", "verdict"):
            out = StageOutput(ok=True, verdict=step.verdict, comments=list(step.comments),
                              output_dir=step.output_dir, attempt=stage.attempt_base,
                              tokens_in=used_in, tokens_out=used_out)
            if stage.piece is None:  # a piece's end is recorded by its workflow (pieces.py)
                await _finished(stage, out, turn)
            return out
        await _run_tools(context, turn, step.calls, messages, json_mode, between)


def _turn_context(stage: StageInput) -> TurnContext:
    """Return what every model and tool call of ``stage`` is given about it."""
    return TurnContext(
        item_id=stage.item_id, title=stage.title, run_folder=stage.run_folder,
        stage=stage.stage, round=stage.round, attempt=stage.attempt_base, agent=stage.agent,
        folders=dict(stage.folders), previous=dict(stage.previous),
        comments=list(stage.comments), snapshot_digest=stage.snapshot_digest,
        piece=stage.piece, task=stage.task)


async def _ask(context: TurnContext, turn: int,
               messages: list[dict[str, Any]]) -> ModelStep | str:
    """Ask the model for ``turn`` (``bees.model_call``); return its step, or why the call
    failed (the stage fails with it).

    Raises:
        ActivityError: the call was cancelled (a relinquish or a cancel).
    """
    try:
        step: ModelStep = await workflow.execute_activity(
            MODEL_CALL_ACTIVITY, ModelCallInput(context=context, turn=turn,
                                                messages=list(messages)),
            result_type=ModelStep, start_to_close_timeout=MODEL_CALL_TIMEOUT,
            heartbeat_timeout=MODEL_HEARTBEAT_TIMEOUT, retry_policy=MODEL_CALL_RETRY)
    except ActivityError as error:
        if isinstance(error.cause, TemporalCancelled):
            raise
        return _cause(error)
    return step


async def _run_tools(context: TurnContext, turn: int, calls: list[ToolAsk],
                     messages: list[dict[str, Any]], json_mode: bool,
                     between: Callable[[], None]) -> None:
    """Run a reply's tool calls: adjacent read-kind ones together (since
    :data:`CONCURRENT_READS`), every other one alone in the order asked; append each result
    to ``messages`` in the order asked."""
    for batch in batches(calls):
        if len(batch) > 1 and workflow.patched(CONCURRENT_READS):
            results = await asyncio.gather(*(_tool_call(context, turn, c) for c in batch))
            between()
        else:
            results = []
            for call in batch:
                results.append(await _tool_call(context, turn, call))
                between()
        for call, result in zip(batch, results, strict=True):
            messages.append(_told(result.content, call.call_id, call.tool, json_mode))


async def _tool_call(context: TurnContext, turn: int, call: ToolAsk) -> ToolResult:
    """Run one tool call (``bees.tool_call``) and return its result."""
    result: ToolResult = await workflow.execute_activity(
        TOOL_CALL_ACTIVITY, ToolCallInput(context=context, turn=turn, call=call),
        result_type=ToolResult, start_to_close_timeout=TOOL_CALL_TIMEOUT,
        heartbeat_timeout=TOOL_HEARTBEAT_TIMEOUT, retry_policy=TOOL_CALL_RETRY)
    return result


def batches(calls: list[ToolAsk]) -> list[list[ToolAsk]]:
    """Return ``calls`` in the order asked, in runs that may go at once: each run of
    read-kind calls next to one another together, every other call alone (a gated call
    waits for the reads before it, and the calls after it wait for it)."""
    runs: list[list[ToolAsk]] = []
    for call in calls:
        if call.read and runs and runs[-1][-1].read:
            runs[-1].append(call)
        else:
            runs.append([call])
    return runs
