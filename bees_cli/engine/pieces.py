"""Pieces in the engine: the item run's ``bees.delegate`` update and the ``bees.piece`` child
workflow that does one piece (issue 14, points 1 and 2), stopped with a relinquish (point 3).

Deterministic like :mod:`~bees_cli.engine.workflows`: imports only ``asyncio``,
``functools``, ``collections.abc``, ``datetime``, ``temporalio`` and the engine's models
(passed through); side effects are activities (:mod:`~bees_cli.engine.piece_activities`).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.exceptions import CancelledError as TemporalCancelled
from temporalio.workflow import ActivityCancellationType, ParentClosePolicy

from bees_cli.engine.model_loop import run_model_stage
from bees_cli.engine.workflow_gate import refuse
from bees_cli.engine.workflow_policies import (
    PIECES,
    RECHECK,
    RELINQUISH_STOPS_PIECES,
    RELINQUISH_STOPS_TOP_DOWN,
    SHORT,
    STAGE_END_GRACE,
    STAGE_END_STOPS_PIECES,
    STAGE_HEARTBEAT_TIMEOUT,
    STAGE_RETRY,
    STAGE_TIMEOUT,
)
from bees_cli.engine.workflow_state import RunParts
from bees_cli.engine.workflow_waits import too_long

with workflow.unsafe.imports_passed_through():
    from bees_cli.agents.pieces import (
        ask_digest,
        piece_folder,
        piece_name,
        piece_workflow_id,
        refusal,
        task_text,
    )
    from bees_cli.engine.models import (
        RELEASE_ACTIVITY,
        ReleaseInput,
        SlotInput,
        SlotOutput,
        StageInput,
        StageOutput,
    )
    from bees_cli.engine.piece_models import (
        DELEGATE_UPDATE,
        PIECE_ELIGIBLE_ACTIVITY,
        PIECE_RECORD_ACTIVITY,
        PIECE_RUN_ACTIVITY,
        PIECE_SLOT_ACTIVITY,
        PIECE_WORKFLOW,
        PIECES_QUERY,
        DelegateAnswer,
        DelegateAsk,
        PieceCheckOutput,
        PieceInput,
        PieceOutput,
        PieceRecordInput,
        PieceRunInput,
        PieceView,
    )
    from bees_cli.engine.snapshot import EngineSnapshot
    from bees_cli.moves import Phase
    from bees_cli.record.events_pieces import (
        PieceFailed,
        PieceFinished,
        PieceStarted,
        PieceStopped,
    )
    from bees_cli.record.reasons import Reason, read_reason

RECORD_TIMEOUT = timedelta(seconds=60)


def slot_key(piece: PieceInput) -> str:
    """Return the name under which a piece holds its agent's slot: ``STAGE/pieces/PIECE``."""
    return f"{piece.stage}/pieces/{piece.piece}"


