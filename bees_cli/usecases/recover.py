"""Local state that is lost is rebuilt, not silently dropped (issue 12, point 7).

Two losses, both found by ``bees run`` when it starts (:func:`recover_state`):

- The local record gone or moved aside (its own error hint suggests that): every run of
  this computer's task queue that the record has no row for is asked where its item is
  (the ``bees.state`` query), and the row is rebuilt from the answer with its approval
  requests and the journal the run holds: ``recovered 3 work items from the engine``.
- The engine's database gone: an item the record shows under way whose run the engine does
  not have is marked ``lost: the engine's database was replaced`` at its stage.
  ``bees retry ITEM`` (:func:`retry_lost`) starts that stage again from the top with the run
  folder as it is; the local record's journal still answers an action that already ran, so
  nothing is sent twice.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from bees_cli.errors import BeesError
from bees_cli.record.events import Retried
from bees_cli.record.local import ItemRow, now_utc
from bees_cli.record.rebuild import RebuiltItem, mark_lost, restore_item
from bees_cli.record.states import NOT_STARTED_WAITS, RUN_STATUSES, Status
from bees_cli.usecases.models import PersonDone
from bees_cli.utc import format_utc, utc_now

if TYPE_CHECKING:
    from bees_cli.engine.client import EngineGateway
    from bees_cli.engine.models import RunView
    from bees_cli.engine.snapshot import EngineSnapshot
    from bees_cli.usecases.bees import Bees

RUN_STATES: dict[str, Status] = {
    "starting": Status.STARTING,
    "waiting": Status.WAITING,
    "running": Status.RUNNING,
    "failed": Status.FAILED,
    "waiting for a person": Status.WAITING_FOR_PERSON,
    "waiting for approval": Status.WAITING_FOR_APPROVAL,
    "done": Status.DONE,
    "cancelled": Status.CANCELLED,
    "relinquished": Status.FREE,
}
"""What a run says it does (``RunView.state``) → the item's status in the local record."""

WITH_AGENT: frozenset[Status] = frozenset({
    Status.RUNNING, Status.FAILED, Status.WAITING_FOR_PERSON, Status.WAITING_FOR_APPROVAL})
"""Statuses whose record row names the stage's agent (the run writes none with the others)."""


def under_way(row: ItemRow) -> bool:
    """Return True when the record shows item ``row`` with a run in the engine: started and
    not ended, failed or stopped (a ``waiting`` item only when its wait is not one of an item
    never started here)."""
    return row.status in RUN_STATUSES and row.wait not in NOT_STARTED_WAITS


async def recover_state(bees: Bees, engine: EngineGateway, task_queue: str) -> tuple[int, int]:
    """Mark the items whose runs the engine lost, then rebuild the rows the record lost
    (``bees run`` calls it once its worker runs: a closed run answers a query only through a
    worker). Says one line per lost item and how many rows it rebuilt.

    Returns:
        ``(lost, recovered)``: how many items were marked lost, how many rows rebuilt.

    An engine that cannot list its runs or say whether it has one is named and passed over:
    ``bees run`` goes on with the work.

    Raises:
        DiskError: the record cannot be written here.
    """
    lost = await find_lost(bees, engine)
    recovered = await rebuild_record(bees, engine, task_queue)
    if recovered:
        noun = "work item" if recovered == 1 else "work items"
        bees.say(f"recovered {recovered} {noun} from the engine")
    return lost, recovered


async def find_lost(bees: Bees, engine: EngineGateway) -> int:
    """Mark ``lost`` each item the record shows under way (:func:`under_way`) whose run the
    engine does not have; return how many."""
    record = bees.async_record
    rows = [row for row in await record.items() if under_way(row)]
    lost = 0
    for row in rows:
        try:
            if await engine.has_run(row.id):
                continue
        except BeesError as error:  # not known either way: nothing is marked
            bees.say(f"{row.id}: cannot tell whether the engine has its run: {error.message}")
            continue
        if await record.run(mark_lost, row):
            lost += 1
            bees.say(f"{row.id} {row.stage}: lost: the engine's database was replaced; "
                     f"`bees retry {row.id}` starts {_restart_of(row)} again from the top")
    return lost


async def rebuild_record(bees: Bees, engine: EngineGateway, task_queue: str) -> int:
    """Rebuild the row of each item whose run the engine has on ``task_queue`` and the
    record has not; return how many. A run that cannot answer is named and skipped."""
    record = bees.async_record
    known = {row.id for row in await record.items()}
    rebuilt = 0
    try:
        runs = await engine.item_runs(task_queue)
    except BeesError as error:  # an engine whose listing fails still runs the work
        bees.say(f"the local record is not checked against the engine: {error.message}")
        return 0
    for item_id in runs:
        if item_id in known:
            continue
        try:
            view = await engine.run_view(item_id)
        except BeesError as error:
            bees.say(f"{item_id}: not recovered: {error.message}")
            continue
        item = rebuilt_item(item_id, view)
        if item is not None and await record.run(restore_item, item):
            rebuilt += 1
    return rebuilt


