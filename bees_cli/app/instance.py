"""One ``bees app`` per computer: the lock it holds while it serves and the record of its URL.

A second ``bees app`` on the same ``BEES_HOME`` finds the first one's record and opens (or
prints) that app's URL instead of serving a second page. The lock is filelock's (``flock`` on
POSIX), which the OS drops when its process ends, even on ``kill -9``; the record names its
process (pid and start time), so one left behind by a killed app is never taken for a live
one and never blocks the next start.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel

from bees_cli.errors import BeesError, Refused
from bees_cli.files import read_json, write_json_atomic
from bees_cli.machine.processes import ProcessMark, is_alive, this_process

LOCK_FILE = "app.lock"
"""``<data>/app.lock``: held by the ``bees app`` that serves this computer."""

RECORD_FILE = "app.json"
"""``<data>/app.json``: its URL (with the secret: readable by its owner only), port, pid."""

STARTING_WAIT = 10.0
"""Seconds a second ``bees app`` waits for the record of one that holds the lock but has
not written its URL yet (it is binding its socket)."""


class Serving(BaseModel):
    """The ``bees app`` that serves this computer (``<data>/app.json``).

    Attributes:
        pid: its process id.
        started: its process's start time (seconds since the epoch; with ``pid``, a
            :class:`~bees_cli.machine.processes.ProcessMark`).
        url: its first URL, with the secret
            (``http://bees-<hex>.localhost:PORT/?secret=…``: the app's own name).
        port: the TCP port it listens on, on 127.0.0.1.
        workspace: the workspace ``bees app -w`` named, or None (the default one).
    """

    pid: int
    started: float
    url: str
    port: int
    workspace: str | None = None

    @property
    def address(self) -> str:
        """Its address without the secret: ``http://bees-<hex>.localhost:PORT/``."""
        return self.url.split("?", 1)[0]

    def alive(self) -> bool:
        """True while the process that wrote it runs (not a pid reused since)."""
        return is_alive(ProcessMark(pid=self.pid, started=self.started))


def record_file(data: Path) -> Path:
    """Return ``<data>/app.json``."""
    return data / RECORD_FILE


def serving(data: Path) -> Serving | None:
    """Return the live ``bees app`` of the computer whose data folder is ``data``, or None
    (no record, an unreadable one, or one whose process is gone)."""
    try:
        found = Serving.model_validate(read_json(record_file(data), None))
    except (ValueError, OSError, BeesError):  # missing, not JSON, not a record
        return None
    return found if found.alive() else None


def claim(data: Path, *, wait: float = STARTING_WAIT,
          sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> FileLock | Serving:
    """Take this computer's app lock, or return the app that holds it.

    Args:
        data: the computer's data folder.
        wait: seconds to wait for the record of an app that holds the lock but is still
            starting (polling every 0.1 s).
        sleep, clock: injected for tests.

    Returns:
        The lock, held (release it when the app stops), or the live app's record.

    Raises:
        Refused: another ``bees app`` holds the lock but wrote no record in ``wait`` s.
    """
    data.mkdir(parents=True, exist_ok=True)
    lock = FileLock(data / LOCK_FILE, timeout=0, thread_local=False)
    deadline = clock() + wait
    while True:
        try:
            lock.acquire()
        except Timeout:
            pass
        else:
            return lock
        found = serving(data)
        if found is not None:
            return found
        if clock() >= deadline:
            raise Refused("another bees app is starting on this computer, and says no URL yet",
                          hint="wait a moment and run bees app again, or stop the other one")
        sleep(0.1)


def note_serving(data: Path, *, url: str, port: int, workspace: Path | None) -> Serving:
    """Write this process's record (mode 0600: the URL holds the secret); return it."""
    me = this_process()
    record = Serving(pid=me.pid, started=me.started, url=url, port=port,
                     workspace=None if workspace is None else str(workspace.resolve()))
    write_json_atomic(record_file(data), record.model_dump(), mode=0o600)
    return record


def forget_serving(data: Path) -> None:
    """Remove the record when this process wrote it."""
    found = read_json(record_file(data), None)
    if isinstance(found, dict) and found.get("pid") == os.getpid():
        record_file(data).unlink(missing_ok=True)


__all__ = ["Serving", "claim", "forget_serving", "note_serving", "record_file", "serving"]
