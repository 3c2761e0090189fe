"""A stage's program as a process: started so it dies with ``bees run``, waited for with
heartbeats, and its whole process group stopped when the stage is cancelled.

:func:`~bees_cli.agents.runner.run_command_stage` runs a stage's program through these;
the file that records the group while it runs is written by :mod:`bees_cli.agents.groups`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bees_cli.agents.groups import KILL_GRACE, die_with_parent, signal_group
from bees_cli.agents.spawn import fast_launch
from bees_cli.machine.processes import group_alive


async def start_program(argv: list[str], folder: Path, env: dict[str, str], out: Any,
                        err: Any) -> asyncio.subprocess.Process | str:
    """Start ``argv`` in ``folder`` in a new session (its own process group), stdin from
    ``/dev/null``, output to the open files ``out`` and ``err``, so that it dies with this
    process (:func:`~bees_cli.agents.spawn.fast_launch`, else
    :func:`~bees_cli.agents.groups.die_with_parent`).

    Returns:
        The started process, or one line saying why it cannot start (not found, not
        executable, another OS error); nothing raises for these.
    """
    try:
        launch = fast_launch(argv, folder, env)
        if launch is not None:  # vfork: no preexec_fn (see bees_cli.agents.spawn)
            return await asyncio.create_subprocess_exec(
                *launch.argv, cwd=folder, env=launch.env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=err, start_new_session=True,
            )
        return await asyncio.create_subprocess_exec(
            *argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=err, start_new_session=True, preexec_fn=die_with_parent(),
        )
    except FileNotFoundError:
        return f"cannot start {argv[0]}: not found"
    except PermissionError:
        return f"cannot start {argv[0]}: not executable (permission denied)"
    except OSError as error:
        return f"cannot start {argv[0]}: {error.strerror or error}"


async def wait_program(proc: asyncio.subprocess.Process, heartbeat: Callable[[], None],
                       every: float) -> int:
    """Wait for ``proc`` (a group leader), calling ``heartbeat`` every ``every`` s; return
    its exit code once its whole group is gone. On any exception (a cancel, a failed
    heartbeat) the group is stopped (:func:`stop_group`) before it propagates."""
    pgid = proc.pid
    waiter: asyncio.Future[int] = asyncio.ensure_future(proc.wait())
    try:
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=every)
            if done:
                break
            heartbeat()
        code = waiter.result()
        if group_alive(pgid):
            # the program is done; helpers it left in its group go with it
            signal_group(pgid, signal.SIGKILL)
    except BaseException:
        await stop_group(pgid, waiter)
        raise
    return code


async def stop_group(pgid: int, waiter: asyncio.Future[int]) -> None:
    """SIGTERM the group, SIGKILL it after :data:`KILL_GRACE` s, then reap the leader.

    The leader's exit is awaited on its process (no polling); the group is looked at (a
    ``/proc`` scan when it still exists) only after that, every 50 ms while helpers the
    leader left behind still run.
    """
    signal_group(pgid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + KILL_GRACE
        await asyncio.wait({waiter}, timeout=KILL_GRACE)
        while await asyncio.to_thread(group_alive, pgid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        if group_alive(pgid):
            signal_group(pgid, signal.SIGKILL)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(waiter), timeout=KILL_GRACE)
        with contextlib.suppress(BaseException):
            # SIGKILL is delivered asynchronously: return once the group is really gone
            deadline = time.monotonic() + KILL_GRACE
            while await asyncio.to_thread(group_alive, pgid) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
