"""A handover writes its checkpoint once: find the one an earlier try of this handover wrote.

Rules (DESIGN.md, Under faults: "A handover writes one checkpoint"; issue 12, point 2): a
retried handover step (a lost answer from Bees Cloud, Temporal trying the activity again)
reuses the ``checkpoint.json`` its first try wrote, so the digest released to Bees Cloud is
always the digest of the file in the run folder.
"""

from __future__ import annotations

from pathlib import Path

from bees_cli.handover.checkpoint_model import CHECKPOINT_NAME
from bees_cli.handover.verify import verify_checkpoint
from bees_cli.handover.write import CheckpointInfo
from bees_cli.utc import parse_utc


def written_by_this_handover(folder: Path, *, item_id: str, machine_id: str,
                             restart_stages: dict[str, str], process_digest: str,
                             asked_at: str) -> CheckpointInfo | None:
    """Return the checkpoint this handover already wrote into ``folder``, or None.

    A checkpoint is this handover's when it is whole and still true of the folder (it passes
    :func:`~bees_cli.handover.verify.verify_checkpoint`: every file unchanged, none extra)
    and it names this item, this machine, these restart stages and this process, written
    at or after the person asked (``asked_at``). An older checkpoint of the same item (an
    earlier handover whose folder came back here) was written before the ask, so it is never
    taken for this one.

    Args:
        folder: the run folder.
        item_id: the item being handed over.
        machine_id: this computer's machine id.
        restart_stages: piece → stage it restarts at, as this handover decided.
        process_digest: the digest of the item's snapshot.
        asked_at: when the person asked for the handover (UTC, ISO 8601).

    Returns:
        Its path, SHA-256 (of the file's bytes), file count and bytes; None when there is
        no such checkpoint (then the caller writes one).
    """
    if not (folder / CHECKPOINT_NAME).is_file():
        return None
    result = verify_checkpoint(folder)
    document = result.document
    if not result.ok or document is None or result.sha256 is None:
        return None
    if (document.item, document.machine_id, dict(document.restart_stages),
            document.process_digest) != (item_id, machine_id, restart_stages, process_digest):
        return None
    if parse_utc(document.time) < parse_utc(asked_at):
        return None
    return CheckpointInfo(path=folder / CHECKPOINT_NAME, sha256=result.sha256,
                          files=len(document.files), total_bytes=result.total_bytes)
