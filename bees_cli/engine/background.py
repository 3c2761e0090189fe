"""What ``bees run`` does beside its worker: the shared-record sync loop and schedule registration.

Both are asyncio tasks of the ``bees run`` process. Their failures are said once and
logged; they never stop the worker (issue 6: "its own failures are logged, never crash
the worker").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Say = Callable[[str], None]


@dataclass
class Background:
    """The running side tasks; :meth:`stop` ends them."""

    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

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


async def start_background(client: object, task_queue: str, workspace_path: Path | None,
                           say: Say, *, sync_every: float | None = None) -> Background:
    """Start the sync loop (when a Bees Cloud is configured) and the schedule registrar
    (when a workspace is found); say what runs and what does not.

    Args:
        client: the Temporal client.
        task_queue: this computer's queue.
        workspace_path: ``--workspace``, or None to look from the current folder.
        say: where to say one-line news.
        sync_every: seconds between sync rounds (default 15).
    """
    from bees_cli.engine.schedules import Registrar
    from bees_cli.errors import BeesError
    from bees_cli.machine.computer import Computer
    from bees_cli.record.sync import SYNC_EVERY, Syncer
    from bees_cli.workspace.loader import find_workspace

    background = Background()
    here = await asyncio.to_thread(Computer.load)
    if here.has_cloud:
        syncer = Syncer(here, interval=sync_every or SYNC_EVERY)
        background.tasks.append(asyncio.create_task(syncer.run(background.stop_event, say)))
        say(f"shared record: syncing every {syncer.interval:g} s")
    else:
        say("no Bees Cloud configured: no schedule keys, owners or shared record")
    try:
        root = await asyncio.to_thread(find_workspace, workspace_path)
    except BeesError:
        say("no workspace here: schedules are not registered (bees run -w WORKSPACE)")
        return background
    if here.person is None:
        say("no person signed in here: schedules are not registered "
            "(bees whoami --set-person EMAIL)")
    registrar = Registrar(client, root, task_queue)  # type: ignore[arg-type]
    background.tasks.append(asyncio.create_task(registrar.run(background.stop_event, say)))
    return background
