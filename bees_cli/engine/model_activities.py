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
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity
from temporalio.common import RetryPolicy as TemporalRetry
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from bees_cli.agents.chat_wire import ChatResponse, Message, ToolDef
from bees_cli.agents.model_steps import (
    BUILT_INS,
    READ_FILE,
    addon_tool,
    file_tools,
    opening,
    read_step,
    response_format,
    tools_text,
)
from bees_cli.agents.pieces import DELEGATE, delegate_tool, piece_stage, work_folder
from bees_cli.agents.runner import env_key
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
from bees_cli.engine.snapshot_store import load_snapshot
from bees_cli.engine.transcript import append_entry, transcript_lines, transcript_path
from bees_cli.errors import (
    BeesError,
    ModelError,
    ModelRateLimited,
    NotFound,
    Refused,
    UserError,
)
from bees_cli.record.events import StageStarted
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import PieceStatus
from bees_cli.record.states import Status, WaitKind
from bees_cli.rules import binary_refusal, cap_tool_result
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.agents.mcp_addon import McpTool
    from bees_cli.agents.snapshot import ItemSnapshot
    from bees_cli.record.views import ModelRetry
    from bees_cli.rules import WriteFolder
    from bees_cli.workspace.models import ModelRunner

ANSWER_FILE = "answer.md"
"""A work stage's final answer, written in its folder."""
STAGE_FOLDER = "stage"
"""The name by which the file tools mean the stage's own folder."""
FILE_CHARS = 20_000
MCP_LISTS_KEPT = 256
"""At most this many MCP tool lists (one per stage attempt and add-on) are kept in memory."""
"""At most this many characters of a file are given back by ``read_file``."""

ActionRunner = Callable[[str, str, dict[str, str], str], Awaitable[Any]]
"""Runs ``bees action NAME`` with input JSON text in a stage's environment, in the stage's
folder (the use case ``run_action``, injected: the engine does not import use cases; the
folder is where a command agent's ``bees action`` runs, so an add-on sees the same current
folder from either kind of agent); returns its outcome
(``exit_code``, ``stdout``, ``from_journal``) or raises ``Refused``/``UserError``."""

DelegateRunner = Callable[[dict[str, Any], dict[str, str]], Awaitable[str]]
"""Runs a model agent's ``delegate`` tool call (its arguments) in a stage's environment, as
``bees delegate`` does (issue 14; the use case, injected); returns the text given back to
the model, or raises ``Refused``/``UserError``."""


def _named(context: TurnContext) -> str:
    """Return the name the agent's transcript is kept under: the stage, or a piece's
    ``STAGE/pieces/PIECE``."""
    return context.stage if context.piece is None else piece_stage(context.stage, context.piece)


def _same(entry: dict[str, Any], context: TurnContext, turn: int, kind: str) -> bool:
    return (entry.get("kind"), entry.get("round"), entry.get("attempt"), entry.get("turn")) == (
        kind, context.round, context.attempt, turn)


def as_application_error(error: ModelError) -> ApplicationError:
    """Return ``error`` as Temporal's retry reads it (retryable or not, Retry-After); a
    rate limit is benign (an expected wait, not logged as a failure)."""
    delay = None if error.retry_after is None else timedelta(seconds=error.retry_after)
    benign = isinstance(error, ModelRateLimited) and error.retryable
    return ApplicationError(str(error), type=type(error).__name__,
                            non_retryable=not error.retryable, next_retry_delay=delay,
                            category=ApplicationErrorCategory.BENIGN if benign
                            else ApplicationErrorCategory.UNSPECIFIED)


def tries_of(policy: TemporalRetry | None) -> int | None:
    """Return the tries in all a retry policy allows (None: no limit)."""
    return policy.maximum_attempts if policy is not None and policy.maximum_attempts > 0 \
        else None


def backoff(policy: TemporalRetry | None, attempt: int) -> float:
    """Return the seconds Temporal waits after failed try ``attempt`` (1 first) when the
    error names no delay: ``initial × coefficient^(attempt-1)``, at most the maximum
    interval (Temporal's default: 100 × initial)."""
    policy = policy or TemporalRetry()
    initial = policy.initial_interval.total_seconds()
    most = (policy.maximum_interval.total_seconds() if policy.maximum_interval is not None
            else 100 * initial)
    return float(min(initial * policy.backoff_coefficient ** (attempt - 1), most))


