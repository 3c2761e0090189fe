"""The whole item snapshot, stored once per item by its SHA-256 digest; activities load it.

Why: activity inputs are written to Temporal's history on every call; carrying the snapshot
in each one made a waiting item's history grow by kilobytes a minute. The workflow carries
the engine's view (:class:`~bees_cli.engine.snapshot.EngineSnapshot`) and the digest; the
activities read the whole snapshot here and check its digest.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from bees_cli.agents.snapshot import ItemSnapshot
from bees_cli.engine.snapshot import EngineSnapshot
from bees_cli.errors import BeesError, NotFound
from bees_cli.record.local import LocalRecord

SNAPSHOTS_DIR = "snapshots"
"""Folder beside the local record holding ``DIGEST.json`` files."""


def engine_view(snapshot: ItemSnapshot) -> EngineSnapshot:
    """Return the engine's view of ``snapshot`` (converted from the workspace models)."""
    return EngineSnapshot.model_validate(snapshot.model_dump(mode="json"))


def snapshot_file(record: LocalRecord, digest: str) -> Path:
    """Return ``<record folder>/snapshots/DIGEST.json``."""
    return record.path.parent / SNAPSHOTS_DIR / f"{digest}.json"


def keep_snapshot(record: LocalRecord, snapshot: ItemSnapshot) -> str:
    """Store ``snapshot`` beside the local record (once: the file name is its digest).

    Returns:
        Its digest (SHA-256 of its canonical JSON, 64 hex digits).
    """
    from bees_cli.files import write_atomic

    digest = snapshot.digest()
    path = snapshot_file(record, digest)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, snapshot.canonical_json().encode("utf-8"))
    return digest


class SnapshotMissing(BeesError):
    """The item's snapshot is not stored here, or its digest does not match."""


def load_snapshot(record: LocalRecord, item_id: str, digest: str | None) -> ItemSnapshot:
    """Return the whole snapshot of item ``item_id`` whose digest is ``digest``.

    Looks in the store (:func:`keep_snapshot`), then in ``RUN/snapshot.json`` (a handover
    continued here), then in the record row's workflow input (items made before the store;
    also when ``digest`` is None). A copy found elsewhere is stored for the next time.

    Raises:
        SnapshotMissing: nowhere to be found with that digest.
    """
    if digest is not None:
        path = snapshot_file(record, digest)
        found = _read(path, digest)
        if found is not None:
            return found
    try:
        row = record.item(item_id)
    except NotFound:
        raise SnapshotMissing(f"item {item_id} is not in the local record") from None
    if digest is not None:
        from bees_cli.handover.store import snapshot_path

        found = _read(snapshot_path(Path(row.run_folder)), digest)
        if found is not None:
            keep_snapshot(record, found)
            return found
    if row.input:
        import json

        data = json.loads(row.input).get("snapshot")
        try:
            old = ItemSnapshot.model_validate(data)
        except ValidationError:
            old = None
        if old is not None and digest in (None, old.digest()):
            keep_snapshot(record, old)
            return old
    raise SnapshotMissing(f"the snapshot {digest} of item {item_id} is not stored here")


def _read(path: Path, digest: str) -> ItemSnapshot | None:
    try:
        body = path.read_bytes()
    except OSError:
        return None
    try:
        snapshot = ItemSnapshot.model_validate_json(body)
    except ValidationError:
        return None
    # the digest is of the canonical JSON, whatever the file's spacing
    return snapshot if snapshot.digest() == digest else None
