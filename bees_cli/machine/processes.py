"""Which processes of this computer are alive: a pid and its start time, so reused pids never count.

Why: ``bees run``, the engine and each stage's process group are recorded in small files
(``worker.json``, ``engine.json``, ``stages/*.json``); a process killed with ``kill -9``
leaves its file behind, and after a while the kernel hands its pid to another program. A
file names a process only while a live, non-zombie process with that pid has the same
start time (psutil's ``create_time``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator

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


PR_SET_PDEATHSIG = 1
"""Linux ``prctl`` option: the signal the kernel sends a process when its parent dies."""


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """Return libc's ``prctl`` (Linux), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def die_with_parent(signum: int = signal.SIGKILL) -> Callable[[], None] | None:
    """Return a ``preexec_fn`` that makes the started program die with this process.

    On Linux it calls ``prctl(PR_SET_PDEATHSIG, signum)`` in the child between fork and
    exec, and sends the child ``signum`` at once if this process already died in between.
    The function is resolved here, in the parent, so the child only makes the call. The
    one place for every process ``bees`` starts that must not outlive it: a stage's
    program (SIGKILL), the engine's dev server and the embedded model server (SIGTERM, so
    they close their files).

    Why the thread matters: the kernel sends the signal when the *thread* that started the
    child ends, so start it from a thread that lives as long as the child should (the main
    thread, or the event loop's default executor, whose threads last until the loop closes).

    Args:
        signum: the signal the child gets when its parent dies (SIGKILL by default).

    Returns:
        The function, or None where ``prctl`` is not available (not Linux): there the
        next ``bees run`` stops what was left.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent, sig = os.getpid(), int(signum)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the call
            os.kill(os.getpid(), sig)

    return preexec


def group_members(pgid: int) -> list[int]:
    """Return the pids of the live (non-zombie) processes of group ``pgid``, sorted."""
    return sorted(_members(pgid))


__all__ = ["ProcessMark", "die_with_parent", "group_alive", "group_members", "is_alive", "mark_of",
           "this_process"]
