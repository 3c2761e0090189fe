"""What the engine commands do: ``bees run``, ``bees item create`` (and ``--wait``), one call each.

The CLI layer parses and renders; these functions do the work and raise
:mod:`bees_cli.errors` exceptions. Temporal is imported inside the functions that need it,
so ``bees --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bees_cli.errors import EngineError, UserError
from bees_cli.record.local import ACTIVE_STATUSES, END_STATUSES, ItemRow, LocalRecord

if TYPE_CHECKING:
    from bees_cli.engine.server import EngineServer
    from bees_cli.machine.computer import Computer

Say = Callable[[str], None]

IDLE_POLL = 0.25
"""Seconds between looks at the local record while ``bees run`` waits (idle, pending items)."""


def _quiet(_: str) -> None:
    return None


@dataclass(frozen=True)
class CreatedItem:
    """A new work item: its ``id``, ``run_folder``, and ``started`` (False: recorded as
    pending until ``bees run`` starts)."""

    id: str
    process: str
    title: str
    run_folder: Path
    started: bool


def run_folder_root(workspace: object) -> Path:
    """Return the folder that holds run folders: the directory of the workspace's
    ``run_folder`` folder when it names one, else this computer's default runs folder.

    Raises:
        UserError: the named folder is not linked on this computer.
    """
    from bees_cli.machine.links import resolve_folder
    from bees_cli.machine.paths import default_runs_dir

    config = workspace.config  # type: ignore[attr-defined]
    if not config.run_folder:
        return default_runs_dir()
    name = config.run_folder
    link = resolve_folder(name, workspace.folders.get(name), workspace.root)  # type: ignore[attr-defined]
    if not link.linked or link.path is None:
        raise UserError(f"run folder {name}: {link.reason}", hint=f"bees link {name} PATH")
    return link.path


def create_item(workspace_path: Path | None, process: str, *, title: str | None,
                agents: list[str], folders: list[str], record: LocalRecord,
                say: Say = _quiet) -> CreatedItem:
    """Create a work item of ``process``: snapshot, run folder, local record, and its run.

    The run starts now when this computer's engine answers; otherwise the item stays
    ``pending`` and ``bees run`` starts it.

    Raises:
        UserError: no workspace, or the run folder is not linked.
        WorkspaceInvalid: the workspace does not load.
        NotFound: the process, an agent or a folder is not declared.
        EngineError: the engine answers but refused the start.
    """
    from ulid import ULID

    from bees_cli.agents.snapshot import make_snapshot
    from bees_cli.engine.models import ItemInput
    from bees_cli.workspace.loader import load_workspace

    workspace = load_workspace(workspace_path)
    snapshot = make_snapshot(workspace, process, item_agents=agents, item_folders=folders)
    item_id = str(ULID())
    item_title = title or snapshot.process.title or process
    folder = run_folder_root(workspace) / item_id
    from bees_cli.engine.snapshot_store import engine_view, keep_snapshot

    item = ItemInput(item_id=item_id, title=item_title, run_folder=str(folder),
                     snapshot=engine_view(snapshot),
                     snapshot_digest=keep_snapshot(record, snapshot))
    from bees_cli.engine.owners import claim_at_create

    folder.mkdir(parents=True, exist_ok=False)
    try:
        record.add_item(id=item_id, process=process, title=item_title,
                        workspace=str(workspace.root), run_folder=str(folder),
                        input=item.model_dump_json(), stage=snapshot.process.stages[0].name)
        claim = claim_at_create(record, item_id)
    except BaseException:
        # a half-made item is no item: no row, no run folder
        _undo_create(record, item_id, folder)
        raise
    if claim.reason:
        say(f"{item_id}: waiting: {claim.reason}")
    started = _start_if_engine_up(record, item_id, say)
    return CreatedItem(item_id, process, item_title, folder, started)


def _undo_create(record: LocalRecord, item_id: str, folder: Path) -> None:
    import contextlib
    import shutil

    with contextlib.suppress(Exception):
        record.remove_item(item_id)
    shutil.rmtree(folder, ignore_errors=True)


def _start_if_engine_up(record: LocalRecord, item_id: str, say: Say) -> bool:
    from bees_cli.engine.server import running_engine
    from bees_cli.machine.paths import data_dir

    engine = running_engine(data_dir())
    if engine is None:
        say("the engine is not running: the item starts when `bees run` starts")
        return False

    async def start() -> int:
        from bees_cli.engine.client import connect

        client = await connect(engine.address, timeout=5)
        return await start_pending(client, record, only=item_id)

    asyncio.run(start())
    return True


async def start_pending(client: object, record: LocalRecord, *, only: str | None = None,
                        computer: Computer | None = None) -> int:
    """Start the run of every ``pending`` item of the local record (or only item ``only``).

    Each is claimed in Bees Cloud first (:func:`bees_cli.engine.owners.ready_to_start`):
    one whose claim cannot be made yet waits, one owned elsewhere never starts.
    ``computer`` is this computer (default: the one ``BEES_HOME`` describes).

    Returns:
        How many runs this call started.
    """
    from bees_cli.engine.client import start_item
    from bees_cli.engine.models import ItemInput, task_queue
    from bees_cli.engine.owners import ready_to_start, startable
    from bees_cli.machine.identity import load_identity

    queue = task_queue(computer.machine_id if computer else load_identity().machine_id)
    started = 0
    for row in startable(record):
        if only is not None and row.id != only:
            continue
        if not await ready_to_start(record, row, computer=computer):
            continue
        item = ItemInput.model_validate_json(row.input)
        if await start_item(client, item, queue):  # type: ignore[arg-type]
            started += 1
        record.set_state(row.id, status="starting", stage=row.stage,
                         only_if=frozenset({"pending"}))
    return started


def is_idle(record: LocalRecord) -> bool:
    """Return True when no item of this computer is pending, starting or running, and no
    decision waits to be delivered.

    An item waiting for approval (or for a person) is idle: nothing happens to it until a
    person acts, so ``bees run --exit-when-idle`` returns; ``bees approve`` then queues the
    decision and the next ``bees run`` delivers it. An item whose stage was interrupted when
    ``bees run`` stopped (:func:`mark_interrupted`) is not idle: its stage runs again.
    """
    if record.queued_controls():
        return False
    return not any(row.status in ACTIVE_STATUSES
                   or (row.status == "waiting" and row.reason == NOT_RUNNING)
                   for row in record.items())


def run_engine(*, workspace_path: Path | None, address: str | None, exit_when_idle: bool,
               record: LocalRecord, say: Say = _quiet, heartbeat_every: float = 2.0) -> int:
    """Run this computer's engine until SIGINT/SIGTERM (or until idle): ``bees run``.

    Starts (or reuses) the embedded dev server, or uses the server at ``address``; runs the
    worker on ``bees-<machine_id>``; starts pending items, now and whenever new ones appear;
    stops the server it started on the way out.

    Returns:
        The exit code: 0.

    Raises:
        Refused: another ``bees run`` runs on this computer (see
            :func:`~bees_cli.engine.control.hold_worker_lock`).
        WorkspaceInvalid: ``workspace_path`` is given and does not load.
        EngineError: the engine cannot be started or reached, or went away while it ran.
    """
    from bees_cli.engine.control import hold_worker_lock
    from bees_cli.machine.paths import data_dir

    lock = hold_worker_lock(data_dir())
    try:
        if workspace_path is not None:
            from bees_cli.workspace.loader import load_workspace

            load_workspace(workspace_path)
        return asyncio.run(_run_engine(address, exit_when_idle, record, say, heartbeat_every,
                                       workspace_path=workspace_path))
    finally:
        lock.close()


ENGINE_CHECK_EVERY = 2.0
"""Seconds between checks that the engine ``bees run`` uses is still there."""


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


async def _run_engine(address: str | None, exit_when_idle: bool, record: LocalRecord,
                      say: Say, heartbeat_every: float, *,
                      workspace_path: Path | None = None) -> int:
    from bees_cli.engine.client import connect
    from bees_cli.engine.control import deliver_queued, forget_worker, note_worker
    from bees_cli.engine.models import task_queue
    from bees_cli.engine.server import (
        EngineServer,
        ensure_engine,
        record_external,
        stop_engine,
    )
    from bees_cli.engine.worker import make_worker
    from bees_cli.machine.identity import load_identity
    from bees_cli.machine.paths import data_dir

    data = data_dir()
    if address is None:
        server = await asyncio.to_thread(ensure_engine, data, say=say)
        say(f"engine {'started' if server.started else 'reused'} at {server.address}")
    else:
        server = EngineServer(address, None, started=False)
        record_external(data, address)
    try:
        try:
            client = await connect(server.address)
        except EngineError as error:
            if address is None:
                raise
            raise EngineError(error.message,
                              hint="check the address given with --temporal-address") from None
        queue = task_queue(load_identity().machine_id)
        freed = await asyncio.to_thread(record.free_stale_slots)
        if freed:
            say(f"freed {freed} agent slot(s) of items that no longer run")
        worker = make_worker(client, queue, record, heartbeat_every=heartbeat_every)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        worker_task = asyncio.create_task(worker.run())
        note_worker(data, server.address, queue)
        say(f"worker on task queue {queue}")
        from bees_cli.engine.background import start_background

        background = await start_background(client, queue, workspace_path, say)
        gone: str | None = None
        checked = loop.time()
        while not stop.is_set():
            if loop.time() - checked >= ENGINE_CHECK_EVERY:
                checked = loop.time()
                gone = await asyncio.to_thread(engine_gone, server)
                if gone is not None:
                    break
            await start_pending(client, record)
            await deliver_queued(client, record, say)
            if worker_task.done():
                break
            if exit_when_idle and is_idle(record):
                say(idle_line(record))
                break
            try:
                await asyncio.wait_for(stop.wait(), IDLE_POLL)
            except TimeoutError:
                pass
        await background.stop()
        if gone is not None:
            # the server is gone: a graceful shutdown would wait on it forever
            worker_task.cancel()
            raise EngineError(gone, hint=f"start it again with `bees run`; see "
                              f"{data / 'temporal.log'}")
        if not worker_task.done():
            await worker.shutdown()
        await worker_task
        interrupted = await asyncio.to_thread(mark_interrupted, record)
        if interrupted:
            say(f"{interrupted} running item(s) wait for the next `bees run`")
        if stop.is_set():
            say("stopped")
    finally:
        forget_worker(data)
        await asyncio.to_thread(stop_engine, data, server)
    return 0


NOT_RUNNING = "the engine is not running (bees run)"
"""The reason of an item whose stage was running when ``bees run`` stopped."""

INTERRUPTED_STATUSES: frozenset[str] = frozenset({"starting", "running"})


def mark_interrupted(record: LocalRecord) -> int:
    """Say in the local record that the items running here wait for the next ``bees run``
    (``waiting: the engine is not running (bees run)``); return how many.

    Why: a stage interrupted by Ctrl-C would otherwise read ``running`` in ``bees status``
    while nothing runs it. The next ``bees run`` starts the stage again (a new attempt) and
    the history says the earlier attempt was interrupted.
    """
    rows = record.items(statuses=INTERRUPTED_STATUSES)
    for row in rows:
        record.set_state(row.id, status="waiting", stage=row.stage, reason=NOT_RUNNING,
                         agent=row.agent, only_if=INTERRUPTED_STATUSES)
    return len(rows)


def idle_line(record: LocalRecord) -> str:
    """Return what ``bees run --exit-when-idle`` says when it stops: ``nothing left to run
    here: 1 item waits for approval (bees approvals)``, naming what waits for a person."""
    rows = record.items()
    approval = sum(r.status == "waiting for approval" for r in rows)
    person = sum(r.status in ("waiting for a person", "failed") for r in rows)
    parts = []
    if approval:
        parts.append(f"{approval} {'item waits' if approval == 1 else 'items wait'} for "
                     "approval (bees approvals)")
    if person:
        parts.append(f"{person} {'item waits' if person == 1 else 'items wait'} for a person "
                     "(bees status)")
    return "nothing left to run here" + (": " + "; ".join(parts) if parts else "") + \
        "; stopping"


def describe(row: ItemRow) -> str:
    """Return one line for a stage move: ``ITEM Draft: running (writer)``."""
    agent = f" ({row.agent})" if row.agent and row.status == "running" else ""
    return f"{row.id} {row.stage}: {row.status_text}{agent}"


def wait_for_item(record: LocalRecord, item_id: str, *, say: Say = _quiet,
                  poll: float = 0.2, sleep: Callable[[float], None] | None = None,
                  timeout: float | None = None,
                  engine_up: Callable[[], bool] | None = None) -> int:
    """Block until item ``item_id`` ends or stops for a person, saying each move.

    Says once ``waiting for bees run to start (Ctrl-C to stop)`` when ``bees run`` is not
    up (``engine_up``, default: this computer's worker is running).

    Returns:
        0 when it is done, 1 when it failed or waits for a person.

    Raises:
        BeesError: ``timeout`` seconds passed first (exit 1, with the item's status).
    """
    import time

    from bees_cli.errors import BeesError

    if engine_up is None:
        from bees_cli.engine.control import running_worker

        def engine_up() -> bool:
            return running_worker() is not None

    pause = sleep or time.sleep
    deadline = None if timeout is None else time.monotonic() + timeout
    last = ""
    told = False
    while True:
        row = record.item(item_id)
        line = describe(row)
        if line != last:
            say(line)
            last = line
        if row.status in END_STATUSES:
            return 0 if row.status == "done" else 1
        if not told and not engine_up():
            say("waiting for bees run to start (Ctrl-C to stop)")
        told = True
        if deadline is not None and time.monotonic() >= deadline:
            raise BeesError(f"timed out after {timeout:g} s waiting for {row.id} "
                            f"(status: {row.status_text})",
                            hint=f"see bees item show {row.id}")
        pause(poll)


def status_rows() -> list[dict[str, Any]]:
    """Return every item of this computer for ``bees status``: the record row plus
    ``since_human`` (``"2m ago"``). Reads only the local record.

    An item this computer relinquished (``free``) that another computer has since changed
    in the shared record is left out, so ``bees status`` shows the team's newer row
    ("Draft, running on maya-desktop") instead of the stale ``free``.
    """
    from bees_cli.handover.store import taken_over
    from bees_cli.record.local import human_since, open_record

    rows = []
    record = open_record()
    moved = taken_over(record.path, [r for r in record.items() if r.status == "free"])
    for row in record.items():
        if row.id in moved:
            continue
        data: dict[str, Any] = row.to_json()
        data["since_human"] = human_since(row.since)
        rows.append(data)
    return rows


def item_details(item_id: str) -> dict[str, Any]:
    """Return one item for ``bees item show``: ``item`` (the row), ``history`` (events,
    oldest first), ``logs`` (each stage's stdout and stderr files), ``engine_log``,
    ``journal`` (its add-on action runs) and ``approvals`` (every request, any status).

    Raises:
        NotFound: no such item here.
    """
    from bees_cli.machine.paths import data_dir
    from bees_cli.record.local import human_since, open_record

    record = open_record()
    row = record.item(item_id)
    history = [event.to_json() for event in record.events(row.id)]
    logs: list[str] = []
    for event in history:
        for key in ("stdout", "stderr"):
            path = event.get(key)
            if isinstance(path, str) and path not in logs:
                logs.append(path)
    # every attempt's logs, also those of an attempt that never ended (interrupted)
    from bees_cli.agents.runner import logs_dir

    folder = logs_dir(row.run_folder)
    if folder.is_dir():
        found = sorted((f for f in folder.iterdir() if f.suffix in (".stdout", ".stderr")),
                       key=lambda f: (f.stat().st_mtime, f.name))
        logs += [str(f) for f in found if str(f) not in logs]
    return {"item": row.to_json(), "since_human": human_since(row.since), "history": history,
            "logs": logs, "engine_log": str(data_dir() / "temporal.log"),
            "journal": record.journal(row.id),
            "approvals": record.approvals(row.id, status=None)}
