"""Is ``bees run`` alive on this computer: ``worker.json`` checked against the live process.

``bees run`` writes ``<data>/worker.json`` (``{"pid", "started", "address", "task_queue"}``)
as it starts (address null: starting) and again when its worker runs, and removes it when
it stops. A ``bees run`` killed with ``kill -9``
leaves the file behind; it counts as running only while a live process has that pid and
the same start time (:mod:`bees_cli.machine.processes`), so a reused pid does not count.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import Refused
from bees_cli.files import read_json, write_json_atomic
from bees_cli.machine.processes import ProcessMark, is_alive, mark_of, this_process
from bees_cli.usecases.models import Result

if TYPE_CHECKING:
    from filelock import FileLock

    from bees_cli.engine.server import EngineServer


class BeesRunState(Result):
    """Whether ``bees run`` runs here (``bees status``, ``bees doctor``).

    Attributes:
        running: a live ``bees run`` process wrote ``worker.json``.
        pid: the pid in ``worker.json`` (the live one, or the last one seen), else None.
        address: the engine address that ``bees run`` uses, when running; None while it
            starts.
        stopped_without_cleanup: ``worker.json`` is there but its process is gone (killed
            with ``kill -9``, a crash, a power cut).
    """

    running: bool
    pid: int | None = None
    address: str | None = None
    stopped_without_cleanup: bool = False

    @property
    def starting(self) -> bool:
        """A live ``bees run`` that has not started its worker yet (engine starting)."""
        return self.running and self.address is None

    @property
    def text(self) -> str:
        """``bees run is running (pid 4242)``, ``bees run is starting (pid 4242)``, ``bees run
        is not running (last seen pid 4242, stopped without cleanup)`` or ``bees run is not
        running``."""
        if self.starting:
            return f"bees run is starting (pid {self.pid})"
        if self.running:
            return f"bees run is running (pid {self.pid})"
        if self.stopped_without_cleanup:
            return gone_words(self.pid)
        return "bees run is not running"


def gone_words(pid: int | None) -> str:
    """Return ``bees run is not running (last seen pid 4242, stopped without cleanup)``:
    killed, it left its file (issue 12, point 8)."""
    return f"bees run is not running (last seen pid {pid}, stopped without cleanup)"


def worker_file(data: Path) -> Path:
    """Return ``<data>/worker.json``: ``{"pid", "started", "address", "task_queue"}`` of
    ``bees run``."""
    return data / "worker.json"


def note_worker(data: Path, address: str, queue: str) -> None:
    """Record that this process runs the worker of the computer whose data folder is ``data``."""
    me = this_process()
    write_json_atomic(worker_file(data), {"pid": me.pid, "started": me.started,
                                          "address": address, "task_queue": queue})


def note_starting(data: Path) -> None:
    """Record that this process is starting ``bees run`` (its engine and worker are not up
    yet), so a control command given now waits for it (:func:`running_worker`) instead of
    saying that nothing runs."""
    me = this_process()
    write_json_atomic(worker_file(data), {"pid": me.pid, "started": me.started,
                                          "address": None, "task_queue": None})


def forget_worker(data: Path) -> None:
    """Remove ``worker.json`` when this process wrote it."""
    info = read_json(worker_file(data), None)
    if isinstance(info, dict) and info.get("pid") == os.getpid():
        worker_file(data).unlink(missing_ok=True)


def bees_run_state(data: Path) -> BeesRunState:
    """Return whether ``bees run`` runs on the computer whose data folder is ``data``.

    A ``worker.json`` without ``started`` (written by an older Bees) is judged by its pid
    alone.
    """
    info = read_json(worker_file(data), None)
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return BeesRunState(running=False)
    pid = int(info["pid"])
    started = info.get("started")
    if isinstance(started, int | float):
        alive = is_alive(ProcessMark(pid=pid, started=float(started)))
    else:
        alive = mark_of(pid) is not None
    address = info.get("address")
    return BeesRunState(running=alive, pid=pid,
                        address=str(address) if alive and address else None,
                        stopped_without_cleanup=not alive)


STARTING_WAIT = 60.0
"""Seconds a control command waits for a ``bees run`` that is starting (engine start,
recovery of the record) before it says the engine is not running."""


def running_worker(data: Path, *, wait: float = 0.0,
                   sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic) -> str | None:
    """Return the engine address of the live ``bees run`` of the computer whose data folder
    is ``data``, or None.

    Args:
        wait: seconds to wait, polling every 0.2 s, while a ``bees run`` is starting; 0:
            answer at once. Nothing is waited for when no ``bees run`` is alive.
        sleep, clock: injected for tests.
    """
    deadline = clock() + wait
    state = bees_run_state(data)
    while state.starting and clock() < deadline:
        sleep(0.2)
        state = bees_run_state(data)
    return state.address


__all__ = ["STARTING_WAIT", "BeesRunState", "bees_run_state", "forget_worker", "note_starting",
           "note_worker", "running_worker", "worker_file"]


def hold_worker_lock(data: Path) -> FileLock:
    """Take the worker lock (``<data>/worker.lock``) for the life of the process.

    Only one ``bees run`` may run per computer: a second one would reuse the first one's
    engine and lose it when the first stops. The lock (filelock's, ``flock`` on POSIX) is
    held until released (the OS drops it when the process ends, even on kill -9); the
    file holds the holder's pid.

    Raises:
        Refused: another ``bees run`` holds it (its pid in the message).
    """
    from filelock import FileLock, Timeout

    data.mkdir(parents=True, exist_ok=True)
    path = data / "worker.lock"
    lock = FileLock(path, timeout=0, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        pid = path.read_text("utf-8", errors="replace").strip() or "unknown"
        raise Refused(f"bees run is already running on this computer (pid {pid})",
                      hint="stop it first (Ctrl-C), or use the one that runs") from None
    try:
        path.write_text(f"{os.getpid()}\n", encoding="utf-8")
    except BaseException:
        lock.release()
        raise
    return lock


def clean_up_after_a_kill(data: Path, say: Callable[[str], None]) -> None:
    """Before ``bees run`` starts its worker (holding the worker lock): say when the last
    ``bees run`` stopped without cleanup, and stop the stages' process groups it left
    running (:func:`~bees_cli.agents.groups.stop_leftovers`), so no orphaned agent goes on
    writing into a run folder (issue 12, point 8). Its engine is adopted or stopped by
    :func:`~bees_cli.engine.server.ensure_engine`."""
    from bees_cli.agents.groups import groups_dir, stop_leftovers

    last = bees_run_state(data)
    if last.stopped_without_cleanup:
        say(f"the last bees run (pid {last.pid}) stopped without cleanup")
        worker_file(data).unlink(missing_ok=True)
    for group in stop_leftovers(groups_dir(data)):
        say(f"stopped the processes that stage {group.stage} of {group.item_id} left "
            f"running (process group {group.pgid})")


def engine_gone(server: EngineServer) -> str | None:
    """Return why the engine ``server`` is gone (its process ended, or its address does not
    answer), or None while it is there."""
    from bees_cli.engine.server import answers, pid_alive

    if server.pid is not None:
        if not pid_alive(server.pid):
            return f"the engine at {server.address} stopped (process {server.pid} is gone)"
        return None
    if not answers(server.address):
        return f"the engine at {server.address} does not answer any more"
    return None
