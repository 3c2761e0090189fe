"""Lost local state on the dev server (issue 12, point 7): the record's rows rebuilt from each
run's ``bees.state`` answer, an item whose run the engine lost marked ``lost``, and a retry
that starts its stage again (a review: the stage under review) in a new run."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from ulid import ULID

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import LOST_TEXT, Status, WaitKind
from bees_cli.usecases import Bees
from bees_cli.usecases.items import create_item
from bees_cli.usecases.recover import recover_state
from bees_cli.usecases.run import start_pending
from bees_cli.utc import format_utc
from tests.engine.conftest import Space, until
from tests.engine.test_rules import (  # noqa: F401 - worker: the fixture
    ONE,
    WORK_REVIEW,
    start,
    worker,
)

COLUMNS = ("id", "process", "title", "workspace", "run_folder", "stage", "status", "reason",
           "agent", "wait")


def _rows(record: LocalRecord) -> dict[str, tuple[object, ...]]:
    return {r.id: tuple(getattr(r, c) for c in COLUMNS) for r in record.items()}


def _delete(record: LocalRecord) -> LocalRecord:
    """Delete the record file (as a person would, with its WAL files); return the new empty
    record Bees makes in its place."""
    for side in ("", "-wal", "-shm"):
        Path(f"{record.path}{side}").unlink(missing_ok=True)
    return LocalRecord(record.path)


async def test_each_run_tells_its_row_back_failed_stopped_and_done(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested," * 3})
    space.agent("broken", env={"FAIL": "1"})
    space.write("processes/p.yaml", WORK_REVIEW)
    space.write("processes/one.yaml", ONE.replace("[alpha]", "[broken]"))
    space.write("processes/quick.yaml", ONE)
    stopped = await start(dev_env, record, space, "p")
    failed = await start(dev_env, record, space, "one")
    done = await start(dev_env, record, space, "quick")
    await until(record, stopped, lambda r: r.status == Status.WAITING_FOR_PERSON)
    await until(record, failed, lambda r: r.status == Status.FAILED)
    await until(record, done, lambda r: r.status == Status.DONE)
    before = _rows(record)
    created = {r.id: r.created for r in record.items()}

    fresh = _delete(record)
    assert fresh.items() == []
    said: list[str] = []
    bees = Bees(Computer.load(), say=said.append)
    queue = task_queue(load_identity().machine_id)
    assert await recover_state(bees, EngineGateway(dev_env.client), queue) == (0, 3)
    assert said == ["recovered 3 work items from the engine"]
    assert _rows(fresh) == before
    assert before[failed][5:] == ("Work", Status.FAILED, "exit 3: something broke", "broken",
                                  WaitKind.PERSON)
    assert before[stopped][5:] == ("Review", Status.WAITING_FOR_PERSON,
                                   "Review asked for changes 3 times", "beta", WaitKind.PERSON)
    # the created time is the id's (a ULID: milliseconds, taken just before the row's)
    assert {r.id: r.created for r in fresh.items()} == {
        item_id: format_utc(ULID.from_str(item_id).datetime) for item_id in created}
    assert all(fresh.item(i).created <= at for i, at in created.items())
    assert [e.kind for e in fresh.events(failed)] == ["created", "recovered"]
    # a second pass finds every row there: nothing is rebuilt twice
    assert await recover_state(bees, EngineGateway(dev_env.client), queue) == (0, 0)
    await dev_env.client.get_workflow_handle(failed).terminate()
    await dev_env.client.get_workflow_handle(stopped).terminate()


async def test_a_run_the_engine_lost_is_marked_and_retry_restarts_the_reviewed_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        worker: Worker) -> None:  # noqa: F811
    space.agent("alpha")
    space.agent("beta")
    space.write("processes/p.yaml", WORK_REVIEW)
    computer = Computer.load()
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=computer)
    # the record says the review runs, with a request waiting; the engine never saw the run
    record.set_state(item.id, status=Status.RUNNING, stage="Review", agent="beta")
    record.put_approval(item.id, {"id": 1, "item_id": item.id, "stage": "Review", "round": 1,
                                  "action": None, "kind": "finish", "summary": "s",
                                  "status": "waiting", "asked_at": "2025-01-06T09:00:00Z"})
    assert record.acquire_slot(agent="beta", item_id=item.id, stage="Review", cap=1)[0]
    said: list[str] = []
    bees = Bees(computer, say=said.append)
    gateway = EngineGateway(dev_env.client)
    queue = task_queue(computer.machine_id)
    assert await recover_state(bees, gateway, queue) == (1, 0)
    assert said == [f"{item.id} Review: lost: the engine's database was replaced; "
                    f"`bees retry {item.id}` starts Work again from the top"]
    row = record.item(item.id)
    assert (row.stage, row.status, row.reason, row.wait, row.status_text) == (
        "Review", Status.LOST, LOST_TEXT, WaitKind.PERSON,
        "lost: the engine's database was replaced")
    assert record.approvals(item.id) == []
    assert [a["status"] for a in record.approvals(item.id, status=None)] == ["lost"]
    assert record.slots() == []
    (fact,) = [e for e in record.events(item.id) if e.kind == "lost"]
    assert fact.typed().render() == (
        "Review: lost: the engine's database was replaced (it was running); bees retry starts "
        "it again")
    assert await recover_state(bees, gateway, queue) == (0, 0)  # lost once

    done = await bees.retry(item.id)
    assert (done.item, done.stage) == (item.id, "Work")
    assert record.item(item.id).status == Status.PENDING
    assert await start_pending(gateway, AsyncRecord(record), computer) == 1
    assert await dev_env.client.get_workflow_handle(item.id).result() == "done"
    assert [ln.split()[:4] for ln in space.lines()] == [
        ["Work", "alpha", "1", "1"], ["Review", "beta", "1", "1"], ["After", "alpha", "1", "1"]]
    retried = [e.data["who"] for e in record.events(item.id) if e.kind == "retried"]
    assert retried == [bees.who()]


async def test_a_lost_item_is_cancelled_at_once(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.write("processes/p.yaml", ONE)
    computer = Computer.load()
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=computer)
    record.set_state(item.id, status=Status.FAILED, stage="Work", reason="exit 3")
    bees = Bees(computer, engine=EngineGateway(dev_env.client))
    assert await recover_state(bees, EngineGateway(dev_env.client),
                               task_queue(computer.machine_id)) == (1, 0)
    cancelled = await bees.cancel(item.id)
    assert (cancelled.requested, cancelled.cancelled) == (False, True)
    assert record.item(item.id).status == Status.CANCELLED
