"""Eligibility before work starts, on the time-skipping server: the item waits with its reasons,
re-checks every 15 s of workflow time, and runs nothing until the check passes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import AWAIT_ELIGIBLE_ACTIVITY, task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.machine.links import link_folder
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import start_pending
from tests.engine.conftest import Space, retried_every, scheduled, timers, until

PROCESS = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
    reads: [notes]
  - name: Done
    kind: done
"""


async def test_item_waits_with_reasons_and_rechecks_every_15_s(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord, tmp_path: Path) -> None:
    space.agent("alpha", enabled=False)
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", PROCESS)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(skip_env.client), AsyncRecord(record), Computer.load())
        row = await until(record, item.id, lambda r: r.status == "waiting")
        assert row.status_text == (
            "waiting: folder notes: not linked on this computer (bees link notes PATH); "
            "no enabled agent for Work: alpha disabled")
        assert row.stage == "Work"

        # fix one problem: the item still waits, now for the agent alone
        notes = tmp_path / "notes"
        notes.mkdir()
        link_folder("notes", notes, ["notes"])
        start = await skip_env.get_current_time()
        await skip_env.sleep(timedelta(seconds=16))
        row = await until(record, item.id, lambda r: r.reason != row.reason)
        assert row.status_text == "waiting: no enabled agent for Work: alpha disabled"
        assert space.lines() == []

        # fix the other: the next check passes and the stage runs once
        space.agent("alpha")  # the snapshot still says disabled: the workspace edit is ignored
        await skip_env.sleep(timedelta(seconds=16))
        row = await until(record, item.id, lambda r: r.reason == "no enabled agent for Work: "
                          "alpha disabled")
        assert space.lines() == []
        handle = skip_env.client.get_workflow_handle(item.id)
        history = await handle.fetch_history()
        # no timer: one activity retried every 15 s, no backoff, no attempt limit
        assert timers(history) == []
        waits = scheduled(history, AWAIT_ELIGIBLE_ACTIVITY)
        assert [retried_every(e) for e in waits] == [(timedelta(seconds=15), 1.0, 0)]
        assert await skip_env.get_current_time() - start >= timedelta(seconds=32)
        await handle.terminate()
    waits = [[r.words() for r in e.typed().reasons]  # type: ignore[attr-defined]
             for e in record.events(item.id) if e.kind == "waiting"]
    assert waits == [
        ["folder notes: not linked on this computer (bees link notes PATH)",
         "no enabled agent for Work: alpha disabled"],
        ["no enabled agent for Work: alpha disabled"],
    ]


async def test_waiting_item_starts_once_its_folder_is_linked(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord, tmp_path: Path) -> None:
    space.agent("alpha")
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", PROCESS)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(skip_env.client), AsyncRecord(record), Computer.load())
        row = await until(record, item.id, lambda r: r.status == "waiting")
        assert row.reason == "folder notes: not linked on this computer (bees link notes PATH)"
        assert space.lines() == []
        notes = tmp_path / "notes"
        notes.mkdir()
        link_folder("notes", notes, ["notes"])
        # skip past the 15 s retry: the re-check passes and the item ends
        await skip_env.sleep(timedelta(seconds=16))
        assert await skip_env.client.get_workflow_handle(item.id).result() == "done"
    assert space.lines() == ["Work alpha 1 1 []"]
    assert [e.kind for e in record.events(item.id)] == [
        "created", "waiting", "pick", "stage_started", "stage_finished", "done"]
