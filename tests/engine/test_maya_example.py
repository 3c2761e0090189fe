"""The post's "A real example: Maya's Monday report", steps 1 to 7, as one scripted test.

One real Bees Cloud (HTTP, SQLite), Maya's laptop and desktop and Sam's computer, each a
computer with its own record and its own worker on the session's dev server. The 9:00
fire is called on each computer with the scheduled time injected (no waiting for a
Monday). Step 6, the laptop sleeping mid-Draft, is its worker stopping; step 7, waking,
is a new worker on the same queue: Temporal hands the Draft back to it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bees_cli.cloud.client import cloud_for
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.schedules import FireActivities, wanted_schedules
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.sync import Syncer, team_rows
from bees_cli.schedules.owners import claim_owner
from bees_cli.usecases.run import start_pending
from bees_cli.workspace.loader import load_workspace
from tests.e2e.conftest import (  # noqa: F401 - fixtures
    Team,
    cloud,
    make_computer,
    record_of,
    service,
    team,
    write_workspace,
)
from tests.engine.conftest import agent_yaml, until

NINE = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""Monday 6 January 2025, 9:00 in Paris."""


class Maya:
    """The cast: Maya's two computers and Sam's, their workers, the shared workspace."""

    def __init__(self, env: WorkflowEnvironment, workspace: Path, laptop: Computer,
                 desktop: Computer, sam: Computer) -> None:
        self.env = env
        self.workspace = workspace
        self.laptop, self.desktop, self.sam = laptop, desktop, sam
        self.workers: dict[str, tuple[Worker, asyncio.Task[Any]]] = {}
        self.rows: dict[str, Any] = {}
        self.item = ""

    def start_worker(self, computer: Computer) -> None:
        worker = make_worker(self.env.client, task_queue(computer.machine_id),
                             record_of(computer), computer=computer,
                             fires=FireActivities(lambda: computer), heartbeat_every=0.5)
        self.workers[computer.computer] = (worker, asyncio.create_task(worker.run()))

    async def stop_worker(self, computer: Computer) -> None:
        worker, task = self.workers.pop(computer.computer)
        await worker.shutdown()
        await task

    def starter(self, computer: Computer):  # type: ignore[no-untyped-def]  # noqa: ANN201
        async def start(item_id: str) -> int:
            return await start_pending(EngineGateway(self.env.client),
                                       AsyncRecord(record_of(computer)),
                                       computer, only=item_id)
        return start

    async def until(self, computer: Computer, stage: str, status: str,
                    timeout: float = 60) -> None:
        await until(record_of(computer), self.item,
                    lambda row: (row.stage, row.status) == (stage, status), timeout=timeout)

    def seen_by(self, computer: Computer) -> dict[str, str]:
        return {r["id"]: r["status_text"] for r in team_rows(computer.record_path, set())}

    # -- the steps of the post -------------------------------------------------------------

    async def step_1_both_computers_fire(self) -> None:
        for computer in (self.laptop, self.desktop):
            schedules = load_workspace(self.workspace).schedules
            assert list(wanted_schedules(schedules, person=computer.person,
                                         machine_id=computer.machine_id, now=NINE)) != []
        self.rows["laptop"] = await service(self.laptop, self.workspace, NINE,
                                            start=self.starter(self.laptop)).fire(
            "monday-report", NINE)
        self.rows["desktop"] = await service(self.desktop, self.workspace,
                                             NINE + timedelta(seconds=1),
                                             start=self.starter(self.desktop)).fire(
            "monday-report", NINE)
        assert self.rows["laptop"].key == self.rows["desktop"].key == \
            "monday-report@2025-01-06T09:00"

    async def step_2_laptop_gets_key_desktop_skips(self) -> None:
        assert self.rows["laptop"].outcome == "ran_here"
        assert self.rows["desktop"].text == "taken by maya-laptop"
        assert record_of(self.desktop).items() == []
        self.item = str(self.rows["laptop"].detail)

    async def step_3_laptop_creates_claims_and_starts_draft(self) -> None:
        [row] = record_of(self.laptop).items()
        assert (row.id, row.title) == (self.item, "Weekly report 2025-01-06")
        async with cloud_for(self.laptop) as api:  # type: ignore[union-attr]
            owner = await api.get_owner(self.item)
        assert owner is not None and (owner.computer_name, owner.held) == ("maya-laptop", True)
        await self.until(self.laptop, "Draft", "running")
        await Syncer(self.laptop).sync_once()

    async def step_4_desktop_shows_it_running_on_the_laptop(self) -> None:
        await Syncer(self.desktop).sync_once()
        assert self.seen_by(self.desktop) == {self.item: "Draft, running on maya-laptop"}
        assert await start_pending(EngineGateway(self.env.client),
                                   AsyncRecord(record_of(self.desktop)),
                                   self.desktop) == 0
        assert record_of(self.desktop).items() == []

    async def step_5_sam_sees_it_and_never_runs_it(self) -> None:
        await Syncer(self.sam).sync_once()
        assert self.seen_by(self.sam) == {self.item: "Draft, running on maya-laptop"}
        schedules = load_workspace(self.workspace).schedules
        assert wanted_schedules(schedules, person=self.sam.person,
                                machine_id=self.sam.machine_id, now=NINE) == {}
        refused = await claim_owner(self.sam, self.item)
        assert (refused.status, refused.computer) == ("taken", "maya-laptop")
        assert record_of(self.sam).items() == []

    async def step_6_laptop_sleeps_mid_draft(self) -> None:
        await self.stop_worker(self.laptop)
        assert record_of(self.laptop).item(self.item).stage == "Draft"
        for _ in range(2):  # the desktop keeps syncing and never starts it
            await Syncer(self.desktop).sync_once()
            assert await start_pending(EngineGateway(self.env.client),
                                       AsyncRecord(record_of(self.desktop)), self.desktop) == 0
        assert self.seen_by(self.desktop) == {self.item: "Draft, running on maya-laptop"}
        assert record_of(self.desktop).items() == []
        async with cloud_for(self.desktop) as api:  # type: ignore[union-attr]
            owner = await api.get_owner(self.item)
        assert owner is not None and owner.computer_name == "maya-laptop" and owner.held

    async def step_7_laptop_wakes_and_draft_carries_on(self, log: Path) -> None:
        self.start_worker(self.laptop)
        await self.until(self.laptop, "Done", "done", timeout=90)
        runs = [line.split()[:4] for line in log.read_text().splitlines()
                if not line.startswith("end ")]
        assert runs == [["Draft", "writer", "1", "1"], ["Draft", "writer", "1", "2"],
                        ["Review", "reviewer", "1", "1"]]
        await Syncer(self.laptop).sync_once()
        await Syncer(self.desktop).sync_once()
        assert self.seen_by(self.desktop) == {self.item: "Done, done on maya-laptop"}
        assert record_of(self.desktop).items() == []


