"""A relinquish whose release answer was lost, its ``bees run`` killed meanwhile (tester
finding, MED): against a real Bees Cloud and the dev server, the release reaches the cloud
but no answer comes back; the worker dies; another computer claims the item; when the
worker starts again the laptop learns from Bees Cloud that its owner row was released:
the item is free here, its held approval closed ``relinquished``, ``bees approve`` refused
naming where it runs, and the run's retried handover ends the run relinquished."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

import bees_cli.handover.relinquish as relinquish_module
from bees_cli.cloud import wire
from bees_cli.cloud.client import CloudClient, sync_cloud_for
from bees_cli.cloud.login import Login, save_login
from bees_cli.engine.client import EngineGateway
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import BeesError, Refused
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.local import LocalRecord
from bees_cli.usecases import Bees
from bees_cli.usecases.approvals import approvals_waiting
from bees_cli.usecases.items import create_item
from bees_cli.usecases.released import finish_released
from bees_cli.usecases.run import note_worker, start_pending
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space, until
from tests.engine.test_handover import SEND_PROCESS, write_space
from tests.engine.test_handover_faults import LoseAnswers
from tests.support import wait


def relinquish_lost(item_id: str) -> str:
    """``bees relinquish`` in a thread of its own; return how it ended (it cannot succeed:
    every release answer is lost, then the worker dies)."""
    try:
        asyncio.run(Bees(Computer.load()).relinquish(item_id))
    except BeesError as error:
        return type(error).__name__
    return "relinquished"


def decide(item_id: str) -> object:
    """``bees approve ITEM`` in a thread of its own (its own event loop)."""
    return asyncio.run(Bees(Computer.load()).decide(item_id, approve=True, request_id=None,
                                                    reason=None))


async def kill_while_releasing(dev_env: WorkflowEnvironment, space: Space,
                               record: LocalRecord, team: Team, tmp_path: Path) -> Any:  # noqa: F811
    """The tester's steps up to the restart: Send waits for approval; ``bees relinquish``;
    the release reaches Bees Cloud, its answers are lost; ``bees run`` dies; the desktop
    claims the item. Return the item."""
    set_identity(person=team.maya, computer="maya-laptop")
    save_login(Login(team.cloud.url, team.tokens[team.maya]))
    lossy = LoseAnswers(lose=10**6)  # the proxy drops every release answer
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    write_space(space, tmp_path / "no-hold")
    space.write("agents/sender.yaml", (space.root / "agents/writer.yaml").read_text())
    space.write("processes/send.yaml", SEND_PROCESS)
    first = make_worker(dev_env.client, queue, record,
                        computer=dataclasses.replace(Computer.load(), transport=lossy),
                        heartbeat_every=0.5)
    await first.__aenter__()
    try:
        item = create_item(space.root, "send", title="Week 9", agents=[], folders=[],
                           record=record, computer=Computer.load())
        assert await start_pending(EngineGateway(dev_env.client),
                                   AsyncRecord(record), Computer.load()) == 1
        await until(record, item.id, lambda r: r.status == "waiting for approval")
        asked = asyncio.create_task(asyncio.to_thread(relinquish_lost, item.id))
        def released() -> bool:
            api = sync_cloud_for(Computer.load())
            assert api is not None
            with api:
                owner = api.get_owner(item.id)
            return owner is not None and not owner.held

        await wait.until(lambda: asyncio.to_thread(released), "the cloud took no release")
        assert lossy.releases >= 1
    finally:
        await first.__aexit__(None, None, None)  # bees run dies before any answer
    assert await asyncio.wait_for(asked, 30) == "EngineError"
    row = record.item(item.id)
    assert row.status != "free"
    # the desktop continues the item: a claim of the released item by maya-desktop
    with CloudClient(team.cloud.url, team.tokens[team.maya]) as desktop:
        won = desktop.claim_owner(wire.OwnerClaim(
            item_id=item.id, machine_id=secrets.token_hex(16), computer_name="maya-desktop"))
    assert won.status == "owner"
    await lossy.inner.aclose()
    # while bees run is down: the record still shows the request, yet no decision is taken
    assert [r.item_id for r in approvals_waiting(record)] == [item.id]
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(decide, item.id)
    assert refused.value.message == (
        f"{item.id} runs on maya-desktop ({team.maya}): approve it there")
    assert record.queued_payloads("bees.decide", item.id) == []

    return item


@pytest.mark.timeout(240)
async def test_a_relinquish_released_in_the_cloud_while_bees_run_died_finishes_on_restart(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr(relinquish_module, "RELINQUISH_TIMEOUT", 5.0)
    item = await kill_while_releasing(dev_env, space, record, team, tmp_path)
    queue = task_queue(load_identity().machine_id)
    # bees run starts again, the proxy healed
    bees = Bees(Computer.load(), say=lambda _: None)
    async with make_worker(dev_env.client, queue, record, computer=Computer.load(),
                           heartbeat_every=0.5):
        assert await finish_released(bees) == [item.id]
        row = record.item(item.id)
        assert (row.status, row.status_text) == ("free", "free, restarts at Send")
        assert approvals_waiting(record) == []
        assert [r["status"] for r in record.approvals(item.id, status=None)] == [
            "relinquished"]
        with pytest.raises(Refused) as refused:
            await asyncio.to_thread(decide, item.id)
        assert refused.value.message == (
            f"{item.id} runs on maya-desktop ({team.maya}): approve it there")
        assert refused.value.exit_code == 3
        # the run's handover, tried again, finds its release taken: the run ends handed over
        result = await asyncio.wait_for(
            dev_env.client.get_workflow_handle(item.id).result(), 90)
        assert result == "relinquished: restarts at Send"
        row = record.item(item.id)
        assert (row.status, row.status_text) == ("free", "free, restarts at Send")
        assert await finish_released(bees) == []


async def test_released_here_tells_a_taken_release_from_a_held_or_another_machines_row(
        team: Team) -> None:  # noqa: F811
    from bees_cli.cloud.async_client import AsyncCloudClient
    from bees_cli.engine.handover import released_here

    laptop, desktop = secrets.token_hex(16), secrets.token_hex(16)
    item = "01RELEASEDHEREITEM00000000"
    first, other = "a" * 64, "b" * 64

    def claim(machine: str, name: str) -> wire.OwnerClaim:
        return wire.OwnerClaim(item_id=item, machine_id=machine, computer_name=name)

    def release(machine: str, sha256: str) -> wire.OwnerRelease:
        return wire.OwnerRelease(machine_id=machine, restart_stages={"main": "Send"},
                                 checkpoint_sha256=sha256)

    async with AsyncCloudClient(team.cloud.url, team.tokens[team.maya]) as api:
        assert await released_here(api, item, laptop) is None  # never claimed
        assert (await api.claim_owner(claim(laptop, "maya-laptop"))).status == "owner"
        assert await released_here(api, item, laptop) is None  # held here
        await api.release_owner(item, release(laptop, first))
        taken = await released_here(api, item, laptop, first)
        assert taken is not None and (taken.epoch, taken.machine_id) == (1, laptop)
        assert await released_here(api, item, laptop, other) is None  # another release
        assert await released_here(api, item, desktop) is None  # no row of the desktop
        assert (await api.claim_owner(claim(desktop, "maya-desktop"))).status == "owner"
        taken = await released_here(api, item, laptop, first)
        assert taken is not None and taken.epoch == 1
        await api.release_owner(item, release(desktop, other))
        assert (await api.claim_owner(claim(laptop, "maya-laptop"))).status == "owner"
        assert await released_here(api, item, laptop) is None  # continued here again


@pytest.mark.timeout(240)
async def test_bees_run_started_again_finishes_the_relinquish_and_exits_when_idle(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr(relinquish_module, "RELINQUISH_TIMEOUT", 5.0)
    item = await kill_while_releasing(dev_env, space, record, team, tmp_path)
    said: list[str] = []
    bees = Bees(Computer.load(), say=said.append)
    address = dev_env.client.service_client.config.target_host
    assert await asyncio.wait_for(bees.run(workspace_path=None, address=address,
                                           exit_when_idle=True, heartbeat_every=0.5),
                                  120) == 0
    assert (f"{item.id}: Bees Cloud took its relinquish (the answer was lost): free, "
            "restarts at Send") in said
    row = record.item(item.id)
    assert (row.status, row.status_text) == ("free", "free, restarts at Send")
    assert [r["status"] for r in record.approvals(item.id, status=None)] == ["relinquished"]
    result = await asyncio.wait_for(dev_env.client.get_workflow_handle(item.id).result(), 5)
    assert result == "relinquished: restarts at Send"
