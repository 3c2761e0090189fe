"""Days of waiting for a folder link on the time-skipping server: the history does not grow,
then the item runs once the folder is linked (DESIGN.md, Rules: eligibility; issue 10).

The server skips the time, but each re-check is a real activity attempt on the worker (7-20 ms
each): a day (5,760 re-checks) takes about a minute here, a week (40,320) 5 to 13 minutes.
The suite waits a day (``BEES_TEST_WAIT_DAYS``, default 1); set it to 7 for the week.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
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
from tests.engine.conftest import Space, scheduled, timers, until
from tests.support import wait

PROCESS = """\
stages:
  - name: Work
    kind: work
    agents: [alpha]
    reads: [notes]
  - name: Done
    kind: done
"""

WAIT = timedelta(days=float(os.environ.get("BEES_TEST_WAIT_DAYS", "1")))
"""How long the item waits for its folder: a day by default, a week with BEES_TEST_WAIT_DAYS=7."""
CHUNK = timedelta(hours=1)
"""Time skipped per call: one call for a whole day outlasts the client's RPC timeout."""

MOST_EVENTS = 20
"""The bound on the waiting run's history (the timer loop wrote about 2,640 events an hour)."""


async def waiting_history(handle: WorkflowHandle[object, object], timeout: float = 30.0,
                          ) -> list[HistoryEvent]:
    """Return the run's history events once its re-checking activity is scheduled (fails
    after ``timeout`` s)."""
    async def look() -> list[HistoryEvent]:
        history = await handle.fetch_history()
        return list(history.events) if scheduled(history, AWAIT_ELIGIBLE_ACTIVITY) else []

    return await wait.until(look, f"no {AWAIT_ELIGIBLE_ACTIVITY} scheduled", cap=timeout)


@pytest.mark.slow
@pytest.mark.timeout(1500)
async def test_days_waiting_for_a_folder_keep_the_history_small(
        skip_env: WorkflowEnvironment, space: Space, record: LocalRecord, tmp_path: Path) -> None:
    space.agent("alpha")
    space.write("folders/notes.yaml", "description: notes\n")
    space.write("processes/p.yaml", PROCESS)
    item = create_item(space.root, "p", title="T", agents=[], folders=[], record=record,
                       computer=Computer.load())
    queue = task_queue(load_identity().machine_id)
    waiting = "waiting: folder notes: not linked on this computer (bees link notes PATH)"
    async with make_worker(skip_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        await start_pending(EngineGateway(skip_env.client), AsyncRecord(record), Computer.load())
        await until(record, item.id, lambda r: r.status == "waiting")
        handle = skip_env.client.get_workflow_handle(item.id)
        # the record says "waiting" from the stage's local eligibility check, before the
        # workflow task that schedules the re-checking activity completes: count from there
        at_first = len(await waiting_history(handle))
        start = await skip_env.get_current_time()
        for _ in range(int(WAIT / CHUNK)):
            await skip_env.sleep(CHUNK)
        assert await skip_env.get_current_time() - start >= WAIT
        # re-checked every 15 s all along: the attempt count of the one waiting activity
        pending = (await handle.describe()).raw_description.pending_activities
        assert [p.activity_type.name for p in pending] == [AWAIT_ELIGIBLE_ACTIVITY]
        expected = WAIT // timedelta(seconds=15)
        # 5,760 a day; a loaded worker may lag the skipped clock by a few attempts (a week:
        # 34 of 40,320), far from the 6-7 % that a 14 s or 16 s cadence would make
        assert expected * 0.99 <= pending[0].attempt <= expected + 1
        history = await handle.fetch_history()
        assert len(history.events) == at_first
        assert len(history.events) <= MOST_EVENTS
        assert timers(history) == []
        assert len(scheduled(history, AWAIT_ELIGIBLE_ACTIVITY)) == 1
        assert record.item(item.id).status_text == waiting
        notes = tmp_path / "notes"
        notes.mkdir()
        link_folder("notes", notes, ["notes"])
        await skip_env.sleep(timedelta(seconds=16))
        assert await handle.result() == "done"
    assert space.lines() == ["Work alpha 1 1 []"]
    # one waiting fact for the week, then the pick and the run
    assert [e.kind for e in record.events(item.id)] == [
        "created", "waiting", "pick", "stage_started", "stage_finished", "done"]
