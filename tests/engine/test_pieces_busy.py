"""A piece whose agent is busy waits and re-checks every 15 s like a stage, and fails after
10 minutes (time-skipping server); while it waits, `bees status`, `bees item show` and the
shared record's run summary show it, and cancelling the item stops it (dev server)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.agents.pieces import ask_digest, piece_folder, piece_workflow_id
from bees_cli.engine.models import task_queue
from bees_cli.engine.piece_models import (
    PIECE_SLOT_ACTIVITY,
    PIECE_WORKFLOW,
    PieceInput,
    PieceOutput,
)
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.record.local import LocalRecord
from bees_cli.record.pieces import Piece, PieceStatus
from bees_cli.record.sync import SharedRecord
from bees_cli.record.views import piece_tree
from bees_cli.usecases.items import create_item, status_rows
from tests.conftest import BeesRunner
from tests.engine.conftest import Space, retried_every, scheduled, until
from tests.engine.test_pieces import DRAFT, piece_agent
from tests.engine.test_rules import cancel_item, start, worker  # noqa: F401 - the fixture
from tests.support import wait

BUSY = "waiting for agent alpha: 1 of 1 busy (items 01OTHER)"


async def _piece_waits(record: LocalRecord, item_id: str) -> Piece:
    def waiting() -> Piece | None:
        pieces = record.pieces(item_id)
        return pieces[0] if pieces and pieces[0].reason == BUSY else None

    return await wait.until(waiting, lambda: f"the piece did not wait: {record.pieces(item_id)}")


def _busy_alpha(space: Space, record: LocalRecord) -> None:
    piece_agent(space, "alpha")
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n"
                + (space.root / "agents/alpha.yaml").read_text())
    # another item holds alpha's only slot on this computer
    assert record.acquire_slot(agent="alpha", item_id="01OTHER", stage="Work", cap=1)[0]


def _piece_of(record: LocalRecord, item_id: str) -> PieceInput:
    """Hand out piece r1-a1-p1 of the item's Draft to alpha, as ``bees.delegate`` does."""
    row = record.item(item_id)
    name, data = "r1-a1-p1", {"week": 2}
    start = PieceInput(
        item_id=item_id, title=row.title, run_folder=row.run_folder,
        snapshot_digest=json.loads(row.input).get("snapshot_digest"), stage="Draft", seq=1,
        piece=name, chain=["writer"], named="alpha", task="figures", input=data,
        ask_digest=ask_digest("alpha", "figures", data),
        workflow_id=piece_workflow_id(item_id, "Draft", name),
        folder=str(piece_folder(row.run_folder, "Draft", name)))
    record.put_piece(Piece(**start.model_dump(include=set(Piece.model_fields)),
                           restart_stage="Draft", restart_piece=name))
    return start


async def _attempts(env: WorkflowEnvironment, workflow_id: str) -> list[int]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    waits = scheduled(history, PIECE_SLOT_ACTIVITY)
    assert [retried_every(e) for e in waits] == [(timedelta(seconds=15), 1.0, 0)]
    return [e.activity_task_started_event_attributes.attempt for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
            and e.activity_task_started_event_attributes.scheduled_event_id
            == waits[0].event_id]


