"""Continue-as-new: when Temporal suggests it, a run continues as new before a stage, carrying
the plan's state, so long review loops never reach Temporal's history limits (issue 10)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases.items import create_item
from bees_cli.usecases.run import start_pending
from tests.engine.conftest import SCRIPTS, Space

SUGGEST_AFTER = 30
"""Events after which this test's server suggests continuing as new (Temporal's default: 4Ki)."""

WORK_REVIEW = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
  - name: Review
    kind: review
    reviews: Work
    agents: [beta]
  - name: Done
    kind: done
"""


@pytest_asyncio.fixture(scope="module")
async def small_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server that suggests continue-as-new after :data:`SUGGEST_AFTER` events."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(SCRIPTS / "temporal"),
        data_converter=pydantic_data_converter,
        dev_server_log_level="error",
        dev_server_extra_args=["--dynamic-config-value",
                               f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER}"],
    )
    yield env
    await env.shutdown()


async def test_a_review_loop_continues_as_new_and_keeps_its_rounds(
        small_env: WorkflowEnvironment, space: Space, record: LocalRecord) -> None:
    space.agent("alpha")
    space.agent("beta", env={"VERDICTS": "changes_requested,changes_requested"})
    space.write("processes/p.yaml", WORK_REVIEW)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    async with make_worker(small_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(small_env.client), AsyncRecord(record), Computer.load())
        handle = small_env.client.get_workflow_handle(item.id)
        assert await handle.result() == "done"
        latest = (await handle.fetch_history()).events[0]
        run_id = latest.workflow_execution_started_event_attributes.first_execution_run_id
        sizes = []
        while True:
            events = (await small_env.client.get_workflow_handle(
                item.id, run_id=run_id).fetch_history()).events
            sizes.append(len(events))
            last = events[-1]
            if last.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                break
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    # each run stops at the first stage boundary after the suggestion
    assert len(sizes) >= 2
    assert max(sizes) < SUGGEST_AFTER + 25, sizes
    # the rounds and the review comments went on across the runs
    assert space.lines() == [
        "Work alpha 1 1 []", "Review beta 1 1 []",
        'Work alpha 2 1 ["fix round 1"]', "Review beta 2 1 []",
        'Work alpha 3 1 ["fix round 2"]', "Review beta 3 1 []"]
    assert record.item(item.id).status == "done"
    kinds = [e.kind for e in record.events(item.id)]
    assert kinds.count("stage_started") == 6
