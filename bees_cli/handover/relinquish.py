"""``bees relinquish ITEM``: the owning computer stops the run and hands the item over.

Rules (DESIGN.md, "Handover"; the post's "Handing a run over", step 8 of its example):
only the owner relinquishes; the run's stage and all work it handed to agents stop, and
this waits until they have; the checkpoint goes into the run folder; Bees Cloud learns
that the item is free, which stage each piece restarts at and the checkpoint's SHA-256;
the item shows ``free, restarts at STAGE`` here at once and on the team's computers after
their next sync. A review stage restarts at the stage that made the work under review.

The stop is the ``bees.relinquish`` update of the item's run (so ``bees run`` must be up;
:func:`bees_cli.usecases.handover.relinquish` sends it); the checkpoint and the release are
the run's ``bees.hand_over`` activity (:mod:`bees_cli.engine.handover`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bees_cli.cloud.client import sync_cloud_for
from bees_cli.errors import Ambiguous, NotFound, Refused
from bees_cli.machine.computer import Computer

MAIN = "main"
"""The run's own piece in restart stages (its stages; the others are pieces, issue 14)."""

RELINQUISH_TIMEOUT = 600.0
"""Seconds to wait for the run to stop and write its checkpoint (hashing up to 250 MB)."""


def main_restart(restart_stages: dict[str, str]) -> str:
    """Return the stage the run restarts at: the ``main`` piece's (else the first listed;
    ``""`` when none is), whatever order the map came back in (Bees Cloud sorts keys)."""
    return restart_stages.get(MAIN) or next(iter(restart_stages.values()), "")


@dataclass(frozen=True)
class Relinquished:
    """What ``bees relinquish`` did.

    Attributes:
        item: the item id.
        stage: the stage that was stopped (None when none had started).
        restart_stages: piece → stage it restarts at (``{"main": "Draft"}``, and each
            piece the stopped stage had not finished: ``{"main": "Draft", "r1-a1-p2":
            "Draft"}``).
        checkpoint: the checkpoint file.
        checkpoint_sha256: its SHA-256 (continue checks it).
        files: files listed; total_bytes: their bytes.
        released: True when Bees Cloud was told (False: no cloud; the digest is kept here).
    """

    item: str
    stage: str | None
    restart_stages: dict[str, str]
    checkpoint: str
    checkpoint_sha256: str
    files: int
    total_bytes: int
    released: bool

    @property
    def restart(self) -> str:
        """The stage the main piece restarts at."""
        return main_restart(self.restart_stages)

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as JSON (``bees relinquish --json``)."""
        return {"item": self.item, "stage": self.stage, "restart_stages": self.restart_stages,
                "checkpoint": self.checkpoint, "checkpoint_sha256": self.checkpoint_sha256,
                "files": self.files, "total_bytes": self.total_bytes,
                "released": self.released, "status_text": f"free, restarts at {self.restart}"}


OWNER_CHECK_TIMEOUT = 5.0
"""Seconds at most for one HTTP try of the owner check (connect, read, write)."""
LEAST_TRY = 0.1
"""Seconds at least for one HTTP try when little of ``--timeout`` is left."""


def check_owner_here(computer: Computer, item_id: str, *, within: float | None = None) -> None:
    """Refuse unless this computer holds item ``item_id`` in Bees Cloud (no cloud: no check).

    Args:
        computer: this computer.
        item_id: the item's full id.
        within: seconds left of the command's ``--timeout``: one HTTP try bounded by them
            (the caller tries again); None: the client's own three tries of
            :data:`OWNER_CHECK_TIMEOUT` seconds each.

    Raises:
        Refused: another computer owns it (the message names it), or it is free already.
        NotFound: Bees Cloud never heard of the item and this computer has no such item.
        CloudError: the cloud cannot be reached.
    """
    api = (sync_cloud_for(computer, retries=2) if within is None else sync_cloud_for(
        computer, retries=0, timeout=max(LEAST_TRY, min(OWNER_CHECK_TIMEOUT, within))))
    if api is None:
        return
    with api:
        owner = api.get_owner(item_id)
    if owner is None:
        raise NotFound(f"item {item_id} has no owner in Bees Cloud",
                       hint="`bees status` lists the team's items")
    if not owner.held:
        assert owner.release is not None
        stages = main_restart(owner.release.restart_stages) or "?"
        raise Refused(f"item {item_id} is free already (relinquished by {owner.computer_name}; "
                      f"restarts at {stages}): nothing to relinquish",
                      hint=f"bees continue {item_id}")
    if owner.machine_id != computer.machine_id:
        raise Refused(f"item {item_id} is owned by {owner.computer_name} ({owner.person}): "
                      "only that computer can relinquish it",
                      hint=f"run bees relinquish {item_id} on {owner.computer_name}")


def relinquishable(computer: Computer, item_id: str, *, within: float | None = None) -> Any:
    """Return the local record row of ``item_id`` once it may be relinquished here: this
    computer owns it and its run has started and is not over (blocking: the cloud check,
    bounded by ``within`` seconds as :func:`check_owner_here`).

    Raises:
        Refused: another computer owns the item (exit 3, naming it); it is free, done,
            cancelled or not started.
        NotFound: no such item here (and none in Bees Cloud).
        CloudError: the cloud cannot be reached (nothing changed).
    """
    from bees_cli.record.local import LocalRecord, OwnedElsewhere

    record = LocalRecord(computer.record_path)
    try:
        row = record.item(item_id)
        item_id = row.id
    except Ambiguous:
        raise
    except OwnedElsewhere as elsewhere:  # a team item: Bees Cloud says who owns it now
        item_id, row = elsewhere.item_id, None
    except NotFound:
        row = None
    check_owner_here(computer, item_id, within=within)
    if row is None:
        raise NotFound(f"no work item {item_id!r} on this computer",
                       hint="`bees status` lists this computer's items")
    if row.status == "free":
        raise Refused(f"item {row.id} is {row.status_text}: nothing to relinquish",
                      hint=f"bees continue {row.id}")
    if row.status in ("done", "cancelled"):
        raise Refused(f"item {row.id} is {row.status}: nothing to relinquish")
    if row.status == "pending":
        raise Refused(f"item {row.id} has not started yet: start it with bees run, "
                      "then relinquish it")
    return row