async def test_a_busy_pieces_agent_is_rechecked_every_15_s_then_it_runs(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    piece_agent(space, "writer")
    _busy_alpha(space, record)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    piece = _piece_of(record, item.id)
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        handle = await skip_env.client.start_workflow(
            PIECE_WORKFLOW, piece, id=piece.workflow_id, task_queue=queue,
            result_type=PieceOutput)
        await _piece_waits(record, item.id)
        await skip_env.sleep(timedelta(minutes=2, seconds=5))
        assert record.pieces(item.id)[0].status == PieceStatus.WAITING
        record.release_slot("01OTHER")
        await skip_env.sleep(timedelta(seconds=15))
        out = await handle.result()
        # attempt 1 at once, then every 15 s: the 10th, 2 min 15 s later, found the slot free
        assert await _attempts(skip_env, piece.workflow_id) == [10]
    assert (out.status, out.agent, out.exit_code) == ("finished", "alpha", 0)
    done = record.pieces(item.id)[0]
    assert (done.status, done.agent, done.pick_reason) == (
        PieceStatus.FINISHED, "alpha", "named by the caller")
    assert done.result is not None and done.result.files == ["alpha.md"]
    assert ["; ".join(r.words() for r in e.typed().reasons)  # type: ignore[attr-defined]
            for e in record.events(item.id) if e.kind == "piece_waiting"] == [BUSY]
    assert record.slots() == []


async def test_a_piece_waiting_10_minutes_for_a_busy_agent_fails_with_the_reason(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    piece_agent(space, "writer")
    _busy_alpha(space, record)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    piece = _piece_of(record, item.id)
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        handle = await skip_env.client.start_workflow(
            PIECE_WORKFLOW, piece, id=piece.workflow_id, task_queue=queue,
            result_type=PieceOutput)
        await _piece_waits(record, item.id)
        await skip_env.sleep(timedelta(minutes=9, seconds=50))
        assert record.pieces(item.id)[0].status == PieceStatus.WAITING
        await skip_env.sleep(timedelta(seconds=20))
        out = await handle.result()
        assert await _attempts(skip_env, piece.workflow_id) == [41]
    assert (out.status, out.reason) == ("failed", BUSY + " for 10 minutes")
    failed = record.pieces(item.id)[0]
    assert (failed.status, failed.reason) == (PieceStatus.FAILED, BUSY + " for 10 minutes")
    assert not Path(failed.folder).exists()  # its agent never ran
    assert [(s["item_id"], s["granted"]) for s in record.slots()] == [("01OTHER", True)]


async def test_a_waiting_piece_is_seen_and_stops_with_its_cancelled_item(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker, bees: BeesRunner) -> None:  # noqa: F811
    piece_agent(space, "writer", DELEGATE=[["alpha", "figures", {}]])
    _busy_alpha(space, record)
    space.write("processes/p.yaml", DRAFT.format(approval="none"))
    item_id = await start(dev_env, record, space, "p")
    piece = await _piece_waits(record, item_id)
    assert (piece.status, piece.agent, piece.pick_reason) == (
        PieceStatus.WAITING, "alpha", "named by the caller")
    # bees status counts the live piece, item show draws it, the run summary names it
    row = next(r for r in status_rows(record, load_identity().machine_id) if r["id"] == item_id)
    assert (row["status"], row["pieces"]) == ("running", 1)
    shown = await asyncio.to_thread(bees, "status", "--mine")
    assert [ln.split("  ")[0] for ln in shown.stdout.splitlines()
            if ln.startswith(item_id)] == [item_id]
    assert " running (1 piece) " in next(ln for ln in shown.stdout.splitlines()
                                         if ln.startswith(item_id))
    assert piece_tree(record.pieces(item_id)) == [
        "  Draft round 1", f"    r1-a1-p1  alpha (named by the caller)  waiting: {BUSY}  -"]
    summary = next(f["summary"] for i, _, f in SharedRecord(record.path).outbox(
        Computer.load()) if i == item_id)
    assert summary == "Draft: running (writer); pieces: alpha r1-a1-p1 waiting"
    assert (await asyncio.to_thread(cancel_item, item_id))["requested"] is True
    await until(record, item_id, lambda r: r.status == "cancelled")
    await wait.until(lambda: record.pieces(item_id)[0].status == PieceStatus.STOPPED,
                     "the piece did not stop with its run")
    stopped = record.pieces(item_id)[0]
    assert (stopped.status, stopped.reason) == (PieceStatus.STOPPED, "stopped with its run")
    assert record.live_pieces() == {}
    assert [(s["item_id"], s["granted"]) for s in record.slots()] == [("01OTHER", True)]
