"""Inputs and outputs of the schedule fire workflow and its activity (JSON through Temporal).

Add fields with defaults, never rename: running fires must still replay.
"""

from __future__ import annotations

from pydantic import BaseModel

FIRE_WORKFLOW = "bees.fire"
"""Temporal workflow type a schedule starts at each of its times."""
FIRE_ACTIVITY = "bees.fire_schedule"
"""Activity that handles one fire (:meth:`bees_cli.schedules.fires.FireService.fire`)."""
SCHEDULED_START = "TemporalScheduledStartTime"
"""Search attribute Temporal sets on a workflow a schedule started: its scheduled time."""


class FireInput(BaseModel):
    """What a schedule passes to each fire: the schedule and the workspace folder."""

    schedule_id: str
    workspace: str


class FireRequest(BaseModel):
    """Input of the fire activity: ``scheduled`` is the scheduled instant, ISO 8601, UTC."""

    schedule_id: str
    workspace: str
    scheduled: str


class FireResult(BaseModel):
    """Output of the fire activity: the outcome code and its text (``ran here (ITEM)``…)."""

    outcome: str
    text: str
    detail: str | None = None