async def test_maya_monday_report_steps_1_to_7(dev_env: WorkflowEnvironment, tmp_path: Path,
                                              team: Team, bees_home: Path) -> None:  # noqa: F811
    log = tmp_path / "agents.log"
    workspace = write_workspace(tmp_path / "ws", team.maya, log=log)
    (workspace / "agents" / "writer.yaml").write_text(
        agent_yaml(env={"AGENT_LOG": str(log), "SLEEP_FIRST": "30"}), encoding="utf-8")
    token = team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=team.cloud.url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=team.cloud.url,
                            token=token)
    sam = make_computer(tmp_path, "sam-desktop", team.sam, url=team.cloud.url,
                        token=team.tokens[team.sam])
    maya = Maya(dev_env, workspace, laptop, desktop, sam)
    for computer in (laptop, desktop, sam):
        maya.start_worker(computer)
    try:
        await maya.step_1_both_computers_fire()
        await maya.step_2_laptop_gets_key_desktop_skips()
        await maya.step_3_laptop_creates_claims_and_starts_draft()
        await maya.step_4_desktop_shows_it_running_on_the_laptop()
        await maya.step_5_sam_sees_it_and_never_runs_it()
        await maya.step_6_laptop_sleeps_mid_draft()
        await maya.step_7_laptop_wakes_and_draft_carries_on(log)
    finally:
        for computer in (laptop, desktop, sam):
            if computer.computer in maya.workers:
                await maya.stop_worker(computer)
