"""The workflow a Temporal Schedule starts at each fire: read the scheduled time, hand it on.

Deterministic: no I/O, no clock. The scheduled time comes from the search attribute
``TemporalScheduledStartTime`` that the schedule sets (a workflow started by hand has
none and uses the workflow's start time). Lateness is judged by the activity against
this computer's clock, so a fire the engine starts late is skipped there.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from bees_cli.engine.fire_models import (
        FIRE_ACTIVITY,
        FIRE_WORKFLOW,
        SCHEDULED_START,
        FireInput,
        FireRequest,
        FireResult,
    )
    from bees_cli.utc import format_utc

SCHEDULED_KEY = SearchAttributeKey.for_datetime(SCHEDULED_START)

FIRE_TIMEOUT = timedelta(minutes=2)
"""Longest one fire may take: five key requests of 10 s with backoff (under a minute),
then make, claim and start."""


@workflow.defn(name=FIRE_WORKFLOW)
class FireWorkflow:
    """One fire of a schedule on this computer (DESIGN.md, Rules: schedules)."""

    @workflow.run
    async def run(self, fire: FireInput) -> str:
        """Handle the fire; return its outcome text (``ran here (ITEM)``, ``taken by …``)."""
        scheduled = workflow.info().typed_search_attributes.get(SCHEDULED_KEY)
        if scheduled is None:
            scheduled = workflow.info().start_time
        result: FireResult = await workflow.execute_activity(
            FIRE_ACTIVITY,
            FireRequest(schedule_id=fire.schedule_id, workspace=fire.workspace,
                        scheduled=format_utc(scheduled)),
            result_type=FireResult,
            start_to_close_timeout=FIRE_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        return result.text
