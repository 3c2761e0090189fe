"""``bees run`` with an unreachable Bees Cloud (issue 11, point 5): ``--exit-when-idle``
keeps trying an owner claim the cloud did not answer, and the run pushes before it stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.background import Background
from bees_cli.record.fires import FireLog
from bees_cli.record.states import Status, WaitKind
from bees_cli.record.sync import SharedRecord, Syncer, SyncResult
from bees_cli.schedules import owners
from bees_cli.usecases.bees import Bees
from tests.e2e.conftest import Team, closed_url, make_computer, record_of
from tests.engine.conftest import dev_env  # noqa: F401 - the session's Temporal dev server
from tests.support import wait

ITEM = "01JRUNCLAIMPENDING00000000"


async def test_exit_when_idle_keeps_trying_a_claim_the_cloud_did_not_answer(
        tmp_path: Path, dev_env: WorkflowEnvironment,  # noqa: F811 - the fixture
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owners, "CLAIM_RETRY", 0.05)  # instead of 15 s
    monkeypatch.chdir(tmp_path)  # no workspace: no schedules
    closed = closed_url()
    offline = make_computer(tmp_path, "maya-laptop", "maya@example.com", url=closed,
                            token="x")
    record = record_of(offline)
    record.add_item(id=ITEM, process="p", title="t", workspace="/ws", run_folder="/runs",
                    input="{}", stage="Draft")
    said: list[str] = []
    address = dev_env.client.service_client.config.target_host
    run = asyncio.create_task(Bees(offline, say=said.append).run(
        workspace_path=None, address=address, exit_when_idle=True))
    tried: set[str] = set()
    def tried_thrice() -> bool:
        claim = FireLog(offline.record_path).claim(ITEM)
        if claim is not None:
            tried.add(claim.tried)
        return len(tried) >= 3 or run.done()

    await wait.until(tried_thrice, lambda: f"tried {len(tried)} times: {said}", cap=120)
    assert not run.done(), said
    assert len(tried) >= 3, said  # tried again and again, still running
    row = record.item(ITEM)
    assert (row.status, row.wait) == (Status.WAITING, WaitKind.CLAIM_PENDING)
    waits = ("not stopping: 1 item waits for its owner claim (Bees Cloud unreachable); "
             "trying again every 0.05 s")
    assert said.count(waits) == 1, said
    record.set_state(ITEM, status=Status.CANCELLED, stage="Draft")  # nothing left to try
    assert await asyncio.wait_for(run, 120) == 0
    assert said[-2] == "nothing left to run here; stopping"
    assert said[-1].startswith("shared record: not pushed before stopping: cannot reach "
                               f"Bees Cloud at {closed}: ")
    assert said[-1].endswith("; unsent changes wait for the next `bees run`")


async def test_the_last_sync_pushes_what_is_left_and_is_bounded_in_time(
        tmp_path: Path, team: Team) -> None:
    url, token = team.cloud.url, team.tokens[team.maya]
    laptop = make_computer(tmp_path, "maya-laptop", team.maya, url=url, token=token)
    desktop = make_computer(tmp_path, "maya-desktop", team.maya, url=url, token=token)
    record_of(laptop).add_item(id=ITEM, process="p", title="t", workspace="/ws",
                               run_folder="/runs", input="{}", stage="Draft")
    said: list[str] = []
    assert await Background(syncer=Syncer(laptop)).final_sync(said.append) is True
    assert said == ["shared record: pushed 1 change(s) before stopping"]
    await Syncer(desktop).sync_once()
    assert [t.item_id for t in SharedRecord(desktop.record_path).team()] == [ITEM]

    class Hanging(Syncer):
        async def sync_once(self) -> SyncResult:
            await asyncio.sleep(3600)
            raise AssertionError("not reached")

    said.clear()
    assert await Background(syncer=Hanging(laptop)).final_sync(said.append,
                                                                timeout=0.05) is False
    assert said == ["shared record: no answer in 0.05 s; unsent changes wait for the next "
                    "`bees run`"]