def next_try(error: ModelError, *, attempt: int, policy: TemporalRetry | None, server: str,
             now: datetime) -> ModelRetry | None:
    """Return the wait of a model call whose try ``attempt`` failed with ``error``: the
    next try, when it starts and why; None when no try follows (the error is not
    retryable, or that was the last try).

    Args:
        error: the try's error (``retry_after``: the server's Retry-After, seconds).
        attempt: the try that failed (Temporal's activity attempt, 1 first).
        policy: the activity's retry policy (tries in all, backoff).
        server: the model's server (:func:`~bees_cli.agents.model_client.server_name`).
        now: this computer's clock (aware).
    """
    from bees_cli.record.views import ModelRetry

    tries = tries_of(policy)
    if not error.retryable or (tries is not None and attempt >= tries):
        return None
    delay = error.retry_after if error.retry_after is not None else backoff(policy, attempt)
    return ModelRetry(why="rate_limited" if isinstance(error, ModelRateLimited)
                      else "unavailable", server=server, try_number=attempt + 1, tries=tries,
                      until=format_utc(now + timedelta(seconds=delay)), error=str(error))


def attachments(context: TurnContext, names: list[str]) -> dict[str, str]:
    """Return the text files of the folders ``names`` (the stage's linked folders or earlier
    stages' folders), by ``FOLDER/FILE``: top-level files that are UTF-8 text, not hidden,
    in name order, at most :data:`FILE_CHARS` characters in all (an agent's ``attach``)."""
    roots = {**context.previous, **context.folders}
    found: dict[str, str] = {}
    left = FILE_CHARS
    for name in names:
        root = Path(roots[name]) if name in roots else None
        if root is None or not root.is_dir():
            continue
        for path in sorted(root.iterdir()):
            if left <= 0 or path.name.startswith(".") or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")[:left]
            except (OSError, UnicodeDecodeError):
                continue
            found[f"{name}/{path.name}"] = text
            left -= len(text)
    return found



T = TypeVar("T")


def _quiet(task: asyncio.Future[Any]) -> None:
    """Read the outcome of a task this activity stopped waiting for (see ``_heartbeating``)."""
    if not task.cancelled():
        task.exception()