def rebuilt_item(item_id: str, view: RunView) -> RebuiltItem | None:
    """Return the record row that run ``view`` of ``item_id`` tells, or None when the run
    has not read its input yet (nothing to tell)."""
    if view.item is None:
        return None
    item = view.item
    status = RUN_STATES.get(view.state, Status.WAITING)
    stage = view.stage or item.start_stage or _first_stage(item.snapshot)
    reason = view.reason
    if status is Status.FREE:
        stage = view.restart or stage
        reason = f"restarts at {stage}"
    return RebuiltItem(
        id=item_id, process=item.snapshot.process_name, title=item.title,
        workspace=item.snapshot.workspace_root, run_folder=item.run_folder,
        input=item.model_dump_json(), stage=stage, status=status, reason=reason,
        agent=view.agent if status in WITH_AGENT else None, created=created_at(item_id),
        approvals=[r.model_dump(mode="json") for r in view.requests],
        journal=[e.model_dump(mode="json") for e in view.journal])


def created_at(item_id: str) -> str:
    """Return when item ``item_id`` was created (its ULID's time, milliseconds), as
    :func:`~bees_cli.utc.format_utc` text; now when the id is not a ULID."""
    from ulid import ULID

    try:
        return format_utc(ULID.from_str(item_id).datetime)
    except ValueError:
        return format_utc(utc_now())


def restart_stage(snapshot: EngineSnapshot, stage: str | None) -> str:
    """Return the stage a lost item restarts at: ``stage`` itself, or for a review stage the
    stage that made the work under review (as a handover does: the review needs the agent
    that did the work, which only the lost run knew); the first stage when None."""
    if stage is None:
        return _first_stage(snapshot)
    view = snapshot.stage(stage)
    return view.reviews if view.kind == "review" and view.reviews else view.name


def _restart_of(row: ItemRow) -> str | None:
    """Return the stage ``bees retry`` restarts lost item ``row`` at (its stage when its
    input cannot tell)."""
    from pydantic import ValidationError

    from bees_cli.engine.models import ItemInput

    try:
        return restart_stage(ItemInput.model_validate_json(row.input).snapshot, row.stage)
    except (ValidationError, StopIteration):
        return row.stage


def _first_stage(snapshot: EngineSnapshot) -> str:
    return snapshot.process.stages[0].name


def _attempts(folder: Path) -> dict[str, int]:
    """``"STAGE:ROUND"`` → one after the highest attempt whose logs the run folder holds, so
    the new run's logs never overwrite them."""
    from bees_cli.agents.runner import logs_dir
    from bees_cli.handover.continue_ import next_attempts

    logs = logs_dir(folder)
    names = sorted(p.name for p in logs.iterdir()) if logs.is_dir() else []
    return next_attempts({"files": [{"path": f"logs/{name}"} for name in names]})


def _restart_input(bees: Bees, row: ItemRow) -> tuple[str, str]:
    """Return the stage a lost item restarts at and its next run's input (JSON): the same
    run folder, ``previous`` naming the earlier stages' folders in it, attempts after those
    whose logs it holds."""
    from bees_cli.engine.models import ItemInput
    from bees_cli.engine.snapshot_store import load_snapshot
    from bees_cli.handover.continue_ import previous_outputs

    item = ItemInput.model_validate_json(row.input)
    restart = restart_stage(item.snapshot, row.stage)
    folder = Path(row.run_folder)
    snapshot = load_snapshot(bees.record, row.id, item.snapshot_digest)
    again = item.model_copy(update={
        "start_stage": restart, "state": None,
        "previous": previous_outputs(folder, snapshot, restart),
        "attempts": _attempts(folder)})
    return restart, again.model_dump_json()


async def retry_lost(bees: Bees, row: ItemRow) -> PersonDone:
    """``bees retry`` of a ``lost`` item: start the stage it was at again from the top (a
    review stage: the stage under review), with the run folder as it is.

    The item becomes ``pending`` at that stage with its next run's input, and ``bees run``
    starts it (within a quarter second when it is up: it starts pending items as they
    appear). An action the lost run already ran is answered from the local record's
    journal, not run again.

    Raises:
        SnapshotMissing: the item's snapshot is not stored here any more.
    """
    record = bees.async_record
    restart, again = await asyncio.to_thread(_restart_input, bees, row)
    who, at = bees.who(), now_utc()
    await record.restart_item(row.id, input=again, run_folder=row.run_folder, stage=restart)
    await record.add_fact(row.id, Retried(stage=restart, who=who, asked_at=at),
                          key=f"retried:lost:{at}")
    if await asyncio.to_thread(bees.worker_address) is None:
        bees.say(f"the engine is not running: {row.id} starts at {restart} when `bees run` "
                 "starts")
    return PersonDone(item=row.id, stage=restart, who=who, at=at)
