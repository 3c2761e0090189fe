"""Helpers shared by the checkpoint tests: a run folder, a checkpoint written or hand-edited."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bees_cli.handover.checkpoint import CheckpointInfo, Verification, write_checkpoint

NOW = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
CAFE = "notes/caf\u00e9 menu.md"
FILES = {
    "draft/report.md": b"# Weekly report\n\nDraft.\n",
    "logs/stage.log": b"started Draft\n",
    CAFE: b"soup\n",
}
MB20 = 20_000_000
ZEROS_20MB = hashlib.sha256(bytes(MB20)).hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_run(folder: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def write(folder: Path, **overrides: Any) -> CheckpointInfo:
    args: dict[str, Any] = {
        "item_id": "01JH2Q0000000000000000TEST",
        "workspace": "maya",
        "process_digest": "sha256:abc",
        "restart_stages": {"main": "Draft"},
        "computer": "maya-laptop",
        "machine_id": "m" * 32,
        "journal": [{"action": "mail.send", "to": "sam@example.com"}],
        "now": NOW,
    }
    args.update(overrides)
    return write_checkpoint(folder, **args)


def rewrite(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Hand-edit checkpoint.json: load it, apply ``change``, save it (ASCII-escaped JSON)."""
    path = folder / "checkpoint.json"
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc, indent=1), encoding="ascii")


def listing(*entries: tuple[str, int, str]) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["files"] = [{"path": p, "size": s, "sha256": h} for p, s, h in entries]

    return change


def found(verification: Verification) -> list[tuple[str, str | None, str]]:
    return [(p.code, p.path, p.message) for p in verification.problems]


def sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)
