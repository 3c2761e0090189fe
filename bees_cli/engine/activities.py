"""The engine's activities: eligibility and agent choice, running a stage, writing the local record.

Each is a method of :class:`BeesActivities`, which receives its dependencies (the local
record), takes one input model and has a stable ``name=``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from bees_cli.engine.models import (
    AWAIT_ELIGIBLE_ACTIVITY,
    AWAIT_SLOT_ACTIVITY,
    CHECK_ACTIVITY,
    JOURNAL_ACTIVITY,
    RECORD_ACTIVITY,
    RELEASE_ACTIVITY,
    REVIEW_CHECKS_ACTIVITY,
    RUN_ACTIVITY,
    SLOT_ACTIVITY,
    CheckInput,
    CheckOutput,
    ChecksInput,
    ChecksOutput,
    JournalEntry,
    JournalFound,
    JournalQuery,
    RecordInput,
    ReleaseInput,
    SlotInput,
    SlotOutput,
    StageInput,
    StageOutput,
)
from bees_cli.engine.snapshot_store import load_snapshot
from bees_cli.record.events import (
    Busy,
    PickData,
    Picked,
    ReviewCheck,
    StageFailed,
    StageFinished,
    StageInterrupted,
    StageStarted,
    Waiting,
)
from bees_cli.record.local import LocalRecord
from bees_cli.record.reasons import Reason
from bees_cli.record.states import Status, WaitKind
from bees_cli.rules import busy_fails, waited_for_slot

if TYPE_CHECKING:
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.agents.snapshot import ItemSnapshot

STAGE_ENDS: frozenset[str] = frozenset({Status.DONE, Status.FAILED, Status.WAITING_FOR_PERSON,
                                       Status.CANCELLED})
"""Statuses a ``bees.record`` entry sets when the item's stage has ended (besides a
``stage_finished`` fact): the stage's held MCP servers are stopped."""

NOT_ELIGIBLE = "NotEligible"
"""Type of the retryable failure of ``bees.await_eligible`` while the stage cannot start."""

AGENT_BUSY = "AgentBusy"
"""Type of the retryable failure of ``bees.await_slot`` while the agent has no free slot."""


