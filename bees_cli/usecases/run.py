"""``bees run``: this computer's engine and worker, the start of pending items, idleness."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import BeesError, CloudError, EngineError
from bees_cli.usecases.idle import CLOSING_WAIT, claim_wait_line, idle_line, mark_interrupted
from bees_cli.usecases.idle import closing_runs as closing_runs
from bees_cli.usecases.idle import is_idle as is_idle
from bees_cli.usecases.liveness import clean_up_after_a_kill as clean_up_after_a_kill
from bees_cli.usecases.liveness import engine_gone as engine_gone
from bees_cli.usecases.liveness import forget_worker as forget_worker
from bees_cli.usecases.liveness import hold_worker_lock as hold_worker_lock
from bees_cli.usecases.liveness import note_starting
from bees_cli.usecases.liveness import note_worker as note_worker
from bees_cli.usecases.liveness import running_worker as running_worker
from bees_cli.usecases.liveness import worker_file as worker_file
from bees_cli.usecases.models import ActionOutcome

if TYPE_CHECKING:
    from bees_cli.agents.action_call import ActionCallInput
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.engine.background import Background
    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.server import EngineServer
    from bees_cli.machine.computer import Computer
    from bees_cli.record.aio import AsyncRecord
    from bees_cli.usecases.bees import Bees
    from bees_cli.usecases.runners import RunnerMode

IDLE_POLL = 0.25
"""Seconds between looks at the local record while ``bees run`` waits (idle, pending items)."""

ENGINE_CHECK_EVERY = 2.0
"""Seconds between checks that the engine ``bees run`` uses is still there."""

async def start_pending(engine: EngineGateway, record: AsyncRecord, computer: Computer, *,
                        only: str | None = None,
                        client: AsyncCloudClient | None = None) -> int:
    """Start the run of every ``pending`` item of the local record (or only item ``only``).

    Each is claimed in Bees Cloud first (:func:`bees_cli.schedules.owners.ready_to_start`):
    one whose claim cannot be made yet waits, one owned elsewhere never starts.

    Args:
        engine: the connected engine gateway.
        record: this computer's local record.
        computer: this computer (its machine id names the task queue; its sign-in claims).
        only: start only this item.
        client: an open cloud client to claim through (``bees run`` keeps one for the
            worker's life); else, signed in, one is made for this call and closed after it
            (never one per item: building one loads the certificate bundle, issue 29
            point 4).

    Returns:
        How many runs this call started.
    """
    from bees_cli.cloud.client import cloud_for
    from bees_cli.engine.models import ItemInput, task_queue
    from bees_cli.schedules.owners import ready_to_start, startable

    queue = task_queue(computer.machine_id)
    rows = [row for row in await record.run(startable) if only is None or row.id == only]
    own = cloud_for(computer, retries=2) if client is None and rows else None
    started = 0
    try:
        for row in rows:
            if not await ready_to_start(record.sync, row, computer=computer,
                                        client=client or own):
                continue
            if (await record.item(row.id)).status != "pending":
                continue  # cancelled (or started elsewhere) while its claim was asked
            item = ItemInput.model_validate_json(row.input)
            if await engine.start(item, queue):
                started += 1
            await record.set_state(row.id, status="starting", stage=row.stage,
                                   only_if=frozenset({"pending"}))
    finally:
        if own is not None:
            await own.aclose()
    return started


async def _run_bees(bees: Bees, *, workspace_path: Path | None, address: str | None,
                     exit_when_idle: bool, heartbeat_every: float = 2.0,
                     runner_pool: str | None = None, runner_every: float | None = None,
                     runner_slots: int = 1) -> int:
    """Run this computer's engine until SIGINT/SIGTERM (or until idle): ``bees run``.

    Starts (or reuses) the embedded dev server, or uses the server at ``address``; runs the
    worker on ``bees-<machine_id>``; starts pending items, now and whenever new ones appear;
    stops the server it started on the way out.

    With ``runner_pool`` this computer is a runner of that pool (DESIGN.md, Runners): its
    token must be a runner's of the pool, and beside its work it asks Bees Cloud for the
    pool's offers every ``runner_every`` seconds (default
    :data:`~bees_cli.usecases.runners.RUNNER_POLL_EVERY`) and takes those it can run
    (:func:`~bees_cli.usecases.runners.runner_loop`), at most ``runner_slots`` under way.

    Returns:
        The exit code: 0.

    Raises:
        UserError: ``runner_pool`` is given and the token is not a runner's of that pool.
        Refused: another ``bees run`` runs on this computer (:func:`hold_worker_lock`).
        WorkspaceInvalid: ``workspace_path`` is given and does not load.
        EngineError: the engine cannot be started or reached, or went away while it ran.
    """
    runner = None
    if runner_pool is not None:
        from bees_cli.usecases.runners import RUNNER_POLL_EVERY, RunnerMode, check_runner

        name = await asyncio.to_thread(check_runner, bees, runner_pool)
        runner = RunnerMode(runner_pool, name, runner_every or RUNNER_POLL_EVERY, runner_slots)
    lock = await asyncio.to_thread(hold_worker_lock, bees.computer.data_dir)
    try:
        if workspace_path is not None:
            from bees_cli.workspace.loader import load_workspace

            await asyncio.to_thread(load_workspace, workspace_path)
        return await _run_engine(bees, address, exit_when_idle, heartbeat_every,
                                 workspace_path=workspace_path, runner=runner)
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
                      heartbeat_every: float, *, workspace_path: Path | None = None,
                      runner: RunnerMode | None = None) -> int:
    from bees_cli.engine.server import stop_engine

    server = await _start_engine(bees, address)
    data = bees.computer.data_dir
    claims = bees.cloud(retries=2)  # the owner claims' one client for the worker's life
    try:
        await _serve(bees, server, address, exit_when_idle, heartbeat_every, workspace_path,
                     runner, claims)
    finally:
        forget_worker(data)
        await asyncio.to_thread(stop_engine, data, server)
        if claims is not None:
            await claims.aclose()
    return 0


async def _start_engine(bees: Bees, address: str | None) -> EngineServer:
    """Learn the token's person, clean up after a killed ``bees run``, then start (or reuse)
    the embedded engine, or note the one at ``address``; return it."""
    from bees_cli.engine.server import EngineServer, ensure_engine, record_external

    await take_token_person_at_start(bees)  # before the schedules and the worker read it
    data, say = bees.computer.data_dir, bees.say
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
    return server


async def _serve(bees: Bees, server: EngineServer, address: str | None, exit_when_idle: bool,
                 heartbeat_every: float, workspace_path: Path | None,
                 runner: RunnerMode | None = None,
                 claims: AsyncCloudClient | None = None) -> None:
    """Connect to ``server``, run the worker and the side tasks until stopped (or idle),
    then shut them down (:func:`_shut_down`). Items start claimed through ``claims`` (the
    worker's one cloud client; None: not signed in)."""
    from bees_cli.engine.background import prepare_schedules, start_background
    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.models import task_queue
    from bees_cli.usecases.recover import recover_state
    from bees_cli.usecases.released import finish_released

    computer, record, say = bees.computer, bees.async_record, bees.say
    client = await _connect(server, address)
    engine = EngineGateway(client)
    bees.use_engine(engine)
    queue = task_queue(computer.machine_id)
    freed = await record.free_stale_slots()
    if freed:
        say(f"freed {freed} agent slot(s) of items that no longer run")
    worker = _make_worker(bees, engine, client, queue, heartbeat_every, claims)
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
    # issue 12, point 7: what the record or the engine lost is rebuilt or marked
    await recover_state(bees, engine, queue)
    # a relinquish Bees Cloud took while bees run was down: asked beside the work, so a
    # cloud that is down does not hold up the start
    released = asyncio.create_task(finish_released(bees))
    note_worker(computer.data_dir, server.address, queue)
    say(f"worker on task queue {queue}")
    retired: list[CloudError] = []

    def fenced(error: CloudError) -> None:
        # a runner retired while alive (DESIGN.md, Runners: fenced first): it stops at once,
        # its running stages cancelled (their programs killed) and nothing more started
        if not retired:
            retired.append(error)
            say(f"{error.message}: stopping its running stages")
        stop.set()

    background = await start_background(
        say, computer=computer, schedules=schedules, news=early,
        on_retired=fenced if runner is not None else None)
    from bees_cli.usecases.owner_check import check_file, serve_owner_check

    check_file(computer).unlink(missing_ok=True)  # a killed runner's, if any
    offers = owner_check = None
    if runner is not None:  # a runner asks for its pool's offers beside its work
        from bees_cli.usecases.runners import runner_loop

        # before a gated action runs here, Bees Cloud is asked whether we still own its item
        owner_check = await serve_owner_check(computer, fenced)
        offers = asyncio.create_task(runner_loop(
            bees, runner.pool, runner.name, workspace_path=workspace_path, stop=stop,
            every=runner.every, slots=runner.slots, on_retired=fenced))
    gone = await _watch(bees, engine, server, queue, worker_task, released, stop,
                        exit_when_idle, claims)
    if offers is not None:
        offers.cancel()
        await asyncio.gather(offers, return_exceptions=True)
    try:
        await _shut_down(bees, worker.shutdown, worker_task, released, background, gone, stop,
                         final_sync=not retired)
    finally:
        if owner_check is not None:
            await owner_check.stop()
    if retired:
        raise retired[0]


async def _connect(server: EngineServer, address: str | None) -> Any:
    """Return a Temporal client of the engine ``server``.

    Raises:
        EngineError: it does not answer (with a hint about ``--temporal-address`` when the
            person gave the address).
    """
    from bees_cli.engine.client import connect

    try:
        return await connect(server.address)
    except EngineError as error:
        if address is None:
            raise
        raise EngineError(error.message,
                          hint="check the address given with --temporal-address") from None


def _make_worker(bees: Bees, engine: EngineGateway, client: Any, queue: str,
                 heartbeat_every: float, claims: AsyncCloudClient | None) -> Any:
    """Return the worker of ``queue``: it starts items claimed here (through ``claims``),
    and a model agent's add-on tools and delegate tool go through the use cases (issues
    13, 14)."""
    from bees_cli.agents.mcp_sessions import McpSessions
    from bees_cli.engine.worker import make_worker

    computer, record = bees.computer, bees.async_record
    bees.mcp_sessions = sessions = McpSessions()  # a stage's MCP servers (issue 25)

    async def start(item_id: str) -> int:
        return await start_pending(engine, record, computer, only=item_id, client=claims)

    async def act(call: ActionCallInput) -> ActionOutcome:
        # issue 13: a model agent's add-on tool goes through `bees action`'s gate, typed
        # and waiting on the run when held (issue 24, point 1)
        return await bees.call_action(call)

    async def delegate(arguments: dict[str, Any], env: dict[str, str]) -> str:
        # issue 14: a model agent's delegate tool goes through bees delegate's use case
        from bees_cli.usecases.delegate import delegate_tool_call

        return await delegate_tool_call(bees, arguments, env)

    return make_worker(client, queue, record.sync, computer=computer, start=start,
                       heartbeat_every=heartbeat_every, act=act, delegate=delegate,
                       mcp_sessions=sessions)


async def _watch(bees: Bees, engine: EngineGateway, server: EngineServer, queue: str,
                 worker_task: asyncio.Task[None], released: asyncio.Task[Any],
                 stop: asyncio.Event, exit_when_idle: bool,
                 claims: AsyncCloudClient | None = None) -> str | None:
    """While ``bees run`` runs: start pending items (claimed through ``claims``), deliver
    queued decisions, rebuild a record moved aside, and watch the engine; return why the
    engine is gone, or None once stopped, idle (with ``exit_when_idle``) or the worker
    ended."""
    from bees_cli.usecases.approvals import deliver_queued
    from bees_cli.usecases.recover import recover_state

    computer, record, say = bees.computer, bees.async_record, bees.say
    loop = asyncio.get_running_loop()
    told: str | None = None
    checked = idle_since = loop.time()
    replaced = record.replaced
    while not stop.is_set():
        if loop.time() - checked >= ENGINE_CHECK_EVERY:
            checked = loop.time()
            gone = await asyncio.to_thread(engine_gone, server)
            if gone is not None:
                return gone
        if record.replaced != replaced:  # the record was moved aside while running
            replaced = record.replaced
            say(f"the local record {record.path} was moved aside or deleted; "
                "rebuilding it from the engine")
            await recover_state(bees, engine, queue)
        await start_pending(engine, record, computer, client=claims)
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
    return None


async def _shut_down(bees: Bees, stop_worker: Callable[[], Awaitable[None]],
                     worker_task: asyncio.Task[None], released: asyncio.Task[Any],
                     background: Background, gone: str | None, stop: asyncio.Event, *,
                     final_sync: bool = True) -> None:
    """Stop the side tasks and the worker, mark the items whose stage was cut off, and
    sync the shared record a last time (not when ``final_sync`` is False: a retired
    runner's sync is refused).

    Raises:
        EngineError: the engine went away (``gone`` says why); the worker is cancelled.
    """
    say = bees.say
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
        await _close_sessions(bees)
        await background.close()
        raise EngineError(gone, hint=f"start it again with `bees run`; see "
                          f"{bees.computer.engine_log}")
    if not worker_task.done():
        await stop_worker()
    await worker_task
    await _close_sessions(bees)  # none left behind (issue 25, point 3)
    interrupted = await bees.async_record.run(mark_interrupted)
    if interrupted:
        say(f"{interrupted} running item(s) wait for the next `bees run`")
    if final_sync:
        await background.final_sync(say)
    else:
        await background.close()
    if stop.is_set():
        say("stopped")


async def _close_sessions(bees: Bees) -> None:
    """Stop the MCP servers the run's stages still hold (issue 25, point 3)."""
    if bees.mcp_sessions is not None:
        await bees.mcp_sessions.close_all()