class Delegation(RunParts):
    """The item run's side of pieces: ``bees.delegate`` starts a ``bees.piece`` child.

    Every piece of the item, at any depth, is a child of the item's run, so the run knows
    them all: the caller's chain (a cycle is refused), the depth (the workspace's limit is
    enforced), which agent may ask for an add-on action (a piece's agent on an approval
    stage is held like the stage's), and what to stop with the run: ``_pieces`` holds each
    piece's :class:`PieceView` (its ``workflow_id``, ``status``, ``restart_stage``); a
    cancelled piece records ``stopped`` and gives its slot back, and children close with
    the run (``ParentClosePolicy.REQUEST_CANCEL``).
    """

    @workflow.update(name=DELEGATE_UPDATE)
    async def delegate(self, ask: DelegateAsk) -> DelegateAnswer:
        """Hand ``ask.task`` to another agent as a new piece; return it once started.

        The piece (a ``bees.piece`` child workflow, id ``ITEM/STAGE/rR-aA-pN``) is written
        to the local record as ``waiting`` before this returns, so the caller can wait for
        its end there.
        """
        assert self.live.item is not None
        workflow.patched(PIECES)
        caller = self.live.pieces.get(ask.caller_piece) if ask.caller_piece else None
        chain = [*caller.chain, ask.caller_agent] if caller else [ask.caller_agent]
        depth = caller.depth + 1 if caller else 1
        seq = 1 + sum(1 for p in self.live.pieces.values()
                      if (p.stage, p.round, p.attempt) == (ask.stage, ask.round, ask.attempt))
        name = piece_name(ask.round, ask.attempt, seq)
        item = self.live.item
        workflow_id = piece_workflow_id(item.item_id, ask.stage, name)
        folder = str(piece_folder(item.run_folder, ask.stage, name))
        start = PieceInput(
            item_id=item.item_id, title=item.title, run_folder=item.run_folder,
            snapshot_digest=item.snapshot_digest, stage=ask.stage, round=ask.round,
            attempt=ask.attempt, seq=seq, piece=name, parent=ask.caller_piece, depth=depth,
            chain=chain, named=ask.agent, task=ask.task, input=ask.input,
            ask_digest=ask_digest(ask.agent, ask.task, ask.input), workflow_id=workflow_id,
            folder=folder)
        self.live.pieces[name] = PieceView(
            piece=name, stage=ask.stage, round=ask.round, attempt=ask.attempt,
            parent=ask.caller_piece, depth=depth, chain=chain, named=ask.agent,
            workflow_id=workflow_id, restart_stage=ask.stage)
        await workflow.execute_activity(
            PIECE_RECORD_ACTIVITY, PieceRecordInput.of(
                PieceStarted(stage=ask.stage, round=ask.round, piece=name,
                             parent=ask.caller_piece, caller=ask.caller_agent,
                             named=ask.agent, task=ask.task, depth=depth),
                item_id=item.item_id, piece=name, start=start,
                key=f"{ask.stage}:{ask.round}:piece:{name}:started"),
            start_to_close_timeout=RECORD_TIMEOUT)
        handle = await workflow.start_child_workflow(
            PIECE_WORKFLOW, start, id=workflow_id, result_type=PieceOutput,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL)
        view = self.live.pieces[name]
        self.live.piece_handles[name] = handle

        async def watch() -> None:
            try:
                out: PieceOutput = await handle
                view.status, view.agent = out.status, out.agent
            except BaseException:
                view.status = "stopped"

        view.status = "running"
        asyncio.create_task(watch())  # noqa: RUF006 - the run keeps its pieces in _pieces
        return DelegateAnswer(piece=name, workflow_id=workflow_id, folder=folder, depth=depth)

    @delegate.validator
    def _delegate_allowed(self, ask: DelegateAsk) -> None:
        if self.live.relinquish is not None:
            raise refuse(f"stage {ask.stage} is stopping: the item is being relinquished")
        if self.live.item is None or self.live.phase not in (Phase.RUNNING, Phase.APPROVAL) or (
                ask.stage != self.live.stage):
            raise refuse(f"stage {ask.stage} is not running (the item is {self.live.phase.value}"
                         f"{' at ' + self.live.stage if self.live.stage else ''})")
        if (ask.stage, ask.round, ask.attempt) in self.live.ended_attempts:
            raise refuse(f"stage {ask.stage} (round {ask.round}, attempt {ask.attempt}) has "
                         f"ended: its agent is done, so its pieces are stopped")
        snapshot: EngineSnapshot = self.live.item.snapshot
        if ask.agent not in snapshot.agents:
            names = ", ".join(sorted(snapshot.agents)) or "none"
            raise refuse(f"no agent named {ask.agent} in the item's workspace (agents: {names})")
        if not ask.task.strip():
            raise refuse("a piece needs a task: say what the agent should do")
        if ask.caller_piece is None:
            if ask.caller_agent != self.live.agent:
                raise refuse(f"agent {ask.caller_agent} does not run stage {ask.stage} "
                             f"(its agent is {self.live.agent})")
            chain, depth = [ask.caller_agent], 1
        else:
            caller = self.live.pieces.get(ask.caller_piece)
            if caller is None or caller.status not in ("waiting", "running") or (
                    caller.agent not in (None, ask.caller_agent)):
                raise refuse(f"piece {ask.caller_piece} of agent {ask.caller_agent} is not "
                             f"running in stage {ask.stage}")
            chain, depth = [*caller.chain, ask.caller_agent], caller.depth + 1
        why = refusal(chain=chain, agent=ask.agent, depth=depth,
                      max_depth=snapshot.max_piece_depth)
        if why is not None:
            raise refuse(why)

    @workflow.query(name=PIECES_QUERY)
    def pieces_view(self) -> list[PieceView]:
        """Return the run's pieces, in the order they were handed out."""
        return list(self.live.pieces.values())

    async def _stop_pieces(self) -> None:
        """Stop every live piece of the run and wait until each has stopped (DESIGN.md,
        Rules: handover; issue 14, point 3): its child workflow is cancelled, its agent's
        process stopped, its slot given back and ``stopped`` recorded before this returns.

        Runs since :data:`RELINQUISH_STOPS_PIECES`; asked only when a piece is live, so a
        history without live pieces carries no marker (before it, the pieces were cancelled
        only as the run closed, after its checkpoint was written). Since
        :data:`RELINQUISH_STOPS_TOP_DOWN` one depth at a time, callers first (the stage's own
        agent is stopped before any piece).
        """
        def live() -> list[str]:
            return [name for name, view in self.live.pieces.items()
                    if view.status in ("waiting", "running")]

        if not live() or not workflow.patched(RELINQUISH_STOPS_PIECES):
            return
        await self._stop_live(live, top_down=workflow.patched(RELINQUISH_STOPS_TOP_DOWN))

    async def _end_stage_pieces(self, stage: str, round_: int, attempt: int) -> None:
        """Stop the live pieces of ``stage`` once its agent ended (DESIGN.md, Words: piece;
        issue 23, point 3): a caller that did not wait for a piece's answer leaves no piece
        running while the item moves on (an item is never ``done`` with a piece running).

        From now on an ask of that stage attempt (``round_``, ``attempt``) is refused. Since
        :data:`STAGE_END_STOPS_PIECES`, asked only when the stage ended with live pieces
        (other histories carry no marker): each gets :data:`STAGE_END_GRACE` to end by
        itself (a piece whose answer was read, its workflow about to close), then the rest
        are stopped callers first, each once its child has started, and awaited.
        """
        self.live.ended_attempts.add((stage, round_, attempt))

        def live() -> list[str]:
            return [name for name, view in self.live.pieces.items()
                    if view.stage == stage and view.status in ("waiting", "running")]

        if not live() or not workflow.patched(STAGE_END_STOPS_PIECES):
            return
        try:
            await workflow.wait_condition(lambda: not live(), timeout=STAGE_END_GRACE)
            return
        except TimeoutError:
            pass
        cancelled: set[str] = set()

        def now() -> list[str]:
            """The live pieces of the least depth whose child started, not yet cancelled (a
            piece still being handed out is cancelled once its child has started)."""
            names = live()
            if not names:
                return []
            depth = min(self.live.pieces[name].depth for name in names)
            return [name for name in names if self.live.pieces[name].depth == depth
                    and name in self.live.piece_handles and name not in cancelled]

        while live():
            for name in now():
                cancelled.add(name)
                handle = self.live.piece_handles[name]
                if not handle.done():
                    handle.cancel()
            await workflow.wait_condition(lambda: not live() or bool(now()))

    async def _stop_live(self, live: Callable[[], list[str]], *, top_down: bool) -> None:
        """Cancel the pieces ``live()`` names (with ``top_down``, the least deep first) and
        wait until each has ended, until ``live()`` names none (a relinquish)."""
        stopping = live()
        while stopping:  # a piece handed out as the others stopped is stopped too
            if top_down:  # callers first: a piece never sees the one it handed out stop
                depth = min(self.live.pieces[name].depth for name in stopping)
                stopping = [name for name in stopping if self.live.pieces[name].depth == depth]
            for name in stopping:
                handle = self.live.piece_handles.get(name)
                if handle is not None and not handle.done():
                    handle.cancel()
            await workflow.wait_condition(functools.partial(self._all_ended, stopping))
            stopping = live()

    def _all_ended(self, names: list[str]) -> bool:
        """Tell whether every piece of ``names`` has ended (finished, failed or stopped)."""
        return all(self.live.pieces[name].status not in ("waiting", "running") for name in names)

    def _piece_restarts(self, stage: str | None, round_: int) -> dict[str, str]:
        """Return piece → the stage it restarts at, for each unfinished piece of the stopped
        stage's last attempt (round ``round_``): its caller's stage restarts from the top and
        hands it out again; a finished piece is answered from the checkpoint instead."""
        mine = [view for view in self.live.pieces.values()
                if (view.stage, view.round) == (stage, round_)]
        if not mine:
            return {}
        attempt = max(view.attempt for view in mine)
        return {view.piece: view.restart_stage or view.stage for view in mine
                if view.attempt == attempt and view.status != "finished"}

    def _piece_agent(self, piece: str | None, agent: str) -> bool:
        """Tell whether ``agent`` runs live piece ``piece`` of this run (it may then ask for
        add-on actions in the stage, under the stage's approval gate)."""
        view = self.live.pieces.get(piece or "")
        return view is not None and view.status in ("waiting", "running") and (
            view.agent in (None, agent))


