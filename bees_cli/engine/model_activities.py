"""The model loop's activities: one model call (``bees.model_call``), one tool call each.

Each model reply is appended to the stage's transcript (``RUN/logs/STAGE.transcript.jsonl``)
before the activity completes; a retried call for the same round, attempt and turn answers
from there, so a reply is never paid for twice (issue 13, point 2). Model errors become
Temporal's retry: ``ApplicationError`` non-retryable unless the error is, waiting the
server's ``Retry-After`` (one retry layer; the client itself tries once). A call that will
be tried again says so in the record before it raises (``waiting: rate limited by SERVER
until 14:05``, ``waiting: retrying model call, try 2 of 5``), its next try while it runs
(``running: retrying model call, try 2 of 5``), and an answer clears it (issue 23, point 7).
A call past ``runner.model.deadline_seconds`` is retried like a timeout; a reply over
``max_reply_bytes`` fails the stage at once; a reply asking for more than
``runner.max_tool_calls`` tool calls runs none of them (issue 26, point 1).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity

from bees_cli.agents.action_call import ActionCallInput, ActionRunner
from bees_cli.agents.chat_wire import ChatResponse, Message, ToolDef
from bees_cli.agents.model_steps import (
    BUILT_INS,
    addon_tool,
    cut_reply_problem,
    file_tools,
    not_called,
    opening,
    read_step,
    response_format,
    tools_text,
)
from bees_cli.agents.pieces import DELEGATE, delegate_tool, work_folder
from bees_cli.agents.runner import env_key
from bees_cli.engine.file_tools import STAGE_FOLDER, FileTools, attachments
from bees_cli.engine.model_fit import fitted, read_tools
from bees_cli.engine.model_models import (
    CALLED_OUTCOMES,
    MODEL_CALL_ACTIVITY,
    TOOL_CALL_ACTIVITY,
    ModelCallInput,
    ModelStep,
    ToolAsk,
    ToolCallInput,
    ToolResult,
    TurnContext,
)
from bees_cli.engine.model_progress import PROGRESS_EVERY, CallProgress, heartbeating
from bees_cli.engine.model_results import too_many_calls, transcript_entry, write_result
from bees_cli.engine.model_shown import CallShown, as_application_error, next_try, retry_line
from bees_cli.engine.snapshot_store import load_snapshot
from bees_cli.engine.transcript import (
    append_entry,
    same_entry,
    transcript_lines,
    transcript_name,
    transcript_path,
)
from bees_cli.errors import BeesError, ModelError, Refused, UserError
from bees_cli.record.local import LocalRecord
from bees_cli.rules import binary_refusal, cap_tool_result
from bees_cli.utc import utc_now

if TYPE_CHECKING:
    import httpx

    from bees_cli.agents.mcp_addon import McpTool
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.workspace.models import ModelRunner, ModelSpec

"""A work stage's final answer, written in its folder."""
MCP_LISTS_KEPT = 256
"""At most this many MCP tool lists (one per stage attempt and add-on) are kept in memory."""

DelegateRunner = Callable[[dict[str, Any], dict[str, str]], Awaitable[str]]
"""Runs a model agent's ``delegate`` tool call (its arguments) in a stage's environment, as
``bees delegate`` does (issue 14; the use case, injected); returns the text given back to
the model, or raises ``Refused``/``UserError``."""

log = logging.getLogger(__name__)
"""Where a model call's failed try is said (``bees run`` prints it as its own line)."""


T = TypeVar("T")


