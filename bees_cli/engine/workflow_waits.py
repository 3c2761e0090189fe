"""The waits before a stage of an item's run: eligibility here, then a capped agent's slot.

Part of :class:`~bees_cli.engine.workflows.ItemWorkflow` (its base class), deterministic like
it: imports only ``temporalio``, its approval gate and the engine's models (passed through).
"""

from __future__ import annotations

from temporalio import workflow

from bees_cli.engine.stage_check import eligible_locally
from bees_cli.engine.workflow_gate import ApprovalGate
from bees_cli.engine.workflow_policies import RECHECK, SHORT
from bees_cli.engine.workflow_state import FAILED, WAITING

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.models import (
        AWAIT_ELIGIBLE_ACTIVITY,
        AWAIT_SLOT_ACTIVITY,
        CHECK_ACTIVITY,
        RELEASE_ACTIVITY,
        SLOT_ACTIVITY,
        CheckInput,
        CheckOutput,
        RecordInput,
        ReleaseInput,
        SlotInput,
        SlotOutput,
    )
    from bees_cli.moves import Phase
    from bees_cli.record.events import Busy, StageFailed
    from bees_cli.record.reasons import Reason, read_reason
    from bees_cli.rules import RECHECK_EVERY, busy_fails, busy_reason
    from bees_cli.why import busy_too_long


def too_long(slot: SlotOutput) -> Reason:
    """Return why a stage or piece fails after waiting 10 minutes for ``slot`` (Rules: busy
    agent): its last ``agent_busy`` reason as ``busy_too_long``; an answer an older history
    carries, without its ``why``, is read back from its words."""
    if slot.why is not None:
        return busy_too_long(slot.why)
    return read_reason(busy_reason(slot.reason))


class StageWaits(ApprovalGate):
    """Before each stage: check eligibility and choose the agent, waiting and re-checking
    every 15 s while the check fails; take a slot of a capped agent (re-checking every 15 s,
    failed after 10 minutes). Since ``WAITS_BY_RETRY`` both waits are one activity retried
    every 15 s (DESIGN.md, Rules: eligibility, busy agent)."""

    async def _eligible(self, check: CheckInput) -> CheckOutput:
        """Check eligibility until the stage can start here, re-checking every 15 s
        (DESIGN.md, Rules: eligibility); return the passing check (its agent chosen).

        Patched runs wait inside one activity retried every :data:`RECHECK_EVERY`, so the
        wait adds no events however long it lasts; older runs keep their timer loop. Since
        :data:`ELIGIBLE_LOCALLY` the first check is a local activity (:func:`eligible_locally`).
        """
        if self.live.patches.eligible_locally and self.live.patches.waits_by_retry:
            return await eligible_locally(check)
        if self.live.patches.waits_by_retry:
            return await workflow.execute_activity(
                AWAIT_ELIGIBLE_ACTIVITY, check, result_type=CheckOutput,
                start_to_close_timeout=SHORT, retry_policy=RECHECK)
        found = await self._check(check)
        while not found.ok:
            await workflow.sleep(RECHECK_EVERY)
            found = await self._check(check)
        return found

    def _capped(self, agent: str) -> bool:
        return self._snapshot.agents[agent].max_concurrent_runs is not None

    async def _take_slot(self, stage: str, agent: str, round_: int) -> Reason | None:
        """Take a slot of ``agent`` when it is capped; return None, or after 10 minutes of
        waiting (re-checking every 15 s) the reason the stage fails (``busy_too_long``)."""
        cap = self._snapshot.agents[agent].max_concurrent_runs
        if cap is None:
            return None
        if self.live.patches.waits_by_retry:
            # one activity retried every 15 s; it writes each new reason to the local record
            # and answers not granted once BUSY_LIMIT has passed (its queue place given back)
            self.live.phase = Phase.WAITING
            slot: SlotOutput = await workflow.execute_activity(
                AWAIT_SLOT_ACTIVITY, SlotInput(item_id=self._id, stage=stage, agent=agent,
                                               cap=cap, round=round_),
                result_type=SlotOutput, start_to_close_timeout=SHORT, retry_policy=RECHECK)
            return None if slot.granted else too_long(slot)
        started = workflow.now()
        said: str | None = None
        while True:
            slot = await workflow.execute_activity(
                SLOT_ACTIVITY, SlotInput(item_id=self._id, stage=stage, agent=agent, cap=cap),
                result_type=SlotOutput, start_to_close_timeout=SHORT)
            if slot.granted:
                return None
            if busy_fails(workflow.now() - started):
                await workflow.execute_activity(
                    RELEASE_ACTIVITY, ReleaseInput(item_id=self._id, stage=stage),
                    start_to_close_timeout=SHORT)
                return too_long(slot)
            self.live.phase = Phase.WAITING
            if slot.reason != said:  # one fact per distinct reason, not one per re-check
                said = slot.reason
                await self._record(RecordInput.of(
                    Busy(stage=stage, round=round_, position=slot.position,
                         reason=slot.why or read_reason(slot.reason)),
                    item_id=self._id, status=WAITING, reason=slot.reason, agent=agent,
                    key=self._fact(f"{stage}:{round_}:busy")))
            await workflow.sleep(RECHECK_EVERY)

    async def _check(self, check: CheckInput) -> CheckOutput:
        return await workflow.execute_activity(
            CHECK_ACTIVITY, check, result_type=CheckOutput, start_to_close_timeout=SHORT)

    async def _fail(self, stage: str, round_: int, agent: str, why: Reason, key: str,
                    data: dict[str, int] | None = None) -> None:
        """Fail ``stage``'s ``round_`` for ``why``: the run waits for a person's retry
        (DESIGN.md, Rules: moving), said in a ``stage_failed`` fact."""
        self.live.person = None  # a request counts from the moment the stage failed
        self.live.phase = Phase.FAILED
        self.live.reason = reason = why.words()
        await self._record(RecordInput.of(
            StageFailed(stage=stage, round=round_, reason=why).model_copy(update=data or {}),
            item_id=self._id, status=FAILED, reason=reason, agent=agent,
            key=self._fact(f"{stage}:{round_}:{key}")))
