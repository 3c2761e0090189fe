"""One work item's run as a Temporal workflow: a plan of stages; side effects are activities.

Where the item goes is decided by :func:`bees_cli.moves.next_move`; the workflow carries the
moves out. Its state is one :class:`~bees_cli.engine.workflow_state.LiveRun` (``self.live``).
Deterministic: imports only ``asyncio``, ``datetime``, ``temporalio``, its approval gate
(:mod:`~bees_cli.engine.workflow_gate`), its waits before a stage
(:mod:`~bees_cli.engine.workflow_waits`), its memory (:mod:`~bees_cli.engine.workflow_memory`),
its state and the engine's models (passed through the sandbox, never the workspace's YAML
models); no I/O, no clock but the workflow's.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.exceptions import CancelledError as TemporalCancelled
from temporalio.workflow import ActivityCancellationType

from bees_cli.engine.model_loop import MODEL_LOOP, run_model_stage, usage
from bees_cli.engine.pieces import Delegation
from bees_cli.engine.workflow_checks import ReviewChecks
from bees_cli.engine.workflow_gate import refuse
from bees_cli.engine.workflow_memory import stage_event, stage_failure
from bees_cli.engine.workflow_policies import (
    CONTINUES_AS_NEW,
    ELIGIBLE_LOCALLY,
    HANDOVER_RETRY,
    HANDOVER_WAITS_FOR_CLOUD,
    RELINQUISH_BETWEEN_STEPS,
    RELINQUISH_KEEPS_STATE,
    REVIEW_CHECKS,
    SHORT,
    STAGE_HEARTBEAT_TIMEOUT,
    STAGE_RETRY,
    STAGE_TIMEOUT,
    WAITS_BY_RETRY,
)
from bees_cli.engine.workflow_state import STOPPED, LiveRun
from bees_cli.engine.workflow_waits import StageWaits

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.handover_models import (
        HANDOVER_ACTIVITY,
        MAIN_PIECE,
        RELINQUISH_UPDATE,
        HandoverInput,
        HandoverOutput,
    )
    from bees_cli.engine.models import (
        ACCEPT_UPDATE,
        RELEASE_ACTIVITY,
        RETRY_UPDATE,
        RUN_ACTIVITY,
        WORKFLOW_NAME,
        CheckInput,
        CheckOutput,
        ItemInput,
        ItemState,
        PersonInput,
        RecordInput,
        ReleaseInput,
        StageInput,
        StageOutput,
    )
    from bees_cli.engine.snapshot import LoopView, StageView
    from bees_cli.moves import Accepted, ChangesRequested, Move, Phase, Retried, To, next_move
    from bees_cli.record.events import Accepted as AcceptedFact
    from bees_cli.record.events import Cancelled, Done, ReviewLimit
    from bees_cli.record.events import Retried as RetriedFact
    from bees_cli.record.reasons import Reason, read_reason
    from bees_cli.rules import BUSY_LIMIT, RECHECK_EVERY

__all__ = ["BUSY_LIMIT", "RECHECK_EVERY", "ItemWorkflow"]

@workflow.defn(name=WORKFLOW_NAME)
class ItemWorkflow(Delegation, ReviewChecks, StageWaits):
    """Moves one work item through its process (DESIGN.md, Rules: moving, busy agent, approvals).

    Before each stage: check eligibility and choose the agent, waiting and re-checking every
    15 s while the check fails; take a slot of a capped agent (re-checking every 15 s, failed
    after 10 minutes). Both waits are one activity retried every 15 s, so they add nothing to
    the history however long they last. When Temporal suggests it, the run continues as new
    before a stage, carrying the plan's state (:class:`ItemState`). Then run the stage. A
    finished stage moves the item on (on a stage with ``approval: required``, once a person
    approved). A review asking for changes sends it back
    to the stage under review with the comments; the third request stops it for a person, who
    retries (one more round) or accepts (moves past the review). A failed stage waits for a
    person's retry, which starts it again from the top as a new attempt. The ``done`` stage
    ends the run with ``"done"``; a cancelled run records ``cancelled`` and gives back its slot.

    While a stage runs, its agent asks (``bees.action``) before each add-on action: refused
    when not in its tools, held for approval when gated, answered from the journal when the
    same action with the same input already ran in this stage. Its agent may hand pieces of
    the stage to other agents (``bees.delegate``, :class:`~bees_cli.engine.pieces.Delegation`).
    """

    def __init__(self) -> None:
        self.live = LiveRun()

    # -- a person's requests ---------------------------------------------------------------

    @workflow.update(name=RETRY_UPDATE)
    def retry(self, person: PersonInput) -> str:
        """Start the failed stage again from the top (or, stopped at the review limit, one more
        round from the work stage); return the stage."""
        self.live.person = ("retry", person)
        return self.live.stage or ""

    @retry.validator
    def _retry_allowed(self, person: PersonInput) -> None:
        if self.live.phase not in (Phase.FAILED, Phase.STOPPED):
            raise refuse(f"it is {self._where()}: only a failed or stopped item can be retried")

    @workflow.update(name=RELINQUISH_UPDATE)
    async def relinquish(self, person: PersonInput) -> HandoverOutput:
        """Stop the run and hand it over (DESIGN.md, Rules: handover); return the checkpoint.

        The in-flight stage is cancelled and waited for (its agent's process group is
        killed), the checkpoint is written and the item released; the run then ends with
        ``"relinquished: restarts at STAGE"``. When the checkpoint cannot be written, the
        answer is not ok and the stage waits, failed, for a person's retry.
        """
        self.live.relinquish = person
        await workflow.wait_condition(lambda: self.live.handed is not None)
        assert self.live.handed is not None
        return self.live.handed

    @relinquish.validator
    def _relinquish_allowed(self, person: PersonInput) -> None:
        if self.live.phase in (Phase.DONE, Phase.CANCELLED, Phase.RELINQUISHED):
            raise refuse(f"it is {self._where()}: nothing to relinquish")
        if self.live.relinquish is not None:
            raise refuse("it is being relinquished already")

    @workflow.update(name=ACCEPT_UPDATE)
    def accept(self, person: PersonInput) -> str:
        """Take the work under review as it is and move past the review; return the stage."""
        self.live.person = ("accept", person)
        return self.live.stage or ""

    @accept.validator
    def _accept_allowed(self, person: PersonInput) -> None:
        if self.live.phase is not Phase.STOPPED:
            raise refuse(f"it is {self._where()}: only an item stopped at the review limit "
                          "can be accepted")

    # -- the plan --------------------------------------------------------------------------

    @workflow.run
    async def run(self, item: ItemInput) -> str:
        """Run the item to its ``done`` stage; return ``"done"`` (cancelled: records
        ``cancelled``, frees its slots, and ends as cancelled)."""
        self.live.item = item
        # decided once, at the first task: old histories replay the shape they were made with
        self.live.patches.waits_by_retry = workflow.patched(WAITS_BY_RETRY)
        self.live.patches.continues_as_new = workflow.patched(CONTINUES_AS_NEW)
        self.live.patches.eligible_locally = workflow.patched(ELIGIBLE_LOCALLY)
        try:
            result = await self._run_until_handed_over(item)
            # a decision still writing its facts finishes before the run ends
            await workflow.wait_condition(workflow.all_handlers_finished)
            return result
        except (asyncio.CancelledError, ActivityError) as error:
            # a cancelled stage surfaces as an ActivityError caused by its cancellation
            if isinstance(error, ActivityError) and not isinstance(error.cause,
                                                                   TemporalCancelled):
                raise
            await workflow.execute_activity(
                RELEASE_ACTIVITY, ReleaseInput(item_id=item.item_id),
                start_to_close_timeout=SHORT)
            self.live.phase = Phase.CANCELLED
            await self._close_waiting("cancelled")
            await self._record(RecordInput.of(
                Cancelled(stage=self.live.stage), item_id=item.item_id, status="cancelled",
                key="cancelled"))
            await workflow.wait_condition(workflow.all_handlers_finished)
            raise

    async def _run_until_handed_over(self, item: ItemInput) -> str:
        """Run the plan as a task, so that a relinquish can cancel it wherever it waits.

        Returns the plan's result, or ``"relinquished: restarts at STAGE"`` once handed over.
        """
        memo = self._restore(item)
        while True:
            plan = asyncio.create_task(self._plan(item, memo))
            try:
                await workflow.wait_condition(
                    lambda: plan.done() or self.live.relinquish is not None)  # noqa: B023
            except asyncio.CancelledError:
                plan.cancel()  # the run is cancelled: stop the stage, then say so
                await workflow.wait([plan])
                if not plan.cancelled():
                    plan.exception()  # retrieved: the stage's cancellation is expected
                raise
            if plan.done():
                return plan.result()
            plan.cancel()
            await workflow.wait([plan])  # the stage activity waits for its agent to stop
            if not plan.cancelled():
                plan.exception()  # retrieved: the stage's cancellation is expected
            assert self.live.relinquish is not None
            await self._stop_pieces()  # every piece stopped before the checkpoint
            restart = self._restart_stage(item)
            handed: HandoverOutput = await workflow.execute_activity(
                HANDOVER_ACTIVITY,
                HandoverInput(item_id=item.item_id, title=item.title,
                              run_folder=item.run_folder,
                              snapshot_digest=item.snapshot_digest, stage=self.live.stage,
                              restart_stages={
                                  MAIN_PIECE: restart,
                                  **self._piece_restarts(self.live.stage, self.live.round)},
                              who=self.live.relinquish.who, at=self.live.relinquish.at,
                              reviews=self._handed_reviews(memo)),
                result_type=HandoverOutput, start_to_close_timeout=timedelta(minutes=10),
                retry_policy=HANDOVER_RETRY if workflow.patched(HANDOVER_WAITS_FOR_CLOUD)
                else RetryPolicy(maximum_attempts=3))
            self.live.handed = handed
            if handed.ok:
                self.live.phase = Phase.RELINQUISHED
                await self._close_waiting("relinquished")
                return f"relinquished: restarts at {restart}"
            # the checkpoint could not be written: the item stays here, failed, until retried
            keeps = workflow.patched(RELINQUISH_KEEPS_STATE)
            if keeps:  # the stopped stage, its round and its next attempt; outputs kept
                memo.stage, memo.again = self.live.stage or memo.stage, self.live.stage is not None
                for key, attempt in handed.attempts.items():
                    memo.attempts[key] = max(memo.attempts.get(key, 1), attempt)
            await self._fail(memo.stage if keeps else restart, self.live.round,
                             self.live.agent or "-",
                             read_reason(handed.reason or "relinquish failed"), "relinquish")
            self.live.relinquish = None
            await self._wait_for_person()
            self.live.handed = None
            if not keeps:
                memo = self._fresh(item, restart)

    def _restart_stage(self, item: ItemInput) -> str:
        """Return the stage a handover restarts at: the current one, or for a review the
        stage that made the work under review (the first stage before any started)."""
        if self.live.stage is None:
            return item.start_stage or item.snapshot.process.stages[0].name
        stage = self._stage_spec(self.live.stage)
        if stage.kind == "review" and stage.reviews:
            return stage.reviews
        return stage.name

    async def _plan(self, item: ItemInput, memo: ItemState) -> str:
        """Run the process from ``memo.stage`` to its ``done`` stage; return ``"done"``.

        Each stage round waits to be eligible (and for a capped agent's slot), runs, and
        then goes where :func:`~bees_cli.moves.next_move` says; this carries the move out
        (the facts, a person's approval, retry or accept, the next stage).
        """
        stages = item.snapshot.process.stages
        position = {stage.name: index for index, stage in enumerate(stages)}
        index = position[memo.stage]
        while True:
            stage = stages[index]
            self.live.stage = stage.name
            memo.stage = stage.name
            if stage.kind == "done":
                self.live.phase = Phase.DONE
                await self._record(RecordInput.of(
                    Done(stage=stage.name), item_id=item.item_id, status="done", key="done"))
                return "done"
            if (self.live.patches.continues_as_new
                    and workflow.info().is_continue_as_new_suggested()):
                # a safe point: no stage runs; a person's request still writing finishes first
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._carry(item, memo))
            round_ = self._next_round(stage.name, memo)
            if stage.checks and workflow.patched(REVIEW_CHECKS):
                sent_back = await self._checks_send_back(item, memo, stage, round_)
                self._stop_if_relinquished()
                if sent_back is not None:
                    if sent_back.to is To.PERSON:
                        sent_back = await self._stop_for_person(stages, memo, stage.name,
                                                                round_, "-", sent_back)
                    index = position[sent_back.stage]
                    continue
            reviewed_by = memo.done_by.get(stage.reviews) if stage.reviews else None
            self.live.phase = Phase.WAITING
            check = await self._eligible(CheckInput(
                item_id=item.item_id, stage=stage.name, round=round_,
                reviewed_by=reviewed_by, snapshot_digest=item.snapshot_digest))
            self._stop_if_relinquished()
            assert check.agent is not None
            agent = self.live.agent = check.agent
            busy = await self._take_slot(stage.name, agent, round_)
            if busy is not None:
                await self._wait_for_retry(stages, memo, stage.name, round_, agent, busy, "busy")
                continue
            result = await self._run_round(item, memo, stage, round_, check)
            # a failed model stage's tokens go in its stage_failed fact (a finished one's
            # are in its stage_finished fact, also when its finish is then denied)
            spent = {} if result.ok else usage(result)
            event = stage_event(stage, result)
            move = next_move(self._run_state(stages, memo, stage.name, round_, Phase.RUNNING),
                             event)
            if move.to is To.APPROVAL:  # a denied finish fails the stage
                result = await self._finish_gate(stage, round_, agent, result)
                event = stage_event(stage, result)
                self._stop_if_relinquished()
                move = next_move(self._run_state(stages, memo, stage.name, round_,
                                                 Phase.RUNNING, approved=True), event)
            if move.to is To.RETRY:
                await self._wait_for_retry(stages, memo, stage.name, round_, agent,
                                           stage_failure(result), f"{result.attempt}:failed",
                                           spent)
                continue
            memo.done_by[stage.name] = agent
            memo.outputs[stage.name] = result.output_dir
            memo.comments = list(move.comments)
            if isinstance(event, ChangesRequested) and stage.reviews:
                memo.change_requests.setdefault(stage.name, []).append(list(event.comments))
            if move.to is To.PERSON:
                move = await self._stop_for_person(stages, memo, stage.name, round_, agent, move)
            index = position[move.stage]

    def _next_round(self, stage: str, memo: ItemState) -> int:
        """Count a new round of ``stage`` (not after a person's retry: the same round runs
        again as its next attempt); return the round about to run."""
        if not memo.again:
            memo.rounds[stage] = memo.rounds.get(stage, 0) + 1
        memo.again = False
        self.live.round, self.live.round_of = memo.rounds[stage], stage
        return self.live.round

    async def _run_round(self, item: ItemInput, memo: ItemState, stage: StageView, round_: int,
                         check: CheckOutput) -> StageOutput:
        """Run ``stage``'s ``round_`` with the agent ``check`` chose, as its next attempt;
        give a capped agent's slot back, stop the pieces it left running; return its end.

        Raises:
            asyncio.CancelledError: a relinquish is pending (:meth:`_stop_if_relinquished`).
        """
        assert check.agent is not None
        key = f"{stage.name}:{round_}"
        self.live.phase = Phase.RUNNING
        given = StageInput(
            item_id=item.item_id, title=item.title, run_folder=item.run_folder,
            stage=stage.name, round=round_, agent=check.agent,
            folders=check.folders, previous=dict(memo.outputs),
            comments=list(memo.comments) if stage.kind == "work" else [],
            snapshot_digest=item.snapshot_digest, attempt_base=memo.attempts.get(key, 1))
        try:
            self._stop_if_relinquished()  # a cancel swallowed as the slot was granted
            result = await self._run_stage(given, self._snapshot.agents[check.agent].loop)
        finally:
            if self._capped(check.agent):
                await workflow.execute_activity(
                    RELEASE_ACTIVITY, ReleaseInput(item_id=item.item_id, stage=stage.name),
                    start_to_close_timeout=SHORT)
        self._stop_if_relinquished()  # the stage finished as the relinquish arrived
        # a piece its caller did not wait for is stopped: never done with a piece running
        await self._end_stage_pieces(stage.name, round_, result.attempt)
        memo.attempts[key] = result.attempt + 1
        return result

    async def _wait_for_retry(self, stages: list[StageView], memo: ItemState, stage: str,
                              round_: int, agent: str, why: Reason, key: str,
                              data: dict[str, int] | None = None) -> None:
        """Fail ``stage``'s ``round_`` with ``why`` and wait for a person's retry, which
        runs the same round again (``memo.again``; DESIGN.md, Rules: moving)."""
        await self._fail(stage, round_, agent, why, key, data)
        await self._wait_for_person()
        self._retried(stage, round_)
        memo.again = self._answered(stages, memo, stage, round_, Retried(), Phase.FAILED).again

    async def _stop_for_person(self, stages: list[StageView], memo: ItemState, stage: str,
                               round_: int, agent: str, move: Move) -> Move:
        """Stop the item at review ``stage``'s limit (``move``) until a person retries or
        accepts; return where their answer takes it (the review's count starts again)."""
        asked = memo.change_requests[stage]
        self.live.person = None
        self.live.phase = Phase.STOPPED
        await self._record(RecordInput.of(
            ReviewLimit(stage=stage, round=round_, rounds=[list(c) for c in asked]),
            item_id=self._id, status=STOPPED, reason=move.reason, agent=agent,
            key=f"{stage}:{round_}:limit"))
        choice = await self._wait_for_person()
        memo.change_requests[stage] = []
        answer = Accepted() if choice == "accept" else Retried()
        return self._answered(stages, memo, stage, round_, answer, Phase.STOPPED)

    def _answered(self, stages: list[StageView], memo: ItemState, stage: str, round_: int,
                  answer: Accepted | Retried, phase: Phase) -> Move:
        """Return the move of a person's ``answer`` to the item that waited at ``stage``'s
        ``round_`` in ``phase`` (failed, or stopped at the review limit)."""
        return next_move(self._run_state(stages, memo, stage, round_, phase), answer)

    async def _run_stage(self, given: StageInput, loop: LoopView | None) -> StageOutput:
        """Run the stage: a command agent in one ``bees.run_stage`` activity; since
        :data:`MODEL_LOOP`, a model agent as the model loop (issue 13, model_loop.py)."""
        if loop is not None and workflow.patched(MODEL_LOOP):
            return await run_model_stage(given, loop, between=self._stop_if_relinquished)
        result: StageOutput = await workflow.execute_activity(
            RUN_ACTIVITY, given, result_type=StageOutput,
            start_to_close_timeout=STAGE_TIMEOUT,
            heartbeat_timeout=STAGE_HEARTBEAT_TIMEOUT,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            retry_policy=STAGE_RETRY,
        )
        return result

    def _stop_if_relinquished(self) -> None:
        """Stop the plan at a step boundary when a relinquish is pending (since
        :data:`RELINQUISH_BETWEEN_STEPS`; DESIGN.md, Rules: handover).

        The relinquish cancels the plan, but a stage, eligibility check or tool call that
        finishes as the cancel arrives resolves with its result and the cancel is swallowed:
        without this the plan went on to the next stages. The handover then restarts at the
        current stage (:meth:`_restart_stage`). ``workflow.patched`` is asked only when a
        relinquish is pending, so other histories get no marker.

        Raises:
            asyncio.CancelledError: a relinquish is pending (patched runs).
        """
        if self.live.relinquish is not None and workflow.patched(RELINQUISH_BETWEEN_STEPS):
            raise asyncio.CancelledError

    async def _wait_for_person(self) -> str:
        """Wait for a person's retry or accept; record it (who, when); return which.

        Raises:
            asyncio.CancelledError: a relinquish is pending (its cancel swallowed by the
                fact recorded just before).
        """
        self._stop_if_relinquished()
        await workflow.wait_condition(lambda: self.live.person is not None)
        assert self.live.person is not None
        choice, person = self.live.person
        self.live.person = None
        self.live.phase = Phase.STARTING
        said = RetriedFact if choice == "retry" else AcceptedFact
        await self._record(RecordInput.of(
            said(stage=self.live.stage, round=self.live.round, who=person.who, asked_at=person.at),
            item_id=self._id, status="starting",
            key=self._fact(f"{self.live.stage}:{self.live.round}:{choice}")))
        return choice
