"""Which processes of this computer are alive: a pid and its start time, so reused pids never count.

Why: ``bees run``, the engine and each stage's process group are recorded in small files
(``worker.json``, ``engine.json``, ``stages/*.json``); a process killed with ``kill -9``
leaves its file behind, and after a while the kernel hands its pid to another program. A
file names a process only while a live, non-zombie process with that pid has the same
start time (psutil's ``create_time``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict

START_TOLERANCE = 1.0
"""Seconds two readings of one process's start time may differ by: psutil derives it from
the boot time, which the kernel may report one second apart after a clock adjustment."""


class ProcessMark(BaseModel):
    """A process as it was recorded: ``pid`` and ``started`` (its start time, seconds since
    the epoch, as psutil's ``create_time``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int
    started: float


def mark_of(pid: int, *, zombie: bool = False) -> ProcessMark | None:
    """Return the mark of live process ``pid`` (now), or None when it is gone or (unless
    ``zombie``) a zombie: it ended and waits to be reaped."""
    import psutil  # here: bees status reads worker.json first, and without it needs no psutil

    try:
        process = psutil.Process(pid)
        if not zombie and process.status() == psutil.STATUS_ZOMBIE:
            return None
        return ProcessMark(pid=pid, started=process.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def this_process() -> ProcessMark:
    """Return the mark of the calling process."""
    mark = mark_of(os.getpid())
    assert mark is not None
    return mark


def is_alive(mark: ProcessMark) -> bool:
    """Return True while the process ``mark`` names runs: its pid is a live, non-zombie
    process started within :data:`START_TOLERANCE` s of ``mark.started``."""
    now = mark_of(mark.pid)
    return now is not None and abs(now.started - mark.started) <= START_TOLERANCE


def _members(pgid: int) -> Iterator[int]:
    """Yield the pids of the live (non-zombie) processes of group ``pgid``."""
    import psutil

    for process in psutil.process_iter(["status"]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if (os.getpgid(process.pid) == pgid
                    and process.info["status"] != psutil.STATUS_ZOMBIE):
                yield process.pid


def group_alive(pgid: int) -> bool:
    """Return True while a process of group ``pgid`` is alive and not a zombie.

    ``os.killpg(pgid, 0)`` answers first (no such group: False); when the group exists,
    psutil tells whether any member still runs, since a member killed but not yet reaped
    (a zombie) still makes ``killpg`` succeed.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return next(_members(pgid), None) is not None


def group_members(pgid: int) -> list[int]:
    """Return the pids of the live (non-zombie) processes of group ``pgid``, sorted."""
    return sorted(_members(pgid))


__all__ = ["ProcessMark", "group_alive", "group_members", "is_alive", "mark_of",
           "this_process"]
