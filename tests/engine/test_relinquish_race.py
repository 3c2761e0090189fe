"""A relinquish whose cancel the finishing stage swallows (tester finding): Draft's agent exits
0 after the cancel was asked but before its heartbeat saw it; the plan stops there, the item
is handed over restarting at Draft, and Review never starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import AWAIT_ELIGIBLE_ACTIVITY, CHECK_ACTIVITY, RUN_ACTIVITY, task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.engine.workflow_policies import RELINQUISH_BETWEEN_STEPS
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import note_worker, start_pending
from tests.engine.conftest import Space, scheduled
from tests.engine.test_handover import lines, relinquish_item, write_space
from tests.support import wait


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, space: Space,
                 record: LocalRecord) -> AsyncIterator[Worker]:
    """This computer's worker on the dev server, noted as `bees run`."""
    queue = task_queue(load_identity().machine_id)
    set_identity(person="maya@example.com", computer="maya-laptop")
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5) as running:
        yield running


async def last_heartbeat(handle: WorkflowHandle[Any, Any]) -> float:
    """When the server last heard the running stage's heartbeat (s since the epoch; 0: never)."""
    pending = (await handle.describe()).raw_description.pending_activities
    return pending[0].last_heartbeat_time.ToSeconds() if pending else 0.0


async def changed(handle: WorkflowHandle[Any, Any], seen: float) -> bool:
    """Whether a heartbeat newer than ``seen`` reached the server."""
    return await last_heartbeat(handle) > seen


async def test_relinquish_as_the_stage_finishes_stops_before_the_next_stage(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord, worker: Worker,
        tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    write_space(space, hold, tmp_path / "no-hold")
    hold.touch()
    item = create_item(space.root, "report", title="Week 5", agents=[], folders=[],
                       record=record, computer=Computer.load())
    assert await start_pending(EngineGateway(dev_env.client),
                               AsyncRecord(record), Computer.load()) == 1
    handle = dev_env.client.get_workflow_handle(item.id)
    await wait.until(lambda: "holding Draft" in space.lines(), lambda: f"{space.lines()}")
    # the SDK sends a stage's heartbeats (and so learns of a cancel) at most every 8 s (0.8 of
    # the 10 s timeout): relinquish just after one reached the server, so the cancel cannot
    # reach the agent before it ends (started at any other moment, the race is a coin toss)
    seen = await last_heartbeat(handle)
    await wait.until(lambda: changed(handle, seen), "Draft never heartbeat", every=0.02)

    relinquishing = asyncio.ensure_future(asyncio.to_thread(relinquish_item, item.id))
    # the relinquish was accepted and Draft's cancel asked: the agent ends at once, well
    # before its next heartbeat says so
    async def cancel_asked() -> bool:
        assert not relinquishing.done()
        return any(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED
                   for e in (await handle.fetch_history()).events)

    await wait.until(cancel_asked, "Draft's cancel was never asked", every=0.02)
    hold.unlink()
    done = await asyncio.wait_for(relinquishing, 30)

    assert (done.stage, done.restart_stages) == ("Draft", {"main": "Draft"})
    assert await handle.result() == "relinquished: restarts at Draft"
    history = await handle.fetch_history()
    types = [e.event_type for e in history.events]
    # the race happened: Draft finished with its result, its cancel swallowed
    assert types.count(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) >= 1
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED not in types
    assert [e.activity_task_scheduled_event_attributes.input.payloads[0].data.count(b'"Draft"')
            > 0 for e in scheduled(history, RUN_ACTIVITY)] == [True]
    markers = [str(e.marker_recorded_event_attributes.details) for e in history.events
               if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED]
    # Draft's check ran once, as a local activity (patch eligible-locally); Review never checked
    assert len(scheduled(history, AWAIT_ELIGIBLE_ACTIVITY)) == 0
    assert sum(CHECK_ACTIVITY in m for m in markers) == 1, markers
    assert sum(RELINQUISH_BETWEEN_STEPS in m for m in markers) == 1, markers
    assert lines(space) == ["run Draft writer 1", "mail.send 0 done 1 | ", "holding Draft",
                            "end Draft"]
    addon = (space.root.parent / "addon.log").read_text().splitlines()
    assert addon == ['mail.send {"to": "boss"}']  # Draft's one mail; nothing sent after
    row = record.item(item.id)
    assert (row.stage, row.status, row.status_text) == ("Draft", "free",
                                                        "free, restarts at Draft")
    kinds = [(e.kind, e.stage) for e in record.events(item.id)]
    assert ("stage_started", "Review") not in kinds
    assert kinds.count(("relinquished", "Draft")) == 1
