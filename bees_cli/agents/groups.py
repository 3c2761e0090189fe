"""A stage's process group: its leader dies with ``bees run``, and what it leaves is stopped.

A stage's program runs in its own session, so its group holds it and every helper it
starts. The group is stopped (SIGTERM, then SIGKILL after :data:`KILL_GRACE` s) when the
stage is cancelled, relinquished or ends (see :mod:`bees_cli.agents.runner`). When the
worker itself dies (``kill -9`` of ``bees run``), two things stop the group instead:

1. on Linux the leader is started with ``PR_SET_PDEATHSIG``
   (:func:`~bees_cli.machine.processes.die_with_parent`), so
   the kernel kills it the moment ``bees run`` dies;
2. each running stage has a file in the data dir, and the next ``bees run`` (or the next
   attempt of the stage, or a handover) stops the groups those files name
   (:func:`stop_leftovers`, :func:`kill_leftover`), helpers included.

Files in the data dir::

    stages/ITEM.STAGE.json    {"pgid", "started", "item_id", "stage", "run_folder"}

Why in the data dir and not the run folder: a pid means something only on the computer
that started it, and a run folder travels to another computer on a handover.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from bees_cli.files import write_atomic
from bees_cli.machine.processes import (
    ProcessMark,
    die_with_parent,
    group_alive,
    is_alive,
    mark_of,
)

KILL_GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL when a stage's process group is stopped."""

class StageGroup(BaseModel):
    """A running stage's process group, as recorded in ``stages/ITEM.STAGE.json``.

    Attributes:
        pgid: the group id (the pid of the program the stage started, its leader).
        started: the leader's start time (seconds since the epoch, psutil ``create_time``).
        item_id, stage, run_folder: whose stage it is.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pgid: int
    started: float
    item_id: str
    stage: str
    run_folder: str


def groups_dir(data: Path) -> Path:
    """Return ``<data>/stages``, the folder of the running stages' group files (not created)."""
    return data / "stages"


def group_file(groups: Path, item_id: str, stage: str) -> Path:
    """Return ``GROUPS/ITEM.STAGE.json`` (characters other than letters, digits, ``-`` and
    ``_`` become ``_``, so no name can point outside ``groups``)."""

    def safe(text: str) -> str:
        return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in text)

    return groups / f"{safe(item_id)}.{safe(stage)}.json"


def record_group(groups: Path, group: StageGroup) -> Path:
    """Write ``group`` to its file in ``groups`` (created); return the file.

    Not fsynced: the file is rewritten on every attempt, and a power cut that could lose it
    also ends the group it names.
    """
    groups.mkdir(parents=True, exist_ok=True)
    path = group_file(groups, group.item_id, group.stage)
    write_atomic(path, (group.model_dump_json() + "\n").encode(), durable=False)
    return path


def group_of(pgid: int, *, item_id: str, stage: str, run_folder: str) -> StageGroup | None:
    """Return the record of the group whose leader is process ``pgid`` (alive, or ended
    but not yet reaped), or None when the leader is already gone."""
    leader = mark_of(pgid, zombie=True)
    if leader is None:
        return None
    return StageGroup(pgid=pgid, started=leader.started, item_id=item_id, stage=stage,
                      run_folder=run_folder)


def still_running(group: StageGroup) -> bool:
    """Return True when the group ``group`` names still has live processes here.

    Its leader, when alive, must be the recorded process (same start time); a leader that
    died leaves the group to its helpers, and the kernel does not reuse a pid while it is a
    live group's id, so those helpers are the stage's. Never this process's own group.
    """
    if group.pgid <= 1 or group.pgid == os.getpgrp() or not group_alive(group.pgid):
        return False
    leader = mark_of(group.pgid)
    return leader is None or is_alive(ProcessMark(pid=group.pgid, started=group.started))


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to group ``pgid``; a group that is gone (or not ours) is left alone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_groups(pgids: Iterable[int], *, grace: float | None = None) -> None:
    """Stop the groups ``pgids`` together: SIGTERM, then SIGKILL to those still alive after
    ``grace`` seconds (default :data:`KILL_GRACE`); return once every group is gone (at most
    another ``grace`` s)."""
    grace = KILL_GRACE if grace is None else grace
    pgids = list(pgids)
    for pgid in pgids:
        signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(group_alive(p) for p in pgids) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [p for p in pgids if group_alive(p)]
    for pgid in alive:
        signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while any(group_alive(p) for p in alive) and time.monotonic() < deadline:
        time.sleep(0.02)


def _read(path: Path) -> StageGroup | None:
    try:
        return StageGroup.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None


def kill_leftover(groups: Path, item_id: str, stage: str) -> bool:
    """Stop the process group a previous, killed worker left running for the stage.

    Reads the stage's file in ``groups``; when :func:`still_running` says the group lives,
    stops it (:func:`stop_groups`: blocks up to about 3 s, more only while SIGKILL lands).
    The file is removed in every case.

    Returns:
        True when a live group was found and stopped.
    """
    path = group_file(groups, item_id, stage)
    group = _read(path)
    try:
        if group is None or not still_running(group):
            return False
        stop_groups([group.pgid])
        return True
    finally:
        path.unlink(missing_ok=True)


def stop_leftovers(groups: Path) -> list[StageGroup]:
    """Stop every group the files in ``groups`` name that still runs, and remove the files.

    ``bees run`` calls it on start, holding the worker lock: no stage runs on this
    computer then, so every file is a leftover of a ``bees run`` that died without cleanup.

    Returns:
        The groups that were still running (and are stopped now), by file name.
    """
    if not groups.is_dir():
        return []
    found: list[StageGroup] = []
    paths = sorted(groups.glob("*.json"))
    for path in paths:
        group = _read(path)
        if group is not None and still_running(group):
            found.append(group)
    stop_groups(g.pgid for g in found)
    for path in paths:
        path.unlink(missing_ok=True)
    return found


__all__ = [
    "KILL_GRACE", "StageGroup", "die_with_parent", "group_file", "group_of", "groups_dir",
    "kill_leftover", "record_group", "signal_group", "still_running", "stop_groups",
    "stop_leftovers",
]