class BeesActivities:
    """The activities of this computer's worker.

    Args:
        record: the local record they write (``bees status`` reads it).
        heartbeat_every: seconds between heartbeats of a running stage.
        engine_env: variables handed to every stage's program so that ``bees action`` finds
            this computer's engine (``BEES_HOME``, ``BEES_TEMPORAL_ADDRESS``).
        groups: the folder of running stages' process group files (default: ``stages``
            beside the local record, i.e. in the data dir; see :mod:`bees_cli.agents.groups`).
        mcp_sessions: the local MCP servers held for the stages (``bees run``'s), stopped
            when a stage ends or the item is cancelled (None: none are held).
    """

    def __init__(self, record: LocalRecord, *, heartbeat_every: float = 2.0,
                 engine_env: dict[str, str] | None = None, groups: Path | None = None,
                 mcp_sessions: McpSessions | None = None) -> None:
        from bees_cli.agents.groups import groups_dir

        self.record = record
        self.mcp_sessions = mcp_sessions
        self.heartbeat_every = heartbeat_every
        self.engine_env = dict(engine_env or {})
        self.groups = groups or groups_dir(record.path.parent)
        self._said: dict[str, tuple[str, str, int, str]] = {}
        """Item → (run, stage, round, reasons) last written as its wait: a pass that finds the
        same writes nothing (a week of waiting is 40,320 passes)."""
        self._snapshots: dict[str, ItemSnapshot] = {}
        """Digest → the whole snapshot, read once per worker."""

    def _snapshot(self, item_id: str, digest: str | None) -> ItemSnapshot:
        """Return the item's whole snapshot (:func:`load_snapshot`), kept by digest."""
        if digest is not None and digest in self._snapshots:
            return self._snapshots[digest]
        snapshot = load_snapshot(self.record, item_id, digest)
        if digest is not None:
            self._snapshots[digest] = snapshot
        return snapshot

    @activity.defn(name=CHECK_ACTIVITY)
    async def check_stage(self, check: CheckInput) -> CheckOutput:
        """Check eligibility of ``check.stage`` here and choose its agent (DESIGN.md, Rules).

        See :meth:`check_now`; runs in a thread (file checks and SQLite writes). Run as a
        local activity (a stage's first check, :mod:`~bees_cli.engine.stage_check`), it
        passes its workflow run, so the ``bees.await_eligible`` wait that follows a failed
        check writes nothing for reasons already written.
        """
        info = activity.info()
        return await asyncio.to_thread(self.check_now, check,
                                       info.workflow_run_id if info.is_local else None)

    def check_now(self, check: CheckInput, run: str | None = None) -> CheckOutput:
        """Check eligibility of ``check.stage`` here and choose its agent (DESIGN.md, Rules).

        Records the outcome: on success the pick (agent, reason, skipped candidates) and the
        status ``running``; on failure the status ``waiting`` with the reasons joined by
        ``"; "`` (each distinct set of reasons is one fact of the history). With ``run`` (the
        workflow run asking), a pass that finds the reasons it last wrote for that run writes
        nothing.
        """
        from bees_cli.agents.eligibility import check_eligibility

        snapshot = self._snapshot(check.item_id, check.snapshot_digest)
        result = check_eligibility(
            snapshot=snapshot, stage_name=check.stage, reviewed_by=check.reviewed_by)
        pick = None if result.pick is None else result.pick.to_json()
        prefix = f"{check.stage}:{check.round}"
        if not result.ok:
            reason = "; ".join(result.reasons)
            said = (run or "", check.stage, check.round, reason)
            if run is not None and self._said.get(check.item_id) == said:
                # the same reasons as on the last pass: nothing new for the record
                return CheckOutput(ok=False, reasons=list(result.reasons), pick=pick,
                                   folders=result.folders)
            digest = hashlib.sha256(reason.encode()).hexdigest()[:12]
            with self.record.step():
                self.record.add_fact(check.item_id, Waiting(
                    stage=check.stage, round=check.round,
                    reasons=list(result.whys),
                    pick=None if pick is None else PickData.model_validate(pick)),
                    key=f"{prefix}:waiting:{digest}")
                self.record.set_state(check.item_id, status=Status.WAITING, stage=check.stage,
                                      reason=reason, wait=WaitKind.ELIGIBILITY)
            self._said[check.item_id] = said
            return CheckOutput(ok=False, reasons=list(result.reasons), pick=pick,
                               folders=result.folders)
        assert result.pick is not None and result.pick.agent is not None
        self._said.pop(check.item_id, None)
        with self.record.step():
            self.record.add_fact(check.item_id, Picked(
                stage=check.stage, round=check.round, pick=PickData.model_validate(pick),
                reviewed_by=check.reviewed_by), key=f"{prefix}:pick")
            self.record.set_state(check.item_id, status="running", stage=check.stage,
                                  agent=result.pick.agent)
        return CheckOutput(ok=True, agent=result.pick.agent, pick=pick, folders=result.folders)

    @activity.defn(name=AWAIT_ELIGIBLE_ACTIVITY)
    async def await_eligible(self, check: CheckInput) -> CheckOutput:
        """Check eligibility (:meth:`check_now`); while it fails, fail retryably.

        Why: the workflow runs it under a retry policy of
        :data:`~bees_cli.rules.RECHECK_EVERY` with no backoff and no attempt limit (DESIGN.md,
        Rules: the item waits, re-checking every 15 s). Retries are not written to Temporal's
        history, so a week of waiting costs a few events; the waiting status and each new
        reason reach the local record here.

        Raises:
            ApplicationError: of type :data:`NOT_ELIGIBLE` with the reasons, to be retried
                (benign: logged at debug level, not once per pass as a warning).
        """
        out = await asyncio.to_thread(self.check_now, check, activity.info().workflow_run_id)
        if not out.ok:
            raise ApplicationError("; ".join(out.reasons), type=NOT_ELIGIBLE,
                                   category=ApplicationErrorCategory.BENIGN)
        return out

    @activity.defn(name=RUN_ACTIVITY)
    async def run_stage(self, stage: StageInput) -> StageOutput:
        """Run the stage's command agent in its stage folder, heartbeating while it runs.

        A new attempt (the worker was lost mid-stage) starts the stage again from the top;
        the runner first stops what the last attempt left running (``kill_leftover``).
        Exit 0 finishes the stage; any other exit is a result with ``ok=False`` and the
        reason (not an error, so it is not retried).
        """
        from bees_cli.agents.eligibility import find_stage
        from bees_cli.agents.review_checks import output_problem
        from bees_cli.agents.runner import StageRequest, run_command_stage, stage_dir
        from bees_cli.workspace.models import CommandRunner

        attempt = stage.attempt_base + activity.info().attempt - 1
        if activity.info().attempt > 1:
            await asyncio.to_thread(self._interrupted, stage, attempt - 1)
        await asyncio.to_thread(self._started, stage, attempt)
        snapshot = await asyncio.to_thread(self._snapshot, stage.item_id, stage.snapshot_digest)
        spec = find_stage(snapshot, stage.stage)
        agent = snapshot.agents[stage.agent]
        if not isinstance(agent.runner, CommandRunner):
            why = Reason(code="agent_failed", agent=stage.agent,
                         said="model runners are not supported yet")
            out = StageOutput(
                ok=False, reason=why.words(), why=why,
                output_dir=str(stage_dir(stage.run_folder, stage.stage)), attempt=attempt)
            await asyncio.to_thread(self._finish, stage, out)
            return out
        request = StageRequest(
            item_id=stage.item_id,
            title=stage.title,
            process=snapshot.process_name,
            stage=stage.stage,
            stage_kind=spec.kind,
            reviews=spec.reviews,
            agent=stage.agent,
            instructions=agent.instructions,
            command=list(agent.runner.command),
            env=dict(agent.runner.env),
            run_folder=stage.run_folder,
            workspace_root=snapshot.workspace_root,
            folders=dict(stage.folders),
            previous=dict(stage.previous),
            review_comments=list(stage.comments),
            round=stage.round,
            attempt=attempt,
            engine_env=dict(self.engine_env),
        )
        result = await run_command_stage(
            request, heartbeat=activity.heartbeat, heartbeat_every=self.heartbeat_every,
            groups=self.groups)
        missing = None if not result.ok or spec.output is None else await asyncio.to_thread(
            output_problem, spec.output, Path(result.output_dir), Path(snapshot.workspace_root))
        out = StageOutput(
            ok=result.ok and missing is None,
            reason=f"agent {stage.agent}: {missing}" if missing else result.reason,
            why=None if missing else result.why, verdict=result.verdict,
            comments=list(result.comments), output_dir=str(result.output_dir),
            stdout_path=result.stdout_path, stderr_path=result.stderr_path,
            exit_code=result.exit_code, attempt=attempt)
        await asyncio.to_thread(self._finish, stage, out)
        return out

    @activity.defn(name=REVIEW_CHECKS_ACTIVITY)
    async def review_checks(self, given: ChecksInput) -> ChecksOutput:
        """Run the review stage's ``checks:`` in the item's run folder (issue 26, point 5;
        :func:`~bees_cli.agents.review_checks.run_checks`): each outcome is a
        ``review_check`` fact; the failed ones' messages are the change request."""
        return await asyncio.to_thread(self._review_checks, given)

    def _review_checks(self, given: ChecksInput) -> ChecksOutput:
        from bees_cli.agents.eligibility import find_stage
        from bees_cli.agents.review_checks import run_checks

        snapshot = self._snapshot(given.item_id, given.snapshot_digest)
        spec = find_stage(snapshot, given.stage)
        with self.record.step():
            self.record.set_state(given.item_id, status="running", stage=given.stage)
        outcomes = run_checks(spec.checks, Path(given.run_folder),
                              Path(snapshot.workspace_root))
        with self.record.step():
            for index, outcome in enumerate(outcomes):
                self.record.add_fact(given.item_id, ReviewCheck(
                    stage=given.stage, round=given.round, check=outcome.check, ok=outcome.ok,
                    message=outcome.message), key=f"{given.stage}:{given.round}:check:{index}")
        failed = [o.message or o.check for o in outcomes if not o.ok]
        return ChecksOutput(ok=not failed, comments=failed)

    def _interrupted(self, stage: StageInput, attempt: int) -> None:
        """Say in the history that ``attempt`` of the stage did not end: ``bees run``
        stopped (it marked the item waiting), or its worker stopped otherwise (kill -9, a
        crash). Nothing is said when the attempt waited for a person's approval: ``bees run``
        ending then is the pause the approval asks for (``--exit-when-idle`` stops there),
        and the answer is what starts the stage again, not an interruption."""
        with self.record.step():
            row = self.record.item(stage.item_id)
            if row.status == Status.WAITING_FOR_APPROVAL:
                return
            stopped = row.wait == WaitKind.ENGINE_NOT_RUNNING
            self.record.add_fact(stage.item_id, StageInterrupted(
                stage=stage.stage, round=stage.round, agent=stage.agent, attempt=attempt,
                reason=Reason(code="run_stopped" if stopped else "worker_stopped")),
                key=f"{stage.stage}:{stage.round}:interrupted:{attempt}")

    def _started(self, stage: StageInput, attempt: int) -> None:
        with self.record.step():
            self.record.set_state(stage.item_id, status="running", stage=stage.stage,
                                  agent=stage.agent)
            self.record.add_fact(stage.item_id, StageStarted(
                stage=stage.stage, round=stage.round, agent=stage.agent, attempt=attempt,
                comments=list(stage.comments)),
                key=f"{stage.stage}:{stage.round}:started:{attempt}")

    def _finish(self, stage: StageInput, out: StageOutput) -> None:
        end = StageFinished if out.ok else StageFailed
        self.record.add_fact(stage.item_id, end(
            stage=stage.stage, round=stage.round, agent=stage.agent, attempt=out.attempt,
            reason=out.why,
            verdict=out.verdict, comments=out.comments, output_dir=out.output_dir,
            stdout=out.stdout_path, stderr=out.stderr_path, exit_code=out.exit_code),
            key=f"{stage.stage}:{stage.round}:{out.attempt}:{end.model_fields['kind'].default}")

    @activity.defn(name=RECORD_ACTIVITY)
    async def record_state(self, entry: RecordInput) -> None:
        """Set the item's state in the local record and add the fact ``entry.key`` once.
        An entry that ends the stage (``stage_finished``, or a status of :data:`STAGE_ENDS`)
        stops the item's held MCP servers (issue 25, point 3)."""
        await asyncio.to_thread(self._record_now, entry)
        if self.mcp_sessions is not None and (entry.kind == "stage_finished"
                                              or entry.status in STAGE_ENDS):
            await self.mcp_sessions.close(entry.item_id)

    def _record_now(self, entry: RecordInput) -> None:
        with self.record.step():
            if entry.approval is not None:
                self.record.put_approval(entry.item_id, dict(entry.approval))
            if entry.journal is not None:
                self.record.add_journal(entry.item_id, dict(entry.journal))
            self.record.relay_fact(entry.item_id, key=entry.key, kind=entry.kind,
                                   stage=entry.stage, round=entry.round, data=dict(entry.data))
            if entry.status is not None:
                self.record.set_state(entry.item_id, status=entry.status, stage=entry.stage,
                                      reason=entry.reason, agent=entry.agent)

    @activity.defn(name=SLOT_ACTIVITY)
    async def acquire_slot(self, ask: SlotInput) -> SlotOutput:
        """Ask a slot of a capped agent (DESIGN.md, Rules: busy agent); first come first served.

        Returns the grant, or the reason to wait: ``"waiting for agent writer: 2 of 2 busy
        (items A, B)"`` and the place in the agent's queue.
        """
        granted, holders, position = await asyncio.to_thread(
            self.record.acquire_slot, agent=ask.agent, item_id=ask.item_id, stage=ask.stage,
            cap=ask.cap)
        if granted:
            return SlotOutput(granted=True)
        why = Reason(code="agent_busy", agent=ask.agent, busy=len(holders), cap=ask.cap,
                     items=list(holders), position=position if position > 1 else None)
        return SlotOutput(granted=False, reason=why.words(), why=why, position=position)

    @activity.defn(name=AWAIT_SLOT_ACTIVITY)
    async def await_slot(self, ask: SlotInput) -> SlotOutput:
        """Take a slot of a capped agent; while none is free, fail retryably (DESIGN.md,
        Rules: busy agent).

        The workflow runs it under a retry policy of :data:`~bees_cli.rules.RECHECK_EVERY`
        with no backoff, so attempt ``n`` runs ``(n - 1) * 15 s`` after the first
        (:func:`~bees_cli.rules.waited_for_slot`). Each new reason is written to the local
        record (status ``waiting``, one ``busy`` fact per change). Once
        :data:`~bees_cli.rules.BUSY_LIMIT` has passed (:func:`~bees_cli.rules.busy_fails`) it
        returns not granted (the queue place given back), and the workflow fails the stage
        with the reason.

        Raises:
            ApplicationError: of type :data:`AGENT_BUSY` with the reason, to be retried.
        """
        slot = await self.acquire_slot(ask)
        if slot.granted:
            return slot
        info = activity.info()
        if busy_fails(waited_for_slot(info.attempt)):
            await asyncio.to_thread(self.record.release_slot, ask.item_id, ask.stage)
            return slot
        await asyncio.to_thread(self._busy, ask, slot, info)
        raise ApplicationError(slot.reason or "busy", type=AGENT_BUSY,
                               category=ApplicationErrorCategory.BENIGN)

    def _busy(self, ask: SlotInput, slot: SlotOutput, info: activity.Info) -> None:
        """Write a new reason to wait for a slot: status ``waiting`` and one ``busy`` fact."""
        assert slot.why is not None, "acquire_slot gives its reason as a code"
        with self.record.step():
            row = self.record.item(ask.item_id)
            if (row.status, row.wait, row.reason) == (Status.WAITING, WaitKind.BUSY_AGENT,
                                                      slot.reason):
                return
            self.record.add_fact(ask.item_id, Busy(
                stage=ask.stage, round=ask.round, reason=slot.why,
                position=slot.position),
                key=f"{ask.stage}:{ask.round}:busy:{info.workflow_run_id}:"
                    f"{info.activity_id}:{info.attempt}")
            self.record.set_state(ask.item_id, status=Status.WAITING, stage=ask.stage,
                                  reason=slot.reason, agent=ask.agent, wait=WaitKind.BUSY_AGENT)

    @activity.defn(name=RELEASE_ACTIVITY)
    async def release_slot(self, release: ReleaseInput) -> int:
        """Give back the item's slot or queue place (of one stage, or all); return how many."""
        return await asyncio.to_thread(self.record.release_slot, release.item_id, release.stage)

    @activity.defn(name=JOURNAL_ACTIVITY)
    async def journal_lookup(self, query: JournalQuery) -> JournalFound:
        """Find a successful run of the action with this input in the stage, in the local
        record's journal (``bees action`` writes it there first, before telling the run)."""
        found = await asyncio.to_thread(
            self.record.journal_hit, query.item_id, query.stage, query.action, query.digest)
        return JournalFound(entry=None if found is None else JournalEntry.model_validate(found))

    def all(self) -> list[Callable[..., Any]]:
        """Return the activity callables to register on a worker."""
        return [self.check_stage, self.run_stage, self.record_state, self.acquire_slot,
                self.release_slot, self.journal_lookup, self.await_eligible, self.await_slot,
                self.review_checks]