class ModelActivities:
    """The model loop's activities of this computer's worker.

    Args:
        record: the local record (snapshots, the history's facts).
        act: runs an add-on action through ``bees action``'s gate (None: add-on tools are
            refused with the reason).
        engine_env: ``BEES_HOME`` and ``BEES_TEMPORAL_ADDRESS`` for the action's gate.
        heartbeat_every: seconds between heartbeats of a tool call (an approval may hold it).
        progress_every: the most often a streamed call's progress is shown, seconds.
    """

    def __init__(self, record: LocalRecord, *, act: ActionRunner | None = None,
                 engine_env: dict[str, str] | None = None, heartbeat_every: float = 2.0,
                 delegate: DelegateRunner | None = None,
                 progress_every: float = PROGRESS_EVERY) -> None:
        self.record = record
        self.act = act
        self.delegate = delegate
        self.engine_env = dict(engine_env or {})
        self.heartbeat_every, self.progress_every = heartbeat_every, progress_every
        self.plain_servers: set[str] = set()  # answered a stream request whole: not asked again
        self.shown = CallShown(record)
        self.files = FileTools(record)
        self._mcp_listed: dict[tuple[Any, ...], dict[str, McpTool]] = {}
        self._http: dict[tuple[str, float], httpx.AsyncClient] = {}

    def http_for(self, spec: ModelSpec) -> httpx.AsyncClient:
        """Return the ``httpx`` client this worker keeps for the model server of ``spec``
        (its base URL and timeout), made at its first call (issue 29, point 4: building one
        per call loaded the certificate bundle each time, ~39 ms of CPU). Closed by
        :meth:`aclose`."""
        from bees_cli.agents.model_client import client_for

        key = (spec.base_url, spec.timeout_seconds)
        kept = self._http.get(key)
        if kept is None or kept.is_closed:
            kept = self._http[key] = client_for(spec)
        return kept

    async def aclose(self) -> None:
        """Close the clients kept for the model servers (the worker's end)."""
        clients, self._http = list(self._http.values()), {}
        for client in clients:
            await client.aclose()

    def _snapshot(self, context: TurnContext) -> ItemSnapshot:
        return load_snapshot(self.record, context.item_id, context.snapshot_digest)

    async def _mcp_tools(self, snapshot: ItemSnapshot,
                         context: TurnContext) -> dict[str, McpTool]:
        """Return ``ADDON.TOOL`` → the tool as its server lists it, for the agent's tools of MCP
        add-ons (issue 25): listed once per stage attempt. A server that does not answer
        gives none: its tools are offered without their schema, and a call says why."""
        from bees_cli.agents.mcp_addon import McpNotReached, list_tools
        from bees_cli.agents.selection import tool_addons

        found: dict[str, McpTool] = {}
        for name in tool_addons(snapshot.agents[context.agent]):
            addon = snapshot.addons.get(name)
            if addon is None or addon.mcp is None:
                continue
            key = (context.item_id, context.stage, context.round, context.attempt,
                   context.piece, name)
            if key not in self._mcp_listed:
                try:
                    tools = await list_tools(addon.mcp, root=snapshot.workspace_root,
                                             environ=os.environ)
                except McpNotReached:
                    tools = []
                if len(self._mcp_listed) >= MCP_LISTS_KEPT:
                    self._mcp_listed.clear()
                self._mcp_listed[key] = {tool.name: tool for tool in tools}
            found.update({f"{name}.{tool}": listed
                          for tool, listed in self._mcp_listed[key].items()})
        return found

    def _tools(self, snapshot: ItemSnapshot, context: TurnContext,
               runner: ModelRunner, called: set[str],
               mcp: Mapping[str, McpTool] | None = None) -> list[ToolDef]:
        """Return the tools offered: the file tools (unless the runner turns them off) and
        the agent's add-on actions, less the required ones already ``called``; an MCP tool
        (in ``mcp``) with its server's description and input schema. An action's
        ``enum_from`` is offered as the ``enum`` of the values its folder holds now (issue
        26, point 6: grounded arguments; reads files, so run it off the event loop)."""
        from bees_cli.agents.grounded import folder_finder, ground_schema

        folder_of = folder_finder(context.run_folder, context.folders)
        agent = snapshot.agents[context.agent]
        tools = (file_tools([STAGE_FOLDER, *context.folders, *context.previous])
                 if runner.file_tools else [])
        for tool in agent.tools:
            if tool in called and tool in runner.required_tools:
                continue
            if mcp and tool in mcp:
                tools.append(addon_tool(tool, mcp[tool].description, mcp[tool].input_schema))
                continue
            addon, _, name = tool.partition(".")
            action = snapshot.addons[addon].actions.get(name) if addon in snapshot.addons else None
            schema = (ground_schema(action.input, folder_of)
                      if action is not None and action.input is not None else None)
            tools.append(addon_tool(tool, action.description if action else None, schema))
        if self.delegate is not None and snapshot.max_piece_depth > 0:
            tools.append(delegate_tool(sorted(a for a in snapshot.agents if a != context.agent)))
        return tools

    @activity.defn(name=MODEL_CALL_ACTIVITY)
    async def model_call(self, call: ModelCallInput) -> ModelStep:
        """Ask the model for its next step (one turn), or answer from the transcript.

        Raises:
            ApplicationError: the call failed (see :func:`as_application_error`).
        """
        from bees_cli.agents.eligibility import find_stage
        from bees_cli.agents.model_client import server_name
        from bees_cli.engine.model_loop import MODEL_CALL_RETRY
        from bees_cli.workspace.models import ModelRunner

        context = call.context
        info = activity.info()
        policy = info.retry_policy or MODEL_CALL_RETRY  # a test server may not send it
        snapshot = await asyncio.to_thread(self._snapshot, context)
        spec = find_stage(snapshot, context.stage)
        runner = snapshot.agents[context.agent].runner
        assert isinstance(runner, ModelRunner)
        kind = "work" if context.piece is not None else spec.kind  # a piece answers, not judges
        path = transcript_path(context.run_folder, transcript_name(context))
        server = server_name(runner.model.base_url)
        await asyncio.to_thread(self.shown.start_try, context, info.attempt, policy, server)
        entries = await asyncio.to_thread(transcript_lines, path)
        # only a call that ran counts: after a refusal or a denial the model may call the
        # tool again with a corrected input (held for approval anew)
        called = {e["tool"] for e in entries if e.get("kind") == "tool"
                  and e.get("outcome") in CALLED_OUTCOMES
                  and (e.get("round"), e.get("attempt")) == (context.round, context.attempt)}
        mcp = await self._mcp_tools(snapshot, context)
        tools = await asyncio.to_thread(self._tools, snapshot, context, runner, called, mcp)
        saved = next((e for e in entries if same_entry(e, context, call.turn, "reply")), None)
        if saved is not None:
            response = ChatResponse.model_validate(saved["response"])
            seconds, from_transcript = float(saved.get("seconds", 0.0)), True
        else:
            try:
                response, seconds = await self._ask(
                    call, snapshot.agents[context.agent].instructions, runner, kind, tools,
                    final=set(runner.required_tools) <= called, path=path)
            except ModelError as error:
                wait = next_try(error, attempt=info.attempt, policy=policy, server=server,
                                now=utc_now())
                log.warning("%s", retry_line(context.stage, context.item_id, context.piece,
                                             error, attempt=info.attempt, wait=wait))
                if wait is not None:
                    await asyncio.to_thread(self.shown.show, self.shown.waits, context, wait)
                raise as_application_error(error) from None
            from_transcript = False
        if info.attempt > 1:
            await asyncio.to_thread(self.shown.show, self.shown.answered, context)
        step = await self._step(call, runner, kind, response, {t.function.name for t in tools},
                                called, seconds=seconds, from_transcript=from_transcript)
        reads = read_tools(snapshot, context.agent, mcp)
        step = step.model_copy(update={"calls": [
            c.model_copy(update={"read": c.tool in reads}) for c in step.calls]})
        if step.kind == "final" and not step.missing and spec.output is not None \
                and context.piece is None:  # the declared output (issue 26, point 5)
            from bees_cli.agents.review_checks import output_problem
            step.unmet = await asyncio.to_thread(output_problem, spec.output,
                                                 Path(step.output_dir),
                                                 Path(snapshot.workspace_root))
        return step

    async def _ask(self, call: ModelCallInput, instructions: str, runner: ModelRunner,
                   kind: str, tools: list[ToolDef], *, final: bool,
                   path: Path) -> tuple[ChatResponse, float]:
        """Send the conversation to the model once (no retry of its own); append its reply
        (and, on turn 1, the opening) to the transcript; return the reply and its seconds.

        Raises:
            ModelError: the call failed (the activity turns it into Temporal's retry).
        """
        from bees_cli.agents.model_client import ModelClient
        from bees_cli.agents.model_http import RetryPolicy

        context = call.context
        review, json_mode = kind == "review", runner.tool_mode == "json"
        first = opening(
            instructions=instructions, title=context.title, stage=context.stage,
            kind=kind, folders=[STAGE_FOLDER, *context.folders],
            previous=context.previous, comments=context.comments,
            tools_text=tools_text(tools) if json_mode else None,
            attached=await asyncio.to_thread(attachments, context, runner.attach))
        if context.task:  # a piece: what its caller asked (issue 14)
            first[-1] = Message(role="user", content=f"{first[-1].content}\n\n{context.task}")
        messages = first + [Message.model_validate(m) for m in call.messages]
        sent = await fitted(runner, messages, len(first), None if json_mode else tools)
        started, url = time.monotonic(), runner.model.base_url
        shown = CallProgress(self.record, context, call.turn, path, every=self.progress_every)
        async with ModelClient(runner.model, retry=RetryPolicy(attempts=1),
                               stream=url not in self.plain_servers,
                               http=self.http_for(runner.model)) as client:
            try:  # heartbeats while the model thinks (a worker killed mid-call is noticed
                # within MODEL_HEARTBEAT_TIMEOUT) and with each streamed chunk (issue 26)
                done = await self._heartbeating(client.complete(
                    sent, tools=None if json_mode else tools,
                    response_format=response_format(
                        review=review, json_mode=json_mode, tools=tools,
                        reply_tokens=runner.max_reply_tokens, final=final),
                    max_tokens=runner.max_reply_tokens, temperature=runner.temperature,
                    seed=runner.seed, progress=shown))
            finally:
                await shown.close()
                if client.streams is False:  # remembered for the worker's life
                    self.plain_servers.add(url)
        response, seconds = done.response, time.monotonic() - started
        if call.turn == 1:
            await asyncio.to_thread(append_entry, path, transcript_entry(
                context, call.turn, "opening", messages=[m.wire() for m in first]))
        usage = response.usage
        await asyncio.to_thread(append_entry, path, transcript_entry(
            context, call.turn, "reply", response=response.model_dump(mode="json"),
            prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
            seconds=round(seconds, 3), model=runner.model.name,
            cost=None if runner.model.prices is None
            else runner.model.prices.cost(usage.prompt_tokens, usage.completion_tokens)))
        return response, seconds

    async def _step(self, call: ModelCallInput, runner: ModelRunner, kind: str,
                    response: ChatResponse, offered: set[str], called: set[str], *,
                    seconds: float, from_transcript: bool) -> ModelStep:
        """Read the model's reply as the loop's next step; a final answer or a verdict is
        written in the stage's folder, unless it came before the required tools not in
        ``called`` (then they are the step's ``missing``, issue 26, point 3)."""
        context = call.context
        read = read_step(response, review=kind == "review",
                         json_mode=runner.tool_mode == "json", offered=offered, turn=call.turn,
                         cut=cut_reply_problem(runner.max_reply_tokens, context.agent))
        if len(read.calls) > runner.max_tool_calls:
            return too_many_calls(response, len(read.calls), runner.max_tool_calls,
                                        seconds, from_transcript)
        folder = work_folder(context.run_folder, context.stage, context.piece)
        missing = (not_called(runner.required_tools, called)
                   if read.kind in ("final", "verdict") else [])
        if read.kind in ("final", "verdict") and not missing:
            await asyncio.to_thread(write_result, folder, read.kind, read.text,
                                    read.verdict, read.comments)
        return ModelStep(
            kind=read.kind, message=response.message.wire(),
            calls=[ToolAsk(call_id=i, tool=t, arguments=a, problem=p) for i, t, a, p in read.calls],
            text=read.text, verdict=read.verdict, comments=read.comments, problem=read.problem,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens, seconds=seconds,
            output_dir=str(folder), from_transcript=from_transcript, missing=missing)

    @activity.defn(name=TOOL_CALL_ACTIVITY)
    async def tool_call(self, call: ToolCallInput) -> ToolResult:
        """Run one tool: a built-in file tool, or an add-on action through ``bees action``'s
        gate (refused, journal-answered, or held for approval; a refusal or denial is the
        result); a call already in the transcript answers from there."""
        context = call.context
        path = transcript_path(context.run_folder, transcript_name(context))
        for entry in await asyncio.to_thread(transcript_lines, path):
            if (same_entry(entry, context, call.turn, "tool")
                    and entry["call_id"] == call.call.call_id):
                return ToolResult(content=entry["content"], outcome=entry["outcome"])
        if call.call.tool in BUILT_INS:
            result = await asyncio.to_thread(self.files.run, context, call.call)
        elif call.call.tool == DELEGATE and self.delegate is not None:
            result = await self._heartbeating(self._delegate(context, call.call))
        else:
            result = await self._heartbeating(self._action(context, call.call))
        await asyncio.to_thread(append_entry, path, transcript_entry(
            context, call.turn, "tool", call_id=call.call.call_id, tool=call.call.tool,
            arguments=call.call.arguments, content=result.content, outcome=result.outcome))
        return result

    async def _heartbeating(self, work: Awaitable[T]) -> T:
        """Await ``work``, heartbeating every ``heartbeat_every`` s (:func:`heartbeating`)."""
        return await heartbeating(work, self.heartbeat_every)

    async def _delegate(self, context: TurnContext, ask: ToolAsk) -> ToolResult:
        """Hand a piece to another agent (``bees delegate``'s use case); a refusal or a
        failed piece is the result, with the reason (the model decides)."""
        assert self.delegate is not None
        env = await self._env(context)
        try:
            return ToolResult(content=await self.delegate(dict(ask.arguments), env))
        except Refused as error:
            return ToolResult(content=f"refused: {error}", outcome="refused")
        except BeesError as error:  # a failed piece, bad arguments: the model decides
            return ToolResult(content=f"failed: {error}", outcome="failed")

    async def _env(self, context: TurnContext) -> dict[str, str]:
        """Return the environment a command agent of this stage (or piece) would have."""
        snapshot = await asyncio.to_thread(self._snapshot, context)
        return self._stage_env(context, snapshot)

    def _stage_env(self, context: TurnContext, snapshot: ItemSnapshot) -> dict[str, str]:
        """Return the environment a command agent of this stage (or piece) would have: the
        one an add-on's program starts from (filtered by the add-on's declared names)."""
        env = dict(os.environ)
        env.update({"BEES_ITEM_ID": context.item_id, "BEES_STAGE": context.stage,
                    "BEES_AGENT": context.agent, "BEES_ROUND": str(context.round),
                    "BEES_ATTEMPT": str(context.attempt), "BEES_RUN_FOLDER": context.run_folder,
                    "BEES_WORKSPACE": snapshot.workspace_root})
        env.update(self.engine_env)
        for name, folder in context.folders.items():
            env[f"BEES_FOLDER_{env_key(name)}"] = folder
        for name, folder in context.previous.items():
            env[f"BEES_PREVIOUS_{env_key(name)}"] = folder
        if context.piece is not None:
            env["BEES_PIECE"] = context.piece
        return env

    async def _action(self, context: TurnContext, ask: ToolAsk) -> ToolResult:
        """Run an add-on tool through the gate (:data:`ActionRunner`); a refusal, a denial or
        an input turned down is the result, with the reason (the model decides)."""
        if self.act is None:
            return ToolResult(content=f"refused: {ask.tool} cannot run here (no action gate)",
                              outcome="refused")
        from bees_cli.agents.mcp_addon import McpNotReached

        snapshot = await asyncio.to_thread(self._snapshot, context)
        here = work_folder(context.run_folder, context.stage, context.piece)
        await asyncio.to_thread(here.mkdir, parents=True, exist_ok=True)
        # the call itself is typed (issue 24, point 1): the gate reads nothing back from the
        # environment, which only starts the add-on's program; held, it waits on this run
        call = ActionCallInput(
            item_id=context.item_id, stage=context.stage, agent=context.agent,
            action=ask.tool, data=dict(ask.arguments), round=context.round,
            attempt=context.attempt, piece=context.piece, workspace=snapshot.workspace_root,
            cwd=str(here), environ=self._stage_env(context, snapshot))
        try:
            outcome = await self.act(call)
        except Refused as error:
            return ToolResult(content=f"refused: {error}", outcome="refused")
        except (UserError, McpNotReached) as error:  # turned down before it ran (bad input,
            # an MCP server not reached): not called, so a required tool stays offered
            return ToolResult(content=f"failed: {error}", outcome="not_run")
        # bounded tool results (issue 25, point 6): binary refused, text cut at the cap
        if outcome.binary is not None:  # it ran: called, so "failed", not "not_run"
            return ToolResult(content=binary_refusal(outcome.binary), outcome="failed")
        text = cap_tool_result(outcome.stdout)
        if outcome.edited is not None:  # the person corrected the call (issue 26, point 4)
            text = f"{outcome.edited}\n{text}"
        if outcome.from_journal:
            return ToolResult(content=text, outcome="journal")
        if outcome.exit_code != 0:
            return ToolResult(content=f"{text}\n(exit code {outcome.exit_code})",
                              outcome="failed")
        return ToolResult(content=text, outcome="ran")

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.model_call, self.tool_call]

