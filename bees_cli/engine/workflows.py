"""One work item's run as a Temporal workflow: a plan of stages; side effects are activities.

Deterministic: imports only ``datetime``, ``temporalio`` and the engine's models (passed
through the sandbox); no I/O, no clock but the workflow's.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.models import (
        CHECK_ACTIVITY,
        RECORD_ACTIVITY,
        RETRY_SIGNAL,
        REVIEW_LIMIT,
        RUN_ACTIVITY,
        WORKFLOW_NAME,
        CheckInput,
        CheckOutput,
        ItemInput,
        RecordInput,
        StageInput,
        StageOutput,
    )

RECHECK_EVERY = timedelta(seconds=15)
"""How often a waiting item checks its eligibility again (DESIGN.md, Rules: eligibility)."""

STAGE_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A stage whose worker stops heartbeating this long is started again from the top."""

STAGE_TIMEOUT = timedelta(hours=24)
"""Longest run of one stage attempt."""

STAGE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10), maximum_attempts=0,
)
"""Retries cover a lost worker (heartbeat timeout): a failed agent is a result, not an error."""

SHORT = timedelta(seconds=60)


@workflow.defn(name=WORKFLOW_NAME)
class ItemWorkflow:
    """Moves one work item through its process (DESIGN.md, Rules: moving).

    Before each stage: check eligibility and choose the agent, waiting and re-checking every
    15 s while the check fails. Then run the stage. A finished stage moves the item on; a
    review asking for changes sends it back to the stage under review with the comments (the
    third request stops it for a person); a failed stage waits for a person's retry signal;
    the ``done`` stage ends the run with ``"done"``.
    """

    def __init__(self) -> None:
        self._retry_asked = False

    @workflow.signal(name=RETRY_SIGNAL)
    def retry(self) -> None:
        """A person asks an item that waits for a person to go on (``bees retry``, later issue)."""
        self._retry_asked = True

    @workflow.run
    async def run(self, item: ItemInput) -> str:
        """Run the item to its ``done`` stage; return ``"done"``."""
        stages = item.snapshot.process.stages
        position = {stage.name: index for index, stage in enumerate(stages)}
        index = 0
        rounds: dict[str, int] = {}
        done_by: dict[str, str] = {}
        outputs: dict[str, str] = {}
        comments: list[str] = []
        change_requests: dict[str, int] = {}
        while True:
            stage = stages[index]
            if stage.kind == "done":
                await self._record(RecordInput(
                    item_id=item.item_id, status="done", stage=stage.name, key="done",
                    kind="done"))
                return "done"
            rounds[stage.name] = rounds.get(stage.name, 0) + 1
            round_ = rounds[stage.name]
            reviewed_by = done_by.get(stage.reviews) if stage.reviews else None
            check = await self._check(CheckInput(
                item_id=item.item_id, stage=stage.name, round=round_,
                reviewed_by=reviewed_by, snapshot=item.snapshot))
            while not check.ok:
                await workflow.sleep(RECHECK_EVERY)
                check = await self._check(CheckInput(
                    item_id=item.item_id, stage=stage.name, round=round_,
                    reviewed_by=reviewed_by, snapshot=item.snapshot))
            assert check.agent is not None
            result: StageOutput = await workflow.execute_activity(
                RUN_ACTIVITY,
                StageInput(
                    item_id=item.item_id, title=item.title, run_folder=item.run_folder,
                    stage=stage.name, round=round_, agent=check.agent, folders=check.folders,
                    previous=dict(outputs), comments=list(comments) if stage.kind == "work"
                    else [], snapshot=item.snapshot),
                result_type=StageOutput,
                start_to_close_timeout=STAGE_TIMEOUT,
                heartbeat_timeout=STAGE_HEARTBEAT_TIMEOUT,
                retry_policy=STAGE_RETRY,
            )
            if not result.ok:
                self._retry_asked = False  # a retry counts from the moment the stage failed
                await self._record(RecordInput(
                    item_id=item.item_id, status="failed", stage=stage.name,
                    reason=result.reason, agent=check.agent, key=f"{stage.name}:{round_}:failed",
                    kind="stage_failed", round=round_))
                await self._wait_for_person()
                continue
            done_by[stage.name] = check.agent
            outputs[stage.name] = result.output_dir
            if stage.kind == "work":
                comments = []
            if stage.kind == "review" and result.verdict == "changes_requested" and stage.reviews:
                change_requests[stage.name] = change_requests.get(stage.name, 0) + 1
                comments = list(result.comments)
                if change_requests[stage.name] >= REVIEW_LIMIT:
                    self._retry_asked = False
                    await self._record(RecordInput(
                        item_id=item.item_id, status="waiting for a person", stage=stage.name,
                        reason=f"{stage.name} asked for changes {REVIEW_LIMIT} times",
                        agent=check.agent, key=f"{stage.name}:{round_}:limit",
                        kind="review_limit", round=round_))
                    await self._wait_for_person()
                    change_requests[stage.name] = 0
                index = position[stage.reviews]
                continue
            index += 1

    async def _check(self, check: CheckInput) -> CheckOutput:
        return await workflow.execute_activity(
            CHECK_ACTIVITY, check, result_type=CheckOutput, start_to_close_timeout=SHORT)

    async def _record(self, record: RecordInput) -> None:
        await workflow.execute_activity(RECORD_ACTIVITY, record, start_to_close_timeout=SHORT)

    async def _wait_for_person(self) -> None:
        await workflow.wait_condition(lambda: self._retry_asked)
        self._retry_asked = False
