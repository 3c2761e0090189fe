"""The run folder's copy of the action journal: ``RUN/journal/actions.jsonl``, append-only.

Why: the local record (``record.db``) keeps the journal and the intents of ``bees action``;
when it is lost and rebuilt from the engine, which never saw them, an action that already
ran in a stage would run again when the stage restarts. Each intent and each end (result,
``ran``, ``again``) is also appended here, one JSON line, fsynced before the call returns,
so the record's loss loses nothing, and the journal travels with the run folder on a
handover (DESIGN.md, Under faults: "an intent without a result is never run again by
itself"; issue 12, point 1).

Lines (:class:`Line`)::

    {"type": "intent", "stage", "action", "digest", "attempt", "at"}
    {"type": "end", "stage", "action", "digest", "how", "entry"}

``how`` is ``result`` (the add-on ran: ``entry`` is its
:class:`~bees_cli.engine.models.JournalEntry` as JSON, or null when it could not start),
``ran`` (a person confirmed it ran) or ``again`` (a person asked to run it again). An
action's latest intent with no later end is open: it may already have run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

JOURNAL_DIR = "journal"
"""The folder of the run folder that holds the journal's copy."""

JOURNAL_FILE = "actions.jsonl"
"""The journal's copy in :data:`JOURNAL_DIR`."""

EndHow = Literal["result", "ran", "again"]
"""How an intent ended: the add-on's result, a person's ``--ran``, or a person's ``--again``."""


class Line(BaseModel):
    """One line of the journal's copy (see the module docstring)."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["intent", "end"]
    stage: str
    action: str
    digest: str
    attempt: int | None = None
    at: str | None = None
    how: EndHow | None = None
    entry: dict[str, Any] | None = None


@dataclass(frozen=True)
class Recalled:
    """What the journal's copy says of one action with one input in one stage.

    ``hit``: its first successful (exit 0) result, as journaled, or None. ``intent``: its
    latest intent that has no end (``attempt``, ``at``), or None.
    """

    hit: dict[str, Any] | None
    intent: dict[str, Any] | None


def journal_path(run_folder: str | Path) -> Path:
    """Return ``RUN/journal/actions.jsonl`` of ``run_folder``."""
    return Path(run_folder) / JOURNAL_DIR / JOURNAL_FILE


def _append(run_folder: str | Path, line: Line) -> None:
    """Append ``line`` and fsync it (and the folder when the file is new).

    Raises:
        OSError: the run folder cannot be written.
    """
    path = journal_path(run_folder)
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(line.model_dump(mode="json", exclude_none=True), ensure_ascii=False,
                       sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a line torn by a crash stays apart from this one
        os.write(fd, data)  # one write in append mode: concurrent lines do not interleave
        os.fsync(fd)
    finally:
        os.close(fd)
    if new:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def write_intent(run_folder: str | Path, *, stage: str, action: str, digest: str,
                 attempt: int, at: str) -> None:
    """Append, durably, that ``action`` with input ``digest`` is about to run in ``stage``.

    Raises:
        OSError: the run folder cannot be written (the action must not run then).
    """
    _append(run_folder, Line(type="intent", stage=stage, action=action, digest=digest,
                             attempt=attempt, at=at))


def write_end(run_folder: str | Path, *, stage: str, action: str, digest: str, how: EndHow,
              entry: dict[str, Any] | None) -> None:
    """Append, durably, how the latest intent of ``action`` with input ``digest`` ended
    (``entry``: the journal entry, or None); for a ``read`` (no intent), its result.

    Raises:
        OSError: the run folder cannot be written.
    """
    _append(run_folder, Line(type="end", stage=stage, action=action, digest=digest, how=how,
                             entry=entry))


def recall(run_folder: str | Path, *, stage: str, action: str, digest: str) -> Recalled:
    """Return what the journal's copy says of ``action`` with input ``digest`` in ``stage``.

    A line that is not whole (the machine died while writing it) or not of this format is
    skipped; a missing or unreadable file says nothing.
    """
    try:
        text = journal_path(run_folder).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return Recalled(hit=None, intent=None)
    hit: dict[str, Any] | None = None
    intent: dict[str, Any] | None = None
    for raw in text.splitlines():
        try:
            line = Line.model_validate_json(raw)
        except ValidationError:
            continue
        if (line.stage, line.action, line.digest) != (stage, action, digest):
            continue
        if line.type == "intent":
            intent = {"attempt": line.attempt or 1, "at": line.at or ""}
            continue
        intent = None
        if hit is None and line.entry is not None and line.entry.get("exit_code") == 0:
            hit = dict(line.entry)
    return Recalled(hit=hit, intent=intent)
