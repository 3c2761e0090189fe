"""A stage's eligibility check as a local activity: one activity and one workflow task a stage.

Part of the item's run (:mod:`bees_cli.engine.workflows`), deterministic like it: imports only
``temporalio`` and the engine's models (passed through).
"""

from __future__ import annotations

from temporalio import workflow

from bees_cli.engine.workflow_policies import RECHECK, SHORT

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.models import (
        AWAIT_ELIGIBLE_ACTIVITY,
        CHECK_ACTIVITY,
        CheckInput,
        CheckOutput,
    )


async def eligible_locally(check: CheckInput) -> CheckOutput:
    """Check eligibility until the stage can start here (DESIGN.md, Rules: eligibility);
    return the passing check (its agent chosen). Since :data:`~bees_cli.engine.
    workflow_policies.ELIGIBLE_LOCALLY`.

    The first check is ``bees.check_stage`` run as a local activity in the workflow task that
    then schedules the stage, so a stage that can start costs one activity and one workflow
    task instead of two of each. A failed check has already written its reasons (status
    ``waiting``) to the local record; the wait then goes on as before, in one
    ``bees.await_eligible`` activity retried every :data:`~bees_cli.rules.RECHECK_EVERY`
    (its first pass finds the same reasons and writes nothing), so a week of waiting adds no
    events to the history and no workflow task holds a local activity open.
    """
    found: CheckOutput = await workflow.execute_local_activity(
        CHECK_ACTIVITY, check, result_type=CheckOutput, start_to_close_timeout=SHORT)
    if found.ok:
        return found
    waited: CheckOutput = await workflow.execute_activity(
        AWAIT_ELIGIBLE_ACTIVITY, check, result_type=CheckOutput,
        start_to_close_timeout=SHORT, retry_policy=RECHECK)
    return waited
