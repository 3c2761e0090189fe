"""Inputs and outputs of a handover inside the engine: the relinquish update and its activity.

Wire format of the engine like :mod:`bees_cli.engine.models`: add fields with defaults,
never rename, so running items still replay.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from bees_cli.engine.models import ReviewRounds

RELINQUISH_UPDATE = "bees.relinquish"
"""Update sent by ``bees relinquish``: stop the run, write the checkpoint, free the item."""

HANDOVER_ACTIVITY = "bees.hand_over"
"""Activity: snapshot and checkpoint into the run folder, release in Bees Cloud, mark free."""

MAIN_PIECE = "main"
"""The run's own piece of work (its stages), named in restart stages beside each unfinished
piece an agent handed to another agent (issue 14: ``rR-aA-pN`` → its stage)."""


class HandoverInput(BaseModel):
    """Input of ``bees.hand_over``: item ``item_id`` stopped at ``stage`` and restarts at
    ``restart_stages`` (piece → stage: ``main``, then each piece of the stopped stage that
    had not finished, all stopped by then); ``who`` asked at ``at`` (UTC ISO 8601)."""

    item_id: str
    run_folder: str
    snapshot_digest: str | None = None
    """The item's stored snapshot (:mod:`bees_cli.engine.snapshot_store`); None: old items."""
    stage: str | None
    restart_stages: dict[str, str]
    who: str
    at: str
    title: str | None = None
    """The item's title, written to ``RUN/item.json`` so the computer that continues keeps it."""
    reviews: ReviewRounds | None = None
    """The rounds and review count the run reached, for the checkpoint's story (None: a
    history recorded before stories travelled)."""


class HandoverOutput(BaseModel):
    """Answer of the ``bees.relinquish`` update (and output of ``bees.hand_over``).

    ``ok``: the checkpoint is written and the item is free; then ``checkpoint_sha256`` (hex),
    ``files`` and ``total_bytes`` describe it and ``released`` says whether Bees Cloud was
    told (False without a cloud). Not ok: ``reason`` says why; the item stays owned here and
    its stage waits, failed, for a person's retry; ``attempts`` (``"STAGE:ROUND"`` → next
    attempt, from the logs in the run folder) keeps that retry from reusing the number of
    the attempt the relinquish stopped.
    """

    ok: bool
    reason: str | None = None
    stage: str | None = None
    restart_stages: dict[str, str] = Field(default_factory=dict)
    checkpoint: str | None = None
    checkpoint_sha256: str | None = None
    files: int = 0
    total_bytes: int = 0
    released: bool = False
    attempts: dict[str, int] = Field(default_factory=dict)
