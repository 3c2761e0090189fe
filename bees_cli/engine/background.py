"""What ``bees run`` does beside its worker: the shared-record sync loop and schedule registration.

Both are asyncio tasks of the ``bees run`` process. Their failures are said once and
logged; they never stop the worker (issue 6: "its own failures are logged, never crash
the worker"). A loop that ends by an unexpected error has its traceback logged and is
started again after :data:`RESTART_AFTER` seconds (a bug shows as a bug, the worker goes on).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import CloudError
from bees_cli.machine.computer import Computer
from bees_cli.record.sync import Syncer

if TYPE_CHECKING:
    from bees_cli.engine.schedules import Registrar

Say = Callable[[str], None]

log = logging.getLogger(__name__)

RESTART_AFTER = 15.0
"""Seconds before a background loop that died of an unexpected error runs again."""

FINAL_SYNC_SECONDS = 10.0
"""Most seconds ``bees run`` spends on its last sync round before it stops."""


@dataclass
class Background:
    """The running side tasks; :meth:`stop` ends them."""

    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    syncer: Syncer | None = None
    """The shared-record sync, when a Bees Cloud is configured."""

    async def final_sync(self, say: Say, *, timeout: float = FINAL_SYNC_SECONDS) -> bool:
        """Push what this computer has before ``bees run`` stops (issue 11, point 5): one
        sync round, bounded by ``timeout`` seconds; say how it went.

        Returns:
            True when the round finished (or there is no cloud), False when it failed or
            timed out (the changes stay in the outbox for the next ``bees run``).

        The sync's Bees Cloud client is closed after it (:meth:`close`).
        """
        try:
            return await self._final_sync(say, timeout)
        finally:
            await self.close()

    async def close(self) -> None:
        """Close the client the sync kept for ``bees run``'s life (issue 29, point 4)."""
        if self.syncer is not None:
            await self.syncer.aclose()

    async def _final_sync(self, say: Say, timeout: float) -> bool:
        from bees_cli.errors import BeesError

        if self.syncer is None:
            return True
        try:
            done = await asyncio.wait_for(self.syncer.sync_once(), timeout)
        except TimeoutError:
            say(f"shared record: no answer in {timeout:g} s; unsent changes wait for the "
                "next `bees run`")
            return False
        except BeesError as error:
            say(f"shared record: not pushed before stopping: {error.message}; unsent "
                "changes wait for the next `bees run`")
            return False
        except Exception as error:  # noqa: BLE001 - stopping must not fail on a bug here
            log.exception("shared record: the last sync failed")
            say(f"shared record: not pushed before stopping: {error!r}")
            return False
        refused = (f"; {done.refused} refused, kept (bees status says why)"
                   if done.refused else "")
        say(f"shared record: pushed {done.pushed - done.refused} change(s) before stopping"
            f"{refused}")
        return True

    async def stop(self) -> None:
        """Ask every task to end, wait up to 5 s, then cancel what is left."""
        self.stop_event.set()
        if not self.tasks:
            return
        _done, pending = await asyncio.wait(self.tasks, timeout=5)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def supervise(name: str, loop: Callable[[], Awaitable[None]], stop: asyncio.Event,
                    say: Say, *, restart_after: float = RESTART_AFTER) -> None:
    """Run ``loop()`` until ``stop`` is set; when it raises, log its traceback, say so once,
    and run it again after ``restart_after`` seconds.

    Args:
        name: the loop's name in the log and the message (``shared record``).
        loop: the loop's coroutine function (it returns when ``stop`` is set).
        stop: ends supervision.
        say: where to say one-line news.
        restart_after: seconds before a restart.
    """
    while not stop.is_set():
        try:
            await loop()
            return
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.exception("%s: the loop stopped on an unexpected error", name)
            say(f"{name}: unexpected error (see the log), running again in "
                f"{restart_after:g} s: {error!r}")
        try:
            await asyncio.wait_for(stop.wait(), restart_after)
        except TimeoutError:
            pass


async def prepare_schedules(client: object, task_queue: str, workspace_path: Path | None,
                            say: Say, *, computer: Computer,
                            clock: Callable[[], datetime] | None = None) -> Registrar | None:
    """At the start of ``bees run``, before its worker handles any fire: register the
    workspace's schedules (removing the ones it no longer declares for this person) and
    note the fires missed while ``bees run`` was down (:meth:`Registrar.start`; DESIGN.md,
    Schedules and "Every fire leaves an outcome row").

    Args:
        client: the Temporal client.
        task_queue: this computer's queue.
        workspace_path: ``--workspace``, or None to look from the current folder.
        say: where to say one-line news.
        computer: this computer (re-read from its home on each registrar pass: the
            signed-in person may change while ``bees run`` is up).
        clock: this computer's UTC clock (tests inject one); default the real one.

    Returns:
        The registrar to keep running (:func:`start_background`), or None when no
        workspace is found (said).
    """
    from bees_cli.engine.schedules import Registrar
    from bees_cli.errors import BeesError
    from bees_cli.workspace.loader import find_workspace

    try:
        root = await asyncio.to_thread(find_workspace, workspace_path)
    except BeesError:
        say("no workspace here: schedules are not registered (bees run -w WORKSPACE)")
        return None
    if computer.person is None:
        say("no person signed in here: schedules are not registered "
            "(bees whoami --set-person EMAIL)")

    def here() -> Computer:
        return Computer.load(computer.home) if computer.state is not None else computer

    registrar = Registrar(client, root, task_queue, computer=here)  # type: ignore[arg-type]
    if clock is not None:
        registrar.clock = clock
    registrar.started = await registrar.start(say)
    return registrar


async def start_background(say: Say, *, computer: Computer, schedules: Registrar | None,
                           news: list[str] | None = None,
                           sync_every: float | None = None,
                           on_retired: Callable[[CloudError], None] | None = None
                           ) -> Background:
    """Start the sync loop (when a Bees Cloud is configured) and keep the schedule
    registrar going (when :func:`prepare_schedules` made one); say what runs.

    Args:
        say: where to say one-line news.
        computer: this computer.
        schedules: the registrar :func:`prepare_schedules` returned, or None.
        news: what :func:`prepare_schedules` had to say, said here after the sync line
            (``bees run`` says its worker's line first).
        sync_every: seconds between sync rounds (default 15).
        on_retired: told when the sync is refused because this runner was retired
            (``runner_retired``); the sync then stops (:meth:`Syncer.run`).
    """
    from bees_cli.record.sync import SYNC_EVERY

    background = Background()
    stop = background.stop_event
    if computer.has_cloud:
        syncer = Syncer(computer, interval=sync_every or SYNC_EVERY)
        background.syncer = syncer
        background.tasks.append(asyncio.create_task(supervise(
            "shared record", lambda: syncer.run(stop, say, on_retired=on_retired), stop,
            say)))
        say(f"shared record: syncing every {syncer.interval:g} s")
    else:
        say("no Bees Cloud configured: no schedule keys, owners or shared record")
    for line in news or ():
        say(line)
    if schedules is not None:
        registrar = schedules
        background.tasks.append(asyncio.create_task(supervise(
            "schedules", lambda: registrar.run(stop, say, started=registrar.started), stop,
            say)))
    return background