class ModelActivities:
    """The model loop's activities of this computer's worker.

    Args:
        record: the local record (snapshots, the history's facts).
        act: runs an add-on action through ``bees action``'s gate (None: add-on tools are
            refused with the reason).
        engine_env: ``BEES_HOME`` and ``BEES_TEMPORAL_ADDRESS`` for the action's gate.
        heartbeat_every: seconds between heartbeats of a tool call (an approval may hold it).
    """

    def __init__(self, record: LocalRecord, *, act: ActionRunner | None = None,
                 engine_env: dict[str, str] | None = None, heartbeat_every: float = 2.0,
                 delegate: DelegateRunner | None = None) -> None:
        self.record = record
        self.act = act
        self.delegate = delegate
        self.engine_env = dict(engine_env or {})
        self.heartbeat_every = heartbeat_every
        self._mcp_listed: dict[tuple[Any, ...], dict[str, McpTool]] = {}

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
        (in ``mcp``) with its server's description and input schema."""
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
            tools.append(addon_tool(tool, action.description if action else None,
                                    action.input if action else None))
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
        from bees_cli.agents.model_client import ModelClient, RetryPolicy, server_name
        from bees_cli.engine.model_loop import MODEL_CALL_RETRY
        from bees_cli.workspace.models import ModelRunner

        context = call.context
        info = activity.info()
        policy = info.retry_policy or MODEL_CALL_RETRY  # a test server may not send it
        snapshot = await asyncio.to_thread(self._snapshot, context)
        spec = find_stage(snapshot, context.stage)
        agent = snapshot.agents[context.agent]
        assert isinstance(agent.runner, ModelRunner)
        runner: ModelRunner = agent.runner
        kind = "work" if context.piece is not None else spec.kind  # a piece answers, not judges
        review, json_mode = kind == "review", runner.tool_mode == "json"
        path = transcript_path(context.run_folder, _named(context))
        server = server_name(runner.model.base_url)
        await asyncio.to_thread(self._start_try, context, info.attempt, policy, server)
        entries = await asyncio.to_thread(transcript_lines, path)
        # only a call that ran counts: after a refusal or a denial the model may call the
        # tool again with a corrected input (held for approval anew)
        called = {e["tool"] for e in entries if e.get("kind") == "tool"
                  and e.get("outcome") in CALLED_OUTCOMES
                  and (e.get("round"), e.get("attempt")) == (context.round, context.attempt)}
        tools = self._tools(snapshot, context, runner, called,
                            await self._mcp_tools(snapshot, context))
        offered = {t.function.name for t in tools}
        saved = next((e for e in entries if _same(e, context, call.turn, "reply")), None)
        if saved is not None:
            response = ChatResponse.model_validate(saved["response"])
            seconds, from_transcript = float(saved.get("seconds", 0.0)), True
        else:
            first = opening(
                instructions=agent.instructions, title=context.title, stage=context.stage,
                kind=kind, folders=[STAGE_FOLDER, *context.folders],
                previous=context.previous, comments=context.comments,
                tools_text=tools_text(tools) if json_mode else None,
                attached=await asyncio.to_thread(attachments, context, runner.attach))
            if context.task:  # a piece: what its caller asked (issue 14)
                first[-1] = Message(role="user", content=f"{first[-1].content}\n\n{context.task}")
            messages = first + [Message.model_validate(m) for m in call.messages]
            started = time.monotonic()
            try:
                async with ModelClient(runner.model, retry=RetryPolicy(attempts=1)) as client:
                    # heartbeats while the model thinks: a worker killed mid-call is noticed
                    # within MODEL_HEARTBEAT_TIMEOUT and the call is asked again on the next
                    done = await self._heartbeating(client.complete(
                        messages, tools=None if json_mode else tools,
                        response_format=response_format(
                            review=review, json_mode=json_mode, tools=tools,
                            reply_tokens=runner.max_reply_tokens,
                            final=set(runner.required_tools) <= called),
                        max_tokens=runner.max_reply_tokens))
            except ModelError as error:
                wait = next_try(error, attempt=info.attempt, policy=policy, server=server,
                                now=utc_now())
                if wait is not None:
                    await asyncio.to_thread(self._shown, self._waits, context, wait)
                raise as_application_error(error) from None
            response, seconds, from_transcript = done.response, time.monotonic() - started, False
            if call.turn == 1:
                await asyncio.to_thread(append_entry, path, self._entry(
                    context, call.turn, "opening",
                    messages=[m.wire() for m in first]))
            await asyncio.to_thread(append_entry, path, self._entry(
                context, call.turn, "reply", response=response.model_dump(mode="json"),
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens, seconds=round(seconds, 3),
                model=runner.model.name, cost=None if runner.model.prices is None
                else runner.model.prices.cost(response.usage.prompt_tokens,
                                              response.usage.completion_tokens)))
        if info.attempt > 1:
            await asyncio.to_thread(self._shown, self._answered, context)
        read = read_step(response, review=review, json_mode=json_mode, offered=offered,
                         turn=call.turn)
        if len(read.calls) > runner.max_tool_calls:
            return self._too_many_calls(response, len(read.calls), runner.max_tool_calls,
                                        seconds, from_transcript)
        folder = work_folder(context.run_folder, context.stage, context.piece)
        if read.kind in ("final", "verdict"):
            await asyncio.to_thread(self._write_result, folder, read.kind, read.text,
                                    read.verdict, read.comments)
        return ModelStep(
            kind=read.kind, message=response.message.wire(),
            calls=[ToolAsk(call_id=i, tool=t, arguments=a, problem=p) for i, t, a, p in read.calls],
            text=read.text, verdict=read.verdict, comments=read.comments, problem=read.problem,
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens, seconds=seconds,
            output_dir=str(folder), from_transcript=from_transcript)

    @staticmethod
    def _too_many_calls(response: ChatResponse, asked: int, most: int, seconds: float,
                        from_transcript: bool) -> ModelStep:
        """Return a reply asking for more than ``most`` tool calls as an invalid step: none
        of its calls runs; the loop tells the model why once, then fails the stage with it
        (issue 26, point 1). The assistant message keeps its text, not its calls, so the
        conversation sent next stays one the protocol accepts (no call without a result)."""
        return ModelStep(
            kind="invalid", message={"role": "assistant", "content": response.message.content
                                     or ""},
            problem=f"the reply asked for {asked} tool calls, more than the {most} one "
            "reply may ask (runner.max_tool_calls); none of them ran",
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens, seconds=seconds,
            from_transcript=from_transcript)

    @staticmethod
    def _entry(context: TurnContext, turn: int, kind: str, **data: Any) -> dict[str, Any]:
        return {"kind": kind, "round": context.round, "attempt": context.attempt, "turn": turn,
                "at": format_utc(utc_now()), **data}

    @staticmethod
    def _write_result(folder: Path, kind: str, text: str | None, verdict: str | None,
                      comments: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if kind == "final":
            (folder / ANSWER_FILE).write_text(text or "", encoding="utf-8")
        else:
            (folder / "verdict.json").write_text(
                json.dumps({"verdict": verdict, "comments": comments}), encoding="utf-8")

    def _start_try(self, context: TurnContext, attempt: int, policy: TemporalRetry | None,
                   server: str) -> None:
        """Say that try ``attempt`` of the model call runs (a retry: which one)."""
        self._started(context, self._retrying(context, attempt=attempt, policy=policy,
                                              server=server))

    def _retrying(self, context: TurnContext, *, attempt: int, policy: TemporalRetry | None,
                  server: str) -> ModelRetry | None:
        """Return the retry a try ``attempt`` over 1 is (None for a first try): the wait the
        failed try wrote, now running, or ``interrupted`` when none was written (its worker
        stopped mid-call)."""
        from bees_cli.record.views import ModelRetry

        if attempt <= 1:
            return None
        if context.piece is None:
            try:
                stored = self.record.item(context.item_id, with_input=False).model_retry
            except NotFound:  # the record was replaced meanwhile: set_state ignores it too
                stored = None
            if stored is not None and stored.get("try_number") == attempt:
                return ModelRetry.model_validate({**stored, "until": None})
        return ModelRetry(why="interrupted", server=server, try_number=attempt,
                          tries=tries_of(policy))

    def _shown(self, write: Callable[..., None], context: TurnContext,
               *args: Any) -> None:
        """Run ``write`` (what the record shows of a model call's retry); a record that cannot
        be written is logged, never raised: the retry and its delay must reach Temporal."""
        try:
            write(context, *args)
        except Exception:  # noqa: BLE001 - what is shown must not cost the server's wait
            activity.logger.warning("could not show a model call's retry in the record",
                                    exc_info=True)

    def _waits(self, context: TurnContext, wait: ModelRetry) -> None:
        """Say that the model call waits for its next try: the item ``waiting`` (wait kind
        ``model``, the retry beside the reason) while it still runs this stage; for a
        piece, its row ``waiting`` with the reason."""
        words = wait.words(utc_now())
        if context.piece is not None:
            self._piece_shows(context, PieceStatus.WAITING, words)
            return
        self.record.set_state(context.item_id, status=Status.WAITING, stage=context.stage,
                              reason=words, agent=context.agent, wait=WaitKind.MODEL,
                              model_retry=wait.model_dump(mode="json"),
                              only_if=frozenset({Status.RUNNING}))

    def _answered(self, context: TurnContext, *_: Any) -> None:
        """Clear a retry once the model answered: the item (or piece) plainly ``running``."""
        if context.piece is not None:
            self._piece_shows(context, PieceStatus.RUNNING, None)
            return
        row = self.record.item(context.item_id, with_input=False)
        if row.model_retry is not None:
            self.record.set_state(context.item_id, status=Status.RUNNING, stage=context.stage,
                                  agent=context.agent, only_if=frozenset({Status.RUNNING}))

    def _piece_shows(self, context: TurnContext, status: PieceStatus, reason: str | None) -> None:
        """Show a piece's model call waiting or retried on its row, while the piece lives."""
        assert context.piece is not None
        row = self.record.piece(context.item_id, context.stage, context.piece)
        if row is None or not row.live or (row.status, row.reason) == (status, reason):
            return
        self.record.update_piece(context.item_id, context.stage, context.piece, status=status,
                                 reason=reason)

    def _started(self, context: TurnContext, retry: ModelRetry | None = None) -> None:
        if context.piece is not None:  # a piece's row says it runs (piece_activities.py)
            if retry is not None:
                self._shown(self._piece_shows, context, PieceStatus.RUNNING,
                            retry.words(utc_now()))
            return
        self.record.set_state(
            context.item_id, status="running", stage=context.stage, agent=context.agent,
            reason=None if retry is None else retry.words(utc_now()),
            model_retry=None if retry is None else retry.model_dump(mode="json"))
        self.record.add_fact(context.item_id, StageStarted(
            stage=context.stage, round=context.round, agent=context.agent,
            attempt=context.attempt, comments=list(context.comments)),
            key=f"{context.stage}:{context.round}:started:{context.attempt}")

    @activity.defn(name=TOOL_CALL_ACTIVITY)
    async def tool_call(self, call: ToolCallInput) -> ToolResult:
        """Run one tool: a built-in file tool, or an add-on action through ``bees action``'s
        gate (refused, journal-answered, or held for approval; a refusal or denial is the
        result); a call already in the transcript answers from there."""
        context = call.context
        path = transcript_path(context.run_folder, _named(context))
        for entry in await asyncio.to_thread(transcript_lines, path):
            if _same(entry, context, call.turn, "tool") and entry["call_id"] == call.call.call_id:
                return ToolResult(content=entry["content"], outcome=entry["outcome"])
        if call.call.tool in BUILT_INS:
            result = await asyncio.to_thread(self._file_tool, context, call.call)
        elif call.call.tool == DELEGATE and self.delegate is not None:
            result = await self._heartbeating(self._delegate(context, call.call))
        else:
            result = await self._heartbeating(self._action(context, call.call))
        await asyncio.to_thread(append_entry, path, self._entry(
            context, call.turn, "tool", call_id=call.call.call_id, tool=call.call.tool,
            arguments=call.call.arguments, content=result.content, outcome=result.outcome))
        return result

    async def _heartbeating(self, work: Awaitable[T]) -> T:
        """Await ``work``, heartbeating every ``heartbeat_every`` s (a model call or a tool call
        that waits); cancelled with the activity."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.heartbeat_every)
                if done:
                    return task.result()
                activity.heartbeat()
        finally:
            task.cancel()  # cancelled (the stage stops): the action's wait stops too
            # its error once cancelled (the update's wait cut short) is expected: read it, so
            # asyncio does not print "Task exception was never retrieved" with a traceback
            task.add_done_callback(_quiet)

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
        if self.act is None:
            return ToolResult(content=f"refused: {ask.tool} cannot run here (no action gate)",
                              outcome="refused")
        env = await self._env(context)
        here = work_folder(context.run_folder, context.stage, context.piece)
        await asyncio.to_thread(here.mkdir, parents=True, exist_ok=True)
        from bees_cli.agents.mcp_addon import McpNotReached

        try:
            outcome = await self.act(ask.tool, json.dumps(ask.arguments), env, str(here))
        except Refused as error:
            return ToolResult(content=f"refused: {error}", outcome="refused")
        except (UserError, McpNotReached) as error:  # turned down before it ran (bad input,
            # an MCP server not reached): not called, so a required tool stays offered
            return ToolResult(content=f"failed: {error}", outcome="not_run")
        # bounded tool results (issue 25, point 6): binary refused, text cut at the cap
        if outcome.binary is not None:  # it ran: called, so "failed", not "not_run"
            return ToolResult(content=binary_refusal(outcome.binary), outcome="failed")
        text = cap_tool_result(outcome.stdout)
        if outcome.from_journal:
            return ToolResult(content=text, outcome="journal")
        if outcome.exit_code != 0:
            return ToolResult(content=f"{text}\n(exit code {outcome.exit_code})",
                              outcome="failed")
        return ToolResult(content=text, outcome="ran")

    def _approved(self, context: TurnContext) -> bool:
        """Tell whether a person approved a request of the stage's current round (the local
        record: ``bees approve`` writes it there before the held action runs)."""
        return any(request.get("stage") == context.stage
                   and request.get("round") == context.round
                   for request in self.record.approvals(context.item_id, status="approved"))

    def _write_refusal(self, context: TurnContext, name: str, target: Path) -> str | None:
        """Return why the stage's model may not write file ``target`` (asked in folder
        ``name``) now, or None (:func:`~bees_cli.rules.write_refusal`: no side doors, issue
        25, point 5). Where ``target`` lands is read from its resolved path, the innermost
        folder holding it: the stage's own, one under the stage's ``writes:``, another
        linked folder, or none (a link that leads out)."""
        from bees_cli.agents.eligibility import find_stage
        from bees_cli.rules import write_refusal

        stage = find_stage(self._snapshot(context), context.stage)
        own = work_folder(context.run_folder, context.stage, context.piece)
        holders = [(Path(path).resolve(), folder) for folder, path in context.folders.items()]
        holders.append((own.resolve(), STAGE_FOLDER))
        holding = [(root, folder) for root, folder in holders if target.is_relative_to(root)]
        where: WriteFolder = "outside"
        folder = name
        if holding:
            _, folder = max(holding, key=lambda held: len(held[0].parts))
            where = ("run" if folder == STAGE_FOLDER else
                     "writes" if folder in stage.writes else "reads")
        required = stage.approval == "required"
        return write_refusal(where, folder=folder, approval_required=required,
                             approved=required and where == "writes"
                             and self._approved(context))

    def _file_tool(self, context: TurnContext, ask: ToolAsk) -> ToolResult:
        """Read or write a file inside the stage's folder, a linked folder, or (reading
        only) an earlier stage's folder; paths follow the checkpoint's rules. A write is
        refused, with the reason as the tool's result, where the stage may not write now
        (:meth:`_write_refusal`)."""
        from bees_cli.handover.folder import path_problem

        name = str(ask.arguments.get("folder") or STAGE_FOLDER)
        roots = {STAGE_FOLDER: str(work_folder(context.run_folder, context.stage,
                                               context.piece)),
                 **context.folders}
        if ask.tool == READ_FILE:
            roots = {**context.previous, **roots}
        if name not in roots:
            return ToolResult(content=f"refused: no folder {name!r} (folders: "
                              f"{', '.join(roots)})", outcome="refused")
        relative = str(ask.arguments.get("path", ""))
        problem = path_problem(relative)
        if problem is not None:
            return ToolResult(content=f"refused: {relative!r}: {problem.message}",
                              outcome="refused")
        root = Path(roots[name])
        root.mkdir(parents=True, exist_ok=True)
        target = (root / relative).resolve()
        if ask.tool != READ_FILE:
            refusal = self._write_refusal(context, name, target)
            if refusal is not None:
                return ToolResult(content=f"refused: {refusal}", outcome="refused")
        if not target.is_relative_to(root.resolve()):
            return ToolResult(content=f"refused: {relative!r} goes outside folder {name}",
                              outcome="refused")
        try:
            if ask.tool == READ_FILE:
                return ToolResult(content=target.read_text(encoding="utf-8")[:FILE_CHARS])
            target.parent.mkdir(parents=True, exist_ok=True)
            content = str(ask.arguments.get("content", ""))
            target.write_text(content, encoding="utf-8")
            return ToolResult(content=f"wrote {len(content.encode())} bytes to {relative}")
        except OSError as error:
            return ToolResult(content=f"failed: {relative}: {error.strerror or error}",
                              outcome="failed")

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.model_call, self.tool_call]

