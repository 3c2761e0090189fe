"""A review stage's ``checks:`` in the item's run: run before its reviewer (issue 26, point 5).

Part of :class:`~bees_cli.engine.workflows.ItemWorkflow` (its base class), deterministic like
it: the checks run in the ``bees.review_checks`` activity; a failed one is a
:class:`~bees_cli.moves.ChangesRequested` event whose comments are the checks' messages, so
:func:`~bees_cli.moves.next_move` sends the work back (or, at the third request, stops the
item) exactly as for a reviewer's request, with no agent run.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy

from bees_cli.engine.workflow_memory import RunMemory
from bees_cli.engine.workflow_policies import STAGE_TIMEOUT

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.models import (
        REVIEW_CHECKS_ACTIVITY,
        ChecksInput,
        ChecksOutput,
        ItemInput,
        ItemState,
    )
    from bees_cli.engine.snapshot import StageView
    from bees_cli.moves import ChangesRequested, Move, Phase, next_move


class ReviewChecks(RunMemory):
    """Runs a review stage's checks before its reviewer (issue 26, point 5)."""

    async def _checks_send_back(self, item: ItemInput, memo: ItemState, stage: StageView,
                                round_: int) -> Move | None:
        """Run ``stage``'s checks for ``round_``; return None when all passed (the reviewer
        runs), else the move of their change request, counted in ``memo`` like a
        reviewer's. A failed check's request is never held for a finish approval: no agent
        finished."""
        self.live.phase = Phase.RUNNING
        checked: ChecksOutput = await workflow.execute_activity(
            REVIEW_CHECKS_ACTIVITY,
            ChecksInput(item_id=item.item_id, run_folder=item.run_folder, stage=stage.name,
                        round=round_, snapshot_digest=item.snapshot_digest),
            result_type=ChecksOutput, start_to_close_timeout=STAGE_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3))
        if checked.ok:
            return None
        event = ChangesRequested(tuple(checked.comments))
        stages = item.snapshot.process.stages
        move = next_move(self._run_state(stages, memo, stage.name, round_, Phase.RUNNING,
                                         approved=True), event)
        memo.comments = list(move.comments)
        memo.change_requests.setdefault(stage.name, []).append(list(event.comments))
        return move
