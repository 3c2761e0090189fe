"""Writing ``checkpoint.json``: list and hash a run folder on relinquish, within the limits."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bees_cli.errors import NotFound, Refused
from bees_cli.files import write_atomic
from bees_cli.handover.checkpoint_model import (
    CHECKPOINT_NAME,
    FORMAT,
    CheckpointDocument,
    FileEntry,
    canonical_json,
)
from bees_cli.handover.checkpoint_pieces import CheckpointPiece
from bees_cli.handover.folder import (
    NotRegular,
    disk_name,
    find_collisions,
    hash_file,
    nfc,
    path_problem,
    scan_folder,
)
from bees_cli.handover.limits import DEFAULT_LIMITS, MAX_CHECKPOINT_BYTES, Limits
from bees_cli.handover.problems import Problem, display_path
from bees_cli.record.story import Story
from bees_cli.utc import format_utc


@dataclass(frozen=True)
class CheckpointInfo:
    """What :func:`write_checkpoint` wrote.

    Attributes:
        path: the checkpoint file (``RUN_FOLDER/checkpoint.json``).
        sha256: SHA-256 of the checkpoint file's bytes (lowercase hex); release this.
        files: number of files listed.
        total_bytes: sum of their sizes, in bytes.
    """

    path: Path
    sha256: str
    files: int
    total_bytes: int


def _format_time(now: datetime) -> str:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be an aware datetime (UTC)")
    return format_utc(now)


def write_checkpoint(
    run_folder: Path,
    *,
    item_id: str,
    workspace: str,
    process_digest: str,
    restart_stages: dict[str, str],
    computer: str,
    machine_id: str,
    journal: list[dict[str, Any]],
    now: datetime,
    limits: Limits = DEFAULT_LIMITS,
    story: Story | None = None,
    pieces: list[CheckpointPiece] | None = None,
) -> CheckpointInfo:
    """List and hash every file of ``run_folder`` and write ``checkpoint.json`` atomically.

    The document is ``{"format": 1, "item", "workspace", "process_digest", "restart_stages",
    "files": [{"path", "size", "sha256"}], "computer", "machine_id", "time", "journal"}``
    in canonical JSON (:func:`canonical_json`); with a ``story`` the document is format 2
    and carries it (``"story"``); with a story and ``pieces`` it is format 3 and lists them
    too (``"pieces"``). Paths are relative POSIX paths in Unicode
    NFC, sorted (a name stored decomposed on disk is listed composed, so it survives a copy
    between macOS and Linux: :func:`~bees_cli.handover.verify.verify_checkpoint` matches it);
    sizes are bytes; ``time`` is UTC ISO 8601 ending in ``Z``. A checkpoint this function
    writes always passes :func:`verify_checkpoint` on an unchanged folder: whatever that
    would reject is refused here first.

    Args:
        run_folder: the run folder; every regular file in it but the top ``checkpoint.json``
            is listed.
        item_id: the work item's id.
        workspace: the workspace's name.
        process_digest: digest of the process snapshot the run follows.
        restart_stages: piece name → stage it restarts at: ``"main"`` (the run's stages)
            and each unfinished piece of the stopped stage.
        computer: this computer's name.
        machine_id: this computer's machine id.
        journal: add-on actions already run (JSON objects), so they are not run twice.
        now: the current time, an aware datetime (stored in UTC).
        limits: the handover limits (default: 1,000 files, 20 MB each, 250 MB in all).
        story: the item's story (history, created time and computer, review rounds), or
            None for a format 1 checkpoint without one.
        pieces: the run's pieces (:func:`~bees_cli.handover.checkpoint_pieces.
            checkpoint_pieces`); none (or no story): no ``pieces`` key (format 2 or 1).

    Returns:
        The file written, its SHA-256 (to release to Bees Cloud or keep), file count and bytes.

    Raises:
        NotFound: ``run_folder`` is not a folder.
        Refused: the folder holds a symlink, a special file, an unreadable entry, a name that
            is not valid UTF-8 or that verification would reject (control characters,
            backslash, collisions), or breaks a limit; the message names the file and limit.
            Nothing is written then.
        ValueError: ``now`` is naive, or a field would not pass :class:`CheckpointDocument`
            (an empty name, ``restart_stages`` empty or not names to names, ``journal`` not a
            list of objects): a bug (a pydantic ``ValidationError``, which is a ValueError).
    """
    if not run_folder.is_dir():
        raise NotFound(f"not a folder: {run_folder}")
    # Validated before any file is read; the files are filled in once hashed.
    kept = list(pieces) if pieces and story is not None else None
    header = CheckpointDocument(
        format=FORMAT if kept else 2 if story is not None else 1, item=item_id,
        workspace=workspace,
        process_digest=process_digest, restart_stages=dict(restart_stages), files=[],
        computer=computer, machine_id=machine_id, time=_format_time(now), journal=journal,
        story=story, pieces=kept,
    )
    files = _listable_files(run_folder, limits)
    entries = _hashed_entries(run_folder, files, limits)
    data = _encoded(header.model_copy(update={"files": entries}))
    top = run_folder / CHECKPOINT_NAME
    write_atomic(top, data)
    return CheckpointInfo(path=top, sha256=hashlib.sha256(data).hexdigest(), files=len(entries),
                          total_bytes=sum(entry.size for entry in entries))


def _refused(path: str | None, message: str, hint: str | None = None) -> Refused:
    """The refusal of a checkpoint that cannot be written: ``cannot write the checkpoint:
    PATH: message`` (without ``PATH: `` when it is None)."""
    where = f"{display_path(path)}: " if path is not None else ""
    return Refused(f"cannot write the checkpoint: {where}{message}", hint=hint)


def _refuse_first(problems: list[Problem]) -> None:
    """Raise the refusal of the first of ``problems``, if any."""
    if problems:
        raise _refused(problems[0].path, problems[0].message)


def _listable_files(run_folder: Path, limits: Limits) -> list[str]:
    """Return the files of ``run_folder`` to list (names on disk, sorted), once each can
    travel and their sizes on disk are within ``limits`` (judged before any is read).

    Raises:
        Refused: what :func:`write_checkpoint` refuses, but a file that changes while hashed.
    """
    top = run_folder / CHECKPOINT_NAME
    if top.is_symlink() or (top.exists() and not top.is_file()):
        raise _refused(CHECKPOINT_NAME, "exists and is not a regular file")
    scan = scan_folder(run_folder)
    if scan.unreadable:
        rel, reason = scan.unreadable[0]
        raise _refused(disk_name(rel), f"cannot read: {reason}")
    if scan.symlinks:
        raise _refused(disk_name(scan.symlinks[0]), "is a symlink; a symlink cannot travel "
                       "safely", hint="replace it with a copy of the file or folder it points to")
    if scan.special:
        raise _refused(disk_name(scan.special[0]), "is not a regular file")
    for rel in scan.files:
        if disk_name(rel) != rel:
            raise _refused(disk_name(rel), "file name is not valid UTF-8")
    for rel in scan.files:
        problem = path_problem(rel)
        if problem is not None:
            raise _refused(rel, problem.message)
    collisions = find_collisions(scan.files)
    if collisions:
        raise _refused(collisions[0].path, collisions[0].message)
    _refuse_first(limits.problems([(rel, _disk_size(run_folder, rel))
                                   for rel in sorted(scan.files, key=nfc)]))
    return scan.files


def _disk_size(run_folder: Path, rel: str) -> int:
    """The size in bytes of ``rel`` on disk (not following a symlink).

    Raises:
        Refused: it cannot be read.
    """
    try:
        return os.lstat(run_folder / rel).st_size
    except OSError as error:
        raise _refused(rel, f"cannot read: {error.strerror or error}") from None


def _hashed_entries(run_folder: Path, files: list[str], limits: Limits) -> list[FileEntry]:
    """Hash ``files`` (each read at most one byte past the per-file limit) into the
    checkpoint's entries, listed by NFC name in sorted order; the sizes read are judged
    against ``limits`` again (a file may have grown since it was measured).

    Raises:
        Refused: a file is no longer a regular file or cannot be read, or a limit is broken.
    """
    entries: list[FileEntry] = []
    # Listed in NFC, read by the name on disk (issue 12, point 5); no two names share an
    # NFC form here (collisions were refused before), so the listing stays one name a file.
    for listed, rel in sorted((nfc(rel), rel) for rel in files):
        try:
            size, digest = hash_file(run_folder / rel, limits.max_file_bytes, None)
        except NotRegular:
            raise _refused(rel, "is not a regular file") from None
        except OSError as error:
            raise _refused(rel, f"cannot read: {error.strerror or error}") from None
        entries.append(FileEntry(path=listed, size=size, sha256=digest))
    _refuse_first(limits.problems([(entry.path, entry.size) for entry in entries]))
    return entries


def _encoded(document: CheckpointDocument) -> bytes:
    """The checkpoint's bytes (canonical JSON).

    Raises:
        Refused: they would pass :data:`MAX_CHECKPOINT_BYTES`.
    """
    data = canonical_json(document.model_dump())
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise _refused(CHECKPOINT_NAME, f"would be {len(data):,} bytes; the limit is "
                                        f"{MAX_CHECKPOINT_BYTES:,} bytes (16 MiB)")
    return data