@workflow.defn(name=PIECE_WORKFLOW)
class PieceWorkflow:
    """Does one piece (DESIGN.md, Words: piece): check eligibility and choose its agent as a
    stage's (re-checked every 15 s), take a slot of a capped agent (re-checked every 15 s,
    failed after 10 minutes), run the agent in the piece's folder (a command agent in one
    activity, a model agent as the model loop), give the slot back, and record how it ended.
    Its result (final text and files) is what the caller's tool call answers.
    """

    def __init__(self) -> None:
        self._agent: str | None = None

    @workflow.run
    async def run(self, piece: PieceInput) -> PieceOutput:
        """Run the piece; return how it ended (``finished`` or ``failed`` with the reason).

        Raises:
            asyncio.CancelledError: the run stopped it (recorded ``stopped``, slot given back).
        """
        try:
            out = await self._run(piece)
        except (asyncio.CancelledError, ActivityError) as error:
            if isinstance(error, ActivityError) and not isinstance(error.cause,
                                                                   TemporalCancelled):
                raise
            await workflow.execute_activity(
                RELEASE_ACTIVITY, ReleaseInput(item_id=piece.item_id, stage=slot_key(piece)),
                start_to_close_timeout=SHORT)
            stopped = Reason(code="piece_stopped")
            await self._record(piece, "stopped", {"status": "stopped",
                                                  "reason": stopped.words()}, stopped)
            raise
        # a finished piece's answer, files and tokens are collected as its end is recorded
        # its reason as the runner, model loop or slot handed it (read back from its words
        # only in an output an older history carries)
        await self._record(piece, out.status, {"status": out.status, "reason": out.reason,
                                               "exit_code": out.exit_code},
                           out.why or (None if out.reason is None else read_reason(out.reason)))
        return out.model_copy(update={"agent": self._agent})

    async def _run(self, piece: PieceInput) -> PieceOutput:
        check: PieceCheckOutput = await workflow.execute_activity(
            PIECE_ELIGIBLE_ACTIVITY, piece, result_type=PieceCheckOutput,
            start_to_close_timeout=SHORT, retry_policy=RECHECK)
        assert check.agent is not None
        self._agent = agent = check.agent
        if check.cap is not None:
            slot: SlotOutput = await workflow.execute_activity(
                PIECE_SLOT_ACTIVITY, SlotInput(item_id=piece.item_id, stage=slot_key(piece),
                                               agent=agent, cap=check.cap, round=piece.round),
                result_type=SlotOutput, start_to_close_timeout=SHORT, retry_policy=RECHECK)
            if not slot.granted:
                busy = too_long(slot)
                return PieceOutput(status="failed", agent=agent, reason=busy.words(), why=busy)
        try:
            if check.loop is not None:
                return await self._model(piece, agent, check)
            out: PieceOutput = await workflow.execute_activity(
                PIECE_RUN_ACTIVITY, PieceRunInput(piece=piece, agent=agent,
                                                  folders=dict(check.folders)),
                result_type=PieceOutput, start_to_close_timeout=STAGE_TIMEOUT,
                heartbeat_timeout=STAGE_HEARTBEAT_TIMEOUT,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                retry_policy=STAGE_RETRY)
            return out
        finally:
            if check.cap is not None:
                await workflow.execute_activity(
                    RELEASE_ACTIVITY, ReleaseInput(item_id=piece.item_id, stage=slot_key(piece)),
                    start_to_close_timeout=SHORT)

    async def _model(self, piece: PieceInput, agent: str, check: PieceCheckOutput) -> PieceOutput:
        """Run a model agent's piece as the model loop, in the piece's folder (its answer,
        files and tokens are read back when the piece's end is recorded)."""
        assert check.loop is not None
        given = StageInput(
            item_id=piece.item_id, title=piece.title, run_folder=piece.run_folder,
            stage=piece.stage, round=piece.round, agent=agent, folders=dict(check.folders),
            snapshot_digest=piece.snapshot_digest, attempt_base=piece.attempt,
            piece=piece.piece, task=task_text(piece.task, piece.input, piece.chain))
        result: StageOutput = await run_model_stage(given, check.loop)
        if not result.ok:
            return PieceOutput(status="failed", agent=agent, reason=result.reason,
                               why=result.why)
        return PieceOutput(status="finished", agent=agent)

    async def _record(self, piece: PieceInput, kind: str, changes: dict[str, object],
                      reason: Reason | None) -> None:
        """Change the piece's row and record how it ended (``finished``, ``failed``,
        ``stopped``) with ``reason`` as its code."""
        end = {"finished": PieceFinished, "failed": PieceFailed}.get(kind, PieceStopped)
        await workflow.execute_activity(
            PIECE_RECORD_ACTIVITY, PieceRecordInput.of(
                end(stage=piece.stage, round=piece.round, piece=piece.piece,
                    agent=self._agent, reason=reason),
                item_id=piece.item_id, piece=piece.piece, changes=changes,
                key=f"{piece.stage}:{piece.round}:piece:{piece.piece}:{kind}"),
            start_to_close_timeout=RECORD_TIMEOUT)
