"""``bees run``: this computer's engine and worker, the start of pending items, idleness."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import BeesError, EngineError, Refused
from bees_cli.record.local import ACTIVE_STATUSES, NOT_RUNNING, LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases.actions import call_action
from bees_cli.usecases.liveness import bees_run_state, note_starting
from bees_cli.usecases.liveness import forget_worker as forget_worker
from bees_cli.usecases.liveness import note_worker as note_worker
from bees_cli.usecases.liveness import running_worker as running_worker
from bees_cli.usecases.liveness import worker_file as worker_file
from bees_cli.usecases.models import ActionOutcome

if TYPE_CHECKING:
    from filelock import FileLock

    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.server import EngineServer
    from bees_cli.machine.computer import Computer
    from bees_cli.record.aio import AsyncRecord
    from bees_cli.usecases.bees import Bees

IDLE_POLL = 0.25
"""Seconds between looks at the local record while ``bees run`` waits (idle, pending items)."""

ENGINE_CHECK_EVERY = 2.0
"""Seconds between checks that the engine ``bees run`` uses is still there."""

INTERRUPTED_STATUSES: frozenset[str] = frozenset({"starting", "running"})
"""Statuses of an item whose stage runs: ``bees run`` stopping leaves them waiting."""


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


async def start_pending(engine: EngineGateway, record: AsyncRecord, computer: Computer, *,
                        only: str | None = None) -> int:
    """Start the run of every ``pending`` item of the local record (or only item ``only``).

    Each is claimed in Bees Cloud first (:func:`bees_cli.schedules.owners.ready_to_start`):
    one whose claim cannot be made yet waits, one owned elsewhere never starts.

    Args:
        engine: the connected engine gateway.
        record: this computer's local record.
        computer: this computer (its machine id names the task queue; its sign-in claims).
        only: start only this item.

    Returns:
        How many runs this call started.
    """
    from bees_cli.engine.models import ItemInput, task_queue
    from bees_cli.schedules.owners import ready_to_start, startable

    queue = task_queue(computer.machine_id)
    started = 0
    for row in await record.run(startable):
        if only is not None and row.id != only:
            continue
        if not await ready_to_start(record.sync, row, computer=computer):
            continue
        item = ItemInput.model_validate_json(row.input)
        if await engine.start(item, queue):
            started += 1
        await record.set_state(row.id, status="starting", stage=row.stage,
                               only_if=frozenset({"pending"}))
    return started


def is_idle(record: LocalRecord) -> bool:
    """Return True when no item of this computer is pending, starting or running, and no
    decision waits to be delivered.

    An item waiting for approval (or for a person) is idle: nothing happens to it until a
    person acts, so ``bees run --exit-when-idle`` returns; ``bees approve`` then queues the
    decision and the next ``bees run`` delivers it. An item whose stage was interrupted when
    ``bees run`` stopped (:func:`mark_interrupted`) is not idle: its stage runs again.

    An item waiting for its owner claim because Bees Cloud was unreachable
    (``WaitKind.CLAIM_PENDING``) is not idle either: ``bees run`` tries the claim again
    every 15 s (issue 11, point 5; :func:`claim_wait_line` says so). Nor is an item whose
    handover waits for Bees Cloud to release it (``WaitKind.RELEASE_PENDING``), nor one whose
    model call waits for its next try (``WaitKind.MODEL``: the engine tries it again by
    itself, an hour later if the model's server asks so; issue 23, point 7).
    """
    if record.queued_controls():
        return False
    return not any(row.status in ACTIVE_STATUSES
                   or row.wait in (WaitKind.ENGINE_NOT_RUNNING, WaitKind.CLAIM_PENDING,
                                   WaitKind.RELEASE_PENDING, WaitKind.MODEL)
                   for row in record.items())


CLOSED_STATUSES: frozenset[Status] = frozenset({Status.DONE, Status.CANCELLED, Status.FREE})
"""Statuses of an item whose run has ended in the engine (finished, cancelled, handed over)."""

CLOSING_WAIT = 30.0
"""Seconds ``bees run --exit-when-idle`` waits for runs whose items ended to close in the
engine (their last workflow task) before it stops anyway."""


def closing_runs(record: LocalRecord, open_runs: set[str]) -> list[str]:
    """Return the ids of items that the record shows ended (:data:`CLOSED_STATUSES`) while
    the engine still lists their run open: the run's last workflow task has not been handled
    yet, and a worker that stopped now would leave it open until the next ``bees run``."""
    return sorted(row.id for row in record.items()
                  if row.id in open_runs and row.status in CLOSED_STATUSES)


def claim_wait_line(record: LocalRecord) -> str | None:
    """Return what ``bees run --exit-when-idle`` says while items wait for an owner claim
    that could not reach Bees Cloud (``not stopping: 1 item waits for its owner claim
    (Bees Cloud unreachable); trying again every 15 s``), or None when none waits."""
    from bees_cli.schedules.owners import CLAIM_RETRY

    waiting = sum(row.wait == WaitKind.CLAIM_PENDING for row in record.items())
    if not waiting:
        return None
    items = "1 item waits" if waiting == 1 else f"{waiting} items wait"
    return (f"not stopping: {items} for its owner claim (Bees Cloud unreachable); trying "
            f"again every {CLAIM_RETRY:g} s")


def mark_interrupted(record: LocalRecord) -> int:
    """Say in the local record that the items running here wait for the next ``bees run``
    (``waiting: the engine is not running (bees run)``); return how many.

    Why: a stage interrupted by Ctrl-C would otherwise read ``running`` in ``bees status``
    while nothing runs it. The next ``bees run`` starts the stage again (a new attempt) and
    the history says the earlier attempt was interrupted.
    """
    rows = record.items(statuses=INTERRUPTED_STATUSES)
    for row in rows:
        record.set_state(row.id, status=Status.WAITING, stage=row.stage, reason=NOT_RUNNING,
                         agent=row.agent, wait=WaitKind.ENGINE_NOT_RUNNING,
                         only_if=INTERRUPTED_STATUSES)
    return len(rows)


def idle_line(record: LocalRecord) -> str:
    """Return what ``bees run --exit-when-idle`` says when it stops: ``nothing left to run
    here: 1 item waits for approval (bees approvals)``, naming what waits for a person."""
    rows = record.items()
    approval = sum(r.wait == WaitKind.APPROVAL for r in rows)
    person = sum(r.wait == WaitKind.PERSON for r in rows)
    parts = []
    if approval:
        parts.append(f"{approval} {'item waits' if approval == 1 else 'items wait'} for "
                     "approval (bees approvals)")
    if person:
        parts.append(f"{person} {'item waits' if person == 1 else 'items wait'} for a person "
                     "(bees status)")
    return "nothing left to run here" + (": " + "; ".join(parts) if parts else "") + \
        "; stopping"


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


async def _run_bees(bees: Bees, *, workspace_path: Path | None, address: str | None,
                     exit_when_idle: bool, heartbeat_every: float = 2.0) -> int:
    """Run this computer's engine until SIGINT/SIGTERM (or until idle): ``bees run``.

    Starts (or reuses) the embedded dev server, or uses the server at ``address``; runs the
    worker on ``bees-<machine_id>``; starts pending items, now and whenever new ones appear;
    stops the server it started on the way out.

    Returns:
        The exit code: 0.

    Raises:
        Refused: another ``bees run`` runs on this computer (:func:`hold_worker_lock`).
        WorkspaceInvalid: ``workspace_path`` is given and does not load.
        EngineError: the engine cannot be started or reached, or went away while it ran.
    """
    lock = await asyncio.to_thread(hold_worker_lock, bees.computer.data_dir)
    try:
        if workspace_path is not None:
            from bees_cli.workspace.loader import load_workspace

            await asyncio.to_thread(load_workspace, workspace_path)
        return await _run_engine(bees, address, exit_when_idle, heartbeat_every,
                                 workspace_path=workspace_path)
    finally:
        lock.release()


async def _closing(engine: EngineGateway, record: AsyncRecord, queue: str) -> list[str]:
    """Return :func:`closing_runs` for ``queue``; none when the engine cannot list its runs
    (idleness then rests on the record alone, as before)."""
    try:
        open_runs = await engine.open_runs(queue)
    except EngineError:
        return []
    return await record.run(closing_runs, open_runs)


async def take_token_person_at_start(bees: Bees) -> None:
    """Signed in by ``BEES_TOKEN``, ask Bees Cloud whose token it is and make that person
    this computer's person (:func:`~bees_cli.machine.signin.take_token_person`), as ``bees
    login`` does, before the schedules are registered and the worker starts: the schedules
    that fire here are that person's (issue 23, point 8). ``bees.computer`` is updated.

    A cloud that does not answer, or a ``machine.json`` that cannot be written, is said
    and the person stays as it was (the next ``bees run`` or ``bees doctor`` asks again).
    """
    import dataclasses

    from bees_cli.errors import BeesError
    from bees_cli.machine.signin import TOKEN_VARIABLE, take_token_person

    here = bees.computer
    if here.login is None or here.login.token_from != TOKEN_VARIABLE:
        return
    client = bees.cloud(retries=1)
    assert client is not None  # signed in
    try:
        person = (await client.me()).person
        if await asyncio.to_thread(take_token_person, person, login=here.login,
                                   current=here.person, state=here.state):
            bees.computer = dataclasses.replace(here, person=person)
            bees.say(f"this computer's person is now {person} (BEES_TOKEN's)")
    except BeesError as error:
        bees.say(f"cannot learn whose {TOKEN_VARIABLE} this is: {error.message}; this "
                 f"computer's person stays {here.person or 'unset'}")
    finally:
        await client.aclose()


async def _run_engine(bees: Bees, address: str | None, exit_when_idle: bool,
                      heartbeat_every: float, *, workspace_path: Path | None = None) -> int:
    from bees_cli.engine.background import prepare_schedules, start_background
    from bees_cli.engine.client import EngineGateway, connect
    from bees_cli.engine.models import task_queue
    from bees_cli.engine.server import (
        EngineServer,
        ensure_engine,
        record_external,
        stop_engine,
    )
    from bees_cli.engine.worker import make_worker
    from bees_cli.usecases.approvals import deliver_queued

    await take_token_person_at_start(bees)  # before the schedules and the worker read it
    computer, record, say = bees.computer, bees.async_record, bees.say
    data = computer.data_dir
    await asyncio.to_thread(clean_up_after_a_kill, data, say)  # issue 12, point 8
    note_starting(data)  # a control command given now waits for the worker
    try:
        if address is None:
            server = await asyncio.to_thread(ensure_engine, data, say=say)
            say(f"engine {'started' if server.started else 'reused'} at {server.address}"
                + (" (left running by the last bees run)" if server.adopted else ""))
        else:
            server = EngineServer(address, None, started=False)
            record_external(data, address)
    except BaseException:
        forget_worker(data)
        raise
    try:
        try:
            client = await connect(server.address)
        except EngineError as error:
            if address is None:
                raise
            raise EngineError(error.message,
                              hint="check the address given with --temporal-address") from None
        engine = EngineGateway(client)
        bees.use_engine(engine)
        queue = task_queue(computer.machine_id)
        freed = await record.free_stale_slots()
        if freed:
            say(f"freed {freed} agent slot(s) of items that no longer run")

        async def start(item_id: str) -> int:
            return await start_pending(engine, record, computer, only=item_id)

        from bees_cli.agents.mcp_sessions import McpSessions

        bees.mcp_sessions = sessions = McpSessions()  # a stage's MCP servers (issue 25)

        async def act(call: ActionCallInput) -> ActionOutcome:
            # issue 13: a model agent's add-on tool goes through `bees action`'s gate, typed
            # and waiting on the run when held (issue 24, point 1)
            return await call_action(bees, call)

        async def delegate(arguments: dict[str, Any], env: dict[str, str]) -> str:
            # issue 14: a model agent's delegate tool goes through bees delegate's use case
            from bees_cli.usecases.delegate import delegate_tool_call

            return await delegate_tool_call(bees, arguments, env)

        worker = make_worker(client, queue, record.sync, computer=computer, start=start,
                             heartbeat_every=heartbeat_every, act=act, delegate=delegate,
                             mcp_sessions=sessions)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        # schedules first: a fire the engine delivers at start must find the removed
        # schedules gone and the missed times noted (DESIGN.md, Schedules)
        early: list[str] = []  # said after the worker's line, as before
        schedules = await prepare_schedules(client, queue, workspace_path, early.append,
                                            computer=computer)
        worker_task = asyncio.create_task(worker.run())
        # -- issue 12, point 7: what the record or the engine lost is rebuilt or marked --
        from bees_cli.usecases.recover import recover_state

        await recover_state(bees, engine, queue)
        # -- end of issue 12, point 7 --
        from bees_cli.usecases.released import finish_released

        # a relinquish Bees Cloud took while bees run was down: asked beside the work, so a
        # cloud that is down does not hold up the start
        released = asyncio.create_task(finish_released(bees))
        note_worker(data, server.address, queue)
        say(f"worker on task queue {queue}")
        background = await start_background(say, computer=computer, schedules=schedules,
                                            news=early)
        gone: str | None = None
        told: str | None = None
        checked = idle_since = loop.time()
        replaced = record.replaced
        while not stop.is_set():
            if loop.time() - checked >= ENGINE_CHECK_EVERY:
                checked = loop.time()
                gone = await asyncio.to_thread(engine_gone, server)
                if gone is not None:
                    break
            if record.replaced != replaced:  # the record was moved aside while running
                replaced = record.replaced
                say(f"the local record {record.path} was moved aside or deleted; "
                    "rebuilding it from the engine")
                await recover_state(bees, engine, queue)
            await start_pending(engine, record, computer)
            await deliver_queued(bees)
            if worker_task.done():
                break
            if exit_when_idle and released.done() and await record.run(is_idle):
                closing = await _closing(engine, record, queue)
                if not closing or loop.time() - idle_since >= CLOSING_WAIT:
                    if closing:
                        say(f"{len(closing)} run(s) still closing in the engine; the next "
                            "`bees run` finishes them")
                    say(await record.run(idle_line))
                    break
            else:
                idle_since = loop.time()
            if exit_when_idle:
                waits = await record.run(claim_wait_line)
                if waits is not None and waits != told:
                    say(waits)
                told = waits
            try:
                await asyncio.wait_for(stop.wait(), IDLE_POLL)
            except TimeoutError:
                pass
        await background.stop()
        if not released.done():
            released.cancel()
        for outcome in await asyncio.gather(released, return_exceptions=True):
            if isinstance(outcome, BeesError):
                say(f"relinquishes Bees Cloud took while bees run was down: not checked: "
                    f"{outcome.message}")
            elif isinstance(outcome, Exception):
                raise outcome
        if gone is not None:
            # the server is gone: a graceful shutdown would wait on it forever
            worker_task.cancel()
            await sessions.close_all()
            raise EngineError(gone, hint=f"start it again with `bees run`; see "
                              f"{computer.engine_log}")
        if not worker_task.done():
            await worker.shutdown()
        await worker_task
        await sessions.close_all()  # none left behind (issue 25, point 3)
        interrupted = await record.run(mark_interrupted)
        if interrupted:
            say(f"{interrupted} running item(s) wait for the next `bees run`")
        await background.final_sync(say)
        if stop.is_set():
            say("stopped")
    finally:
        forget_worker(data)
        await asyncio.to_thread(stop_engine, data, server)
    return 0
