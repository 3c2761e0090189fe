"""``bees relinquish ITEM --repair``: re-send a handover's release with the run folder's digest.

Rules (issue 12, point 2; DESIGN.md, Under faults: "A handover writes one checkpoint"): the
digest released to Bees Cloud is the digest of ``checkpoint.json`` in the run folder. When
they disagree (a checkpoint rewritten after its release), the computer that released the
item last verifies its run folder (the checkpoint and every file) and sends the release
again with that file's digest and restart stages; Bees Cloud accepts it from that machine
only, while the item is free. Without a cloud the digest kept on this computer is updated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bees_cli.cloud.client import sync_cloud_for
from bees_cli.errors import CloudRefused, Refused
from bees_cli.handover.checkpoint import CHECKPOINT_NAME, verify_checkpoint
from bees_cli.handover.store import keep_handover, kept_handover
from bees_cli.machine.computer import Computer


@dataclass(frozen=True)
class Repaired:
    """What ``bees relinquish --repair`` did.

    Attributes:
        item: the item id.
        checkpoint: the run folder's checkpoint file.
        checkpoint_sha256: its SHA-256, now the released (and kept) one.
        before: the digest Bees Cloud (or, without a cloud, this computer) held before.
        restart_stages: piece → stage it restarts at, from the checkpoint.
        released: True when Bees Cloud was told (False: no cloud; kept here only).
    """

    item: str
    checkpoint: str
    checkpoint_sha256: str
    before: str | None
    restart_stages: dict[str, str]
    released: bool

    @property
    def changed(self) -> bool:
        """True when the digest held before was not the folder's."""
        return self.before != self.checkpoint_sha256

    def to_json(self) -> dict[str, Any]:
        """Return the outcome as JSON (``bees relinquish --repair --json``)."""
        return {"item": self.item, "checkpoint": self.checkpoint,
                "checkpoint_sha256": self.checkpoint_sha256, "before": self.before,
                "restart_stages": self.restart_stages, "released": self.released,
                "changed": self.changed}


def repair_release(computer: Computer, item_id: str) -> Repaired:
    """Verify the run folder this computer relinquished ``item_id`` from and make its
    checkpoint's digest the released one (blocking: hashing, the cloud call).

    Args:
        computer: this computer (it must be the one that released the item last).
        item_id: the item's id.

    Returns:
        The :class:`Repaired` outcome (``changed`` False when nothing disagreed).

    Raises:
        Refused: this computer never relinquished the item, the checkpoint is another
            computer's or another item's, or Bees Cloud refused (another computer released
            it last or holds it, or it is held again).
        CheckpointInvalid: the run folder does not verify (each problem names its file).
        CloudError: Bees Cloud cannot be reached (nothing changed).
    """
    item_id = item_id.strip().upper()
    data = computer.record_path.parent
    kept = kept_handover(data, item_id)
    if kept is None or not isinstance(kept.get("run_folder"), str):
        raise Refused(f"this computer has not relinquished item {item_id}: only the computer "
                      "that released it last can repair its release",
                      hint=f"run bees relinquish {item_id} --repair there")
    folder = Path(kept["run_folder"])
    before = kept.get("checkpoint_sha256") if isinstance(kept.get("checkpoint_sha256"),
                                                         str) else None
    api = sync_cloud_for(computer, retries=2)
    if api is not None:
        with api:
            owner = api.get_owner(item_id)
        if owner is None:
            raise Refused(f"item {item_id} has no owner in Bees Cloud: nothing to repair")
        if owner.held:
            raise Refused(f"item {item_id} is held by {owner.computer_name} "
                          f"({owner.person}): there is no release to repair")
        if owner.machine_id != computer.machine_id:
            raise Refused(f"item {item_id} was released last by {owner.computer_name} "
                          f"({owner.person}): only that computer can repair its release",
                          hint=f"run bees relinquish {item_id} --repair on "
                               f"{owner.computer_name}")
        assert owner.release is not None
        before = owner.release.checkpoint_sha256
    result = verify_checkpoint(folder)
    result.raise_if_invalid()
    document = result.document
    assert document is not None and result.sha256 is not None
    if (document.item, document.machine_id) != (item_id, computer.machine_id):
        raise Refused(f"{folder / CHECKPOINT_NAME}: it is the checkpoint of item "
                      f"{document.item} written by {document.computer}, not this computer's "
                      f"handover of {item_id}: nothing to repair here")
    stages = dict(document.restart_stages)
    if api is not None:
        from bees_cli.cloud import wire

        with sync_cloud_for(computer, retries=2) as again:  # type: ignore[union-attr]
            try:
                again.repair_owner(item_id, wire.OwnerRelease(
                    machine_id=computer.machine_id, restart_stages=stages,
                    checkpoint_sha256=result.sha256))
            except CloudRefused as error:
                raise Refused(f"item {item_id}: Bees Cloud refused the repair: "
                              f"{error.message}", hint=error.hint) from None
    keep_handover(data, item_id, {**kept, "checkpoint_sha256": result.sha256,
                                  "restart_stages": stages})
    return Repaired(item=item_id, checkpoint=str(folder / CHECKPOINT_NAME),
                    checkpoint_sha256=result.sha256, before=before, restart_stages=stages,
                    released=api is not None)
