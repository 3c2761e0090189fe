"""``bees relinquish ITEM``: the owning computer stops the run and hands the item over.

Rules (DESIGN.md, "Handover"; the post's "Handing a run over", step 8 of its example):
only the owner relinquishes; the run's stage and all work it handed to agents stop, and
this waits until they have; the checkpoint goes into the run folder; Bees Cloud learns
that the item is free, which stage each piece restarts at and the checkpoint's SHA-256;
the item shows ``free, restarts at STAGE`` here at once and on the team's computers after
their next sync. A review stage restarts at the stage that made the work under review.

The stop is the ``bees.relinquish`` update of the item's run (so ``bees run`` must be up);
the checkpoint and the release are the run's ``bees.hand_over`` activity
(:mod:`bees_cli.engine.handover`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from bees_cli.errors import Ambiguous, EngineError, NotFound, Refused
from bees_cli.machine.computer import Computer

RELINQUISH_TIMEOUT = 600.0
"""Seconds to wait for the run to stop and write its checkpoint (hashing up to 250 MB)."""


@dataclass(frozen=True)
class Relinquished:
    """What ``bees relinquish`` did.

    Attributes:
        item: the item id.
        stage: the stage that was stopped (None when none had started).
        restart_stages: piece → stage it restarts at (``{"main": "Draft"}``).
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
        return next(iter(self.restart_stages.values()))

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as JSON (``bees relinquish --json``)."""
        return {"item": self.item, "stage": self.stage, "restart_stages": self.restart_stages,
                "checkpoint": self.checkpoint, "checkpoint_sha256": self.checkpoint_sha256,
                "files": self.files, "total_bytes": self.total_bytes,
                "released": self.released, "status_text": f"free, restarts at {self.restart}"}


def check_owner_here(computer: Computer, item_id: str) -> None:
    """Refuse unless this computer holds item ``item_id`` in Bees Cloud (no cloud: no check).

    Raises:
        Refused: another computer owns it (the message names it), or it is free already.
        NotFound: Bees Cloud never heard of the item and this computer has no such item.
        CloudError: the cloud cannot be reached.
    """
    api = computer.sync_cloud(retries=2)
    if api is None:
        return
    with api:
        owner = api.get_owner(item_id)
    if owner is None:
        raise NotFound(f"item {item_id} has no owner in Bees Cloud",
                       hint="`bees status` lists the team's items")
    if not owner.held:
        assert owner.release is not None
        stages = ", ".join(owner.release.restart_stages.values()) or "?"
        raise Refused(f"item {item_id} is free already (relinquished by {owner.computer_name}; "
                      f"restarts at {stages}): nothing to relinquish",
                      hint=f"bees continue {item_id}")
    if owner.machine_id != computer.machine_id:
        raise Refused(f"item {item_id} is owned by {owner.computer_name} ({owner.person}): "
                      "only that computer can relinquish it",
                      hint=f"run bees relinquish {item_id} on {owner.computer_name}")


def relinquish_item(item_id: str, *, computer: Computer | None = None,
                    timeout: float = RELINQUISH_TIMEOUT) -> Relinquished:
    """Relinquish item ``item_id`` on this computer (see the module docstring).

    Args:
        item_id: the item (a unique prefix of its id is enough when it is in this record).
        computer: this computer (default: the one ``BEES_HOME`` describes).
        timeout: seconds to wait for the run's answer.

    Returns:
        The :class:`Relinquished` outcome.

    Raises:
        Refused: another computer owns the item (exit 3, naming it); it is free, done,
            cancelled or not started; the checkpoint could not be written (the reason names
            the file and the limit; the stage then waits, failed, for a retry).
        NotFound: no such item here (and none in Bees Cloud).
        EngineError: ``bees run`` is not up on this computer.
        CloudError: the cloud cannot be reached (nothing changed).
    """
    from bees_cli.engine.control import (
        NOT_UP,
        running_worker,
        send_update,
        start_hint,
        who_am_i,
    )
    from bees_cli.engine.handover_models import RELINQUISH_UPDATE, HandoverOutput
    from bees_cli.engine.models import PersonInput
    from bees_cli.record.local import LocalRecord, now_utc

    here = computer or Computer.load()
    record = LocalRecord(here.record_path)
    try:
        row = record.item(item_id)
        item_id = row.id
    except Ambiguous:
        raise
    except NotFound:
        row = None
    check_owner_here(here, item_id)
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
    address = running_worker(here.record_path.parent)
    if address is None:
        raise EngineError(NOT_UP, hint=start_hint(f"bees relinquish {row.id}"))
    person = PersonInput(who=who_am_i(), at=now_utc())
    answer: HandoverOutput = asyncio.run(send_update(
        address, row.id, RELINQUISH_UPDATE, person, HandoverOutput, timeout=timeout))
    if not answer.ok:
        raise Refused(f"item {row.id} was not relinquished: {answer.reason}",
                      hint=f"its stage waits, failed: fix the run folder, then bees retry "
                           f"{row.id}")
    assert answer.checkpoint is not None and answer.checkpoint_sha256 is not None
    return Relinquished(item=row.id, stage=answer.stage,
                        restart_stages=dict(answer.restart_stages),
                        checkpoint=answer.checkpoint,
                        checkpoint_sha256=answer.checkpoint_sha256, files=answer.files,
                        total_bytes=answer.total_bytes, released=answer.released)
