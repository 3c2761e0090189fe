"""Busy agents on the time-skipping server: the stage waits re-checking every 15 s, and after
10 minutes it fails with the reason until a person retries (DESIGN.md, Rules: busy agent)."""

from __future__ import annotations

from datetime import timedelta

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import AWAIT_SLOT_ACTIVITY, RETRY_UPDATE, PersonInput, task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
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
  - name: Done
    kind: done
"""


async def test_busy_agent_rechecks_every_15_s_and_fails_after_10_minutes(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.write("agents/alpha.yaml", "max_concurrent_runs: 1\n"
                + (space.root / "agents/alpha.yaml").read_text())
    space.write("processes/p.yaml", PROCESS)
    # another item holds alpha's only slot on this computer
    assert record.acquire_slot(agent="alpha", item_id="01OTHER", stage="Work", cap=1)[0]
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(skip_env.client), AsyncRecord(record), Computer.load())
        row = await until(record, item.id, lambda r: r.status == "waiting")
        assert row.status_text == "waiting: waiting for agent alpha: 1 of 1 busy (items 01OTHER)"
        start = await skip_env.get_current_time()
        await skip_env.sleep(timedelta(minutes=9, seconds=50))
        assert record.item(item.id).status == "waiting"
        await skip_env.sleep(timedelta(seconds=20))
        row = await until(record, item.id, lambda r: r.status == "failed")
        assert row.status_text == ("failed: waiting for agent alpha: 1 of 1 busy "
                                   "(items 01OTHER) for 10 minutes")
        assert await skip_env.get_current_time() - start >= timedelta(minutes=10)
        assert space.lines() == []
        handle = skip_env.client.get_workflow_handle(item.id)
        history = await handle.fetch_history()
        # no timer: one activity retried every 15 s (no backoff, no attempt limit), whose
        # 41st attempt, 10 minutes after the first, answers not granted
        assert timers(history) == []
        waits = scheduled(history, AWAIT_SLOT_ACTIVITY)
        assert [retried_every(e) for e in waits] == [(timedelta(seconds=15), 1.0, 0)]
        started = [e.activity_task_started_event_attributes.attempt for e in history.events
                   if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
                   and e.activity_task_started_event_attributes.scheduled_event_id
                   == waits[0].event_id]
        assert started == [41]
        # its place in the queue is given back; the holder keeps its slot
        assert [(s["item_id"], s["granted"]) for s in record.slots()] == [("01OTHER", True)]
        # the slot frees; a person retries: the stage runs
        record.release_slot("01OTHER")
        await handle.execute_update(RETRY_UPDATE, PersonInput(who="maya@example.com",
                                                              at="2025-01-06T09:00:00Z"))
        assert await handle.result() == "done"
    assert space.lines() == ["Work alpha 1 1 []"]
    assert record.slots() == []
    busy = [e.typed().reason.words()  # type: ignore[attr-defined]
            for e in record.events(item.id) if e.kind == "busy"]
    assert busy == ["waiting for agent alpha: 1 of 1 busy (items 01OTHER)"]
