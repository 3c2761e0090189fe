"""``--json`` documents of handover: ``bees relinquish`` (and ``--repair``), continue, verify."""

from __future__ import annotations

from typing import Literal

from bees_cli.cli.json_models.base import Out, Part
from bees_cli.record.views import UtcTime


class RelinquishOut(Out):
    """``bees relinquish``: the stopped stage, where each piece restarts (the item is free
    and restarts at ``restart_stages["main"]``), the checkpoint."""

    item_id: str
    stage: str | None
    restart_stages: dict[str, str]
    checkpoint: str
    checkpoint_sha256: str
    files: int
    total_bytes: int
    released: bool
    offer: OfferOut | None = None
    """With ``--to POOL``: the offer to that pool (secrets by name only)."""


class RepairOut(Out):
    """``bees relinquish --repair``: the digest released now and the one held before."""

    item_id: str
    checkpoint: str
    checkpoint_sha256: str
    before: str | None
    restart_stages: dict[str, str]
    released: bool
    changed: bool


class ContinueOut(Out):
    """``bees continue``: the claimed item, its run folder and the stage it restarts at."""

    item_id: str
    run_folder: str
    stage: str
    checkpoint_sha256: str
    journal: int
    run: int
    started: bool


class CheckpointProblem(Part):
    """One reason a checkpoint is invalid."""

    code: str
    path: str | None
    message: str


class VerifyOut(Out):
    """``bees checkpoint verify`` of a valid checkpoint (an invalid one is the error
    ``checkpoint_invalid`` with its ``problems``, exit 3)."""

    ok: Literal[True]
    sha256: str
    files: int
    total_bytes: int


class OfferNoteOut(Part):
    """Why one runner left an offer, as it said last."""

    runner: str
    machine_id: str
    reason: str
    noted_at: UtcTime


class OfferOut(Part):
    """One item handed to a pool (``bees relinquish ITEM --to POOL``): the secrets it names
    (names only), whether it is still open, who claimed it, and why runners left it."""

    item_id: str
    epoch: int
    pool: str
    secrets: list[str]
    offered_at: UtcTime
    offered_by: str
    open: bool
    claimed_at: UtcTime | None = None
    claimed_by: str | None = None
    notes: list[OfferNoteOut]


class OffersOut(Out):
    """``bees offers``: the team's offers, oldest first."""

    offers: list[OfferOut]



class RunnerOut(Part):
    """One runner of the team: its pool, what it holds (runs), when Bees Cloud last heard
    it (None: never) and from which machine id, whether it is ``silent`` (not heard for
    more than 45 s, on Bees Cloud's clock), and when it was retired (None: not)."""

    name: str
    pool: str
    machine_id: str | None
    heard_at: UtcTime | None
    silent: bool
    retired_at: UtcTime | None
    running: list[str]


class RunnersOut(Out):
    """``bees runners``: the team's runners by pool then name, and Bees Cloud's clock."""

    runners: list[RunnerOut]
    server_time: UtcTime

RelinquishOut.model_rebuild()  # its offer (OfferOut) is defined below it
