"""What a handover keeps on disk besides the checkpoint: the snapshot file, the kept digest.

- ``RUN/snapshot.json``: the item's snapshot as canonical JSON; listed (and so hashed) by the
  checkpoint, and its digest is the checkpoint's ``process_digest``. A computer that never
  saw the item reads the item's process, agents and folders from it.
- ``RUN/item.json``: id, title, process, run and created of the item, also listed by the
  checkpoint; the computer that continues takes the title from it.
- ``<data dir>/handovers/ITEM.json``: on the computer that relinquished, the checkpoint's
  SHA-256, restart stages, run folder, who and when. Without a Bees Cloud it is the
  expected digest ``bees continue`` checks on this computer (post: "Without a cloud").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

SNAPSHOT_NAME = "snapshot.json"


def snapshot_path(run_folder: Path) -> Path:
    """Return ``RUN/snapshot.json``."""
    return run_folder / SNAPSHOT_NAME


ITEM_NAME = "item.json"
"""``RUN/item.json``: the item as the relinquishing computer knew it (id, title, process,
run, created), so the computer that continues keeps its title."""


def item_path(run_folder: Path) -> Path:
    """Return ``RUN/item.json``."""
    return run_folder / ITEM_NAME


def read_item(run_folder: Path) -> dict[str, Any]:
    """Return ``RUN/item.json`` as a dict ({} when missing or not a JSON object)."""
    try:
        data = json.loads(item_path(run_folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _kept_path(data: Path, item_id: str) -> Path:
    from bees_cli.ids import check_item_id

    check_item_id(item_id, prefix=False)  # never a path outside data/handovers/
    return data / "handovers" / f"{item_id}.json"


def keep_handover(data: Path, item_id: str, facts: dict[str, Any]) -> Path:
    """Keep a handover's facts (``checkpoint_sha256``, ``restart_stages``, ``run_folder``,
    ``at``, ``who``) in ``data/handovers/ITEM.json``; return the file."""
    from bees_cli.files import write_json_atomic

    path = _kept_path(data, item_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, facts)
    return path


def kept_handover(data: Path, item_id: str) -> dict[str, Any] | None:
    """Return the facts :func:`keep_handover` kept for ``item_id`` here, or None."""
    from bees_cli.files import read_json

    try:
        value = read_json(_kept_path(data, item_id), None)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def taken_over(record_path: Path, free_rows: list[Any], machine_id: str, *,
               db: sqlite3.Connection | None = None) -> set[str]:
    """Return the ids of ``free`` items of this record that another computer changed later
    in the shared record (continued elsewhere): ``bees status`` shows the team's row.

    Later means of a later owner generation than the one this computer held (issue 23,
    point 4: the other computer's clock may be behind); only when either generation is not
    known (an older server, a claim noted by an older Bees) does the team row's origin time
    have to be at or after the local row's ``since``.

    Args:
        record_path: this computer's ``record.db``.
        free_rows: local rows (:class:`~bees_cli.record.local.ItemRow`) whose status is free.
        machine_id: this computer's machine id.
        db: read through this connection (one read of several parts,
            :meth:`~bees_cli.record.local.LocalRecord.reading`), not new ones.
    """
    if not free_rows:
        return set()
    from bees_cli.record.fires import FireLog
    from bees_cli.record.sync import SharedRecord
    from bees_cli.utc import parse_utc

    mine = machine_id
    team = {t.item_id: t for t in SharedRecord(record_path, db=db).team()}
    claims = FireLog(record_path, db=db)
    moved = set()
    for row in free_rows:
        other = team.get(row.id)
        if other is None or other.machine_id == mine:
            continue
        claim = claims.claim(row.id)
        held = claim.epoch if claim is not None else None
        if held is not None and other.generation:
            later = other.generation > held
        else:
            later = other.origin_time >= parse_utc(row.since)
        if later:
            moved.add(row.id)
    return moved
