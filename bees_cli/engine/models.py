"""Inputs and outputs of the engine's workflow and activities: one pydantic model each.

They travel through Temporal as JSON (``temporalio.contrib.pydantic``), so their fields are
the engine's wire format: add fields with defaults, never rename, so running items still
replay.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from bees_cli.agents.snapshot import ItemSnapshot

WORKFLOW_NAME = "bees.item"
"""Temporal workflow type of a work item's run."""

CHECK_ACTIVITY = "bees.check_stage"
RUN_ACTIVITY = "bees.run_stage"
RECORD_ACTIVITY = "bees.record"
RETRY_SIGNAL = "bees.retry"
"""Signal sent by a person (``bees retry``, a later issue) to an item waiting for a person."""

REVIEW_LIMIT = 3
"""The third request for changes of a review stage stops the item for a person (DESIGN.md)."""


def task_queue(machine_id: str) -> str:
    """Return this computer's task queue: ``bees-<machine_id>``."""
    return f"bees-{machine_id}"


class ItemInput(BaseModel):
    """Input of the ``bees.item`` workflow: one work item, snapshot included.

    The workflow id is ``item_id``; ``run_folder`` is the absolute path of the item's run folder.
    """

    item_id: str
    title: str
    run_folder: str
    snapshot: ItemSnapshot


class CheckInput(BaseModel):
    """Input of ``bees.check_stage``: check eligibility and choose the agent for ``stage``.

    ``round`` counts the stage's runs (1, 2 after a send-back…); ``reviewed_by`` is, on a
    review stage, the agent of the latest round of the stage under review.
    """

    item_id: str
    stage: str
    round: int
    reviewed_by: str | None = None
    snapshot: ItemSnapshot


class CheckOutput(BaseModel):
    """Output of ``bees.check_stage``: ``ok`` with the chosen ``agent``, or the ``reasons`` to wait.

    ``folders`` maps each folder the stage reads to its path here.
    """

    ok: bool
    reasons: list[str] = Field(default_factory=list)
    agent: str | None = None
    pick: dict[str, Any] | None = None
    folders: dict[str, str] = Field(default_factory=dict)


class StageInput(BaseModel):
    """Input of ``bees.run_stage``: run ``agent`` on ``stage`` of the item.

    ``previous`` maps each earlier stage to its output folder; ``comments`` are the review
    comments sent back to this work stage (empty on a first round).
    """

    item_id: str
    title: str
    run_folder: str
    stage: str
    round: int
    agent: str
    folders: dict[str, str] = Field(default_factory=dict)
    previous: dict[str, str] = Field(default_factory=dict)
    comments: list[str] = Field(default_factory=list)
    snapshot: ItemSnapshot


class StageOutput(BaseModel):
    """Output of ``bees.run_stage``: ``ok`` (exit 0), or the ``reason`` it failed; a review
    stage's ``verdict`` (``approve`` or ``changes_requested``) with its ``comments``."""

    ok: bool
    reason: str | None = None
    verdict: str | None = None
    comments: list[str] = Field(default_factory=list)
    output_dir: str
    stdout_path: str | None = None
    stderr_path: str | None = None
    exit_code: int | None = None


class RecordInput(BaseModel):
    """Input of ``bees.record``: set the item's state in the local record and add one fact.

    ``status`` is a local-record status (``done``, ``failed``, ``waiting for a person``,
    ``running``…); ``key`` makes the fact idempotent across activity retries.
    """

    item_id: str
    status: str
    stage: str | None = None
    reason: str | None = None
    agent: str | None = None
    key: str
    kind: str
    round: int | None = None
    data: dict[str, Any] = Field(default_factory=dict)
