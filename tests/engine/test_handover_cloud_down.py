"""A handover step while Bees Cloud is down (a fault gap of issue 12, point 2), on the dev
server with a real Bees Cloud: the step is tried again past three attempts, the item shows
the wait, the checkpoint is written once, and once the cloud is up the item is free and
released with the digest of the file in the run folder; a refusal still ends it at once."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

import bees_cli.handover.checkpoint as checkpoint_module
from bees_cli.cloud.client import sync_cloud_for
from bees_cli.cloud.login import Login, save_login
from bees_cli.engine.handover_models import HANDOVER_ACTIVITY
from bees_cli.engine.models import task_queue
from bees_cli.engine.worker import make_worker
from bees_cli.errors import EngineError, Refused
from bees_cli.handover import relinquish as relinquish_module
from bees_cli.machine.computer import Computer
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.paths import data_dir
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.usecases.items import status_rows
from bees_cli.usecases.run import is_idle, note_worker
from tests.e2e.conftest import Team, cloud, team  # noqa: F401 - fixtures
from tests.engine.conftest import Space, retried_every, scheduled, until
from tests.engine.test_handover import relinquish_item
from tests.engine.test_handover_faults import sha, start_holding
from tests.support import wait

DOWN_FOR = 3
"""Tries of the handover step that fail while the cloud is down before the test waits for
one more: the old limit was 3, after which the run failed."""


class CloudGoesDown(httpx.AsyncBaseTransport):
    """Passes every request to Bees Cloud, except while ``down``: then a release (or repair)
    fails to connect, as when the server is unreachable; counts the releases that failed."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.down = False
        self.refused = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.down and request.url.path.endswith(("/release", "/repair")):
            self.refused += 1
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Kept open: each try of the activity makes a client over this one transport."""


@pytest_asyncio.fixture
async def flaky(dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
                team: Team) -> AsyncIterator[CloudGoesDown]:  # noqa: F811
    """This computer signed in to a real Bees Cloud, its worker's cloud calls going through
    a transport the test can take down."""
    set_identity(person=team.maya, computer="maya-laptop")
    save_login(Login(team.cloud.url, team.tokens[team.maya]))
    transport = CloudGoesDown()
    here = dataclasses.replace(Computer.load(), transport=transport)
    queue = task_queue(load_identity().machine_id)
    note_worker(data_dir(), dev_env.client.service_client.config.target_host, queue)
    async with make_worker(dev_env.client, queue, record, computer=here,
                           heartbeat_every=0.5):
        yield transport
    await transport.inner.aclose()


async def handover_attempt(env: WorkflowEnvironment, item_id: str) -> int:
    """Return the attempt of the pending handover step (0 when none is pending)."""
    pending = (await env.client.get_workflow_handle(item_id).describe()
               ).raw_description.pending_activities
    return max((p.attempt for p in pending if p.activity_type.name == HANDOVER_ACTIVITY),
               default=0)


@pytest.mark.timeout(180)
async def test_a_handover_while_the_cloud_is_down_waits_then_frees_the_item(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        flaky: CloudGoesDown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[str] = []
    real_write = checkpoint_module.write_checkpoint

    def counted(folder: Path, **options: Any) -> Any:
        info = real_write(folder, **options)
        writes.append(info.sha256)
        return info

    monkeypatch.setattr(checkpoint_module, "write_checkpoint", counted)
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 7")
    flaky.down = True
    asked = asyncio.create_task(asyncio.to_thread(relinquish_item, item.id))

    row = await until(record, item.id, lambda r: r.wait == WaitKind.RELEASE_PENDING)
    assert (row.status, row.stage, row.status_text) == (
        Status.WAITING, "Draft", "waiting: relinquishing: Bees Cloud unreachable, retrying")
    (shown,) = status_rows(record, load_identity().machine_id)
    assert (shown["status_text"], shown["wait"]) == (
        "waiting: relinquishing: Bees Cloud unreachable, retrying", "release_pending")
    assert not is_idle(record)  # bees run --exit-when-idle keeps trying
    async def fourth_scheduled() -> bool:
        assert not asked.done(), asked.result()  # the run did not give up after 3 tries
        return await handover_attempt(dev_env, item.id) > DOWN_FOR

    await wait.until(fourth_scheduled, "no 4th handover try", cap=120, every=0.2)
    assert flaky.refused >= DOWN_FOR * 3  # each try: the client's own three attempts

    flaky.down = False
    done = await asyncio.wait_for(asked, timeout=60)
    file = item.run_folder / "checkpoint.json"
    assert (done.released, done.checkpoint_sha256) == (True, sha(file))
    assert writes == [sha(file)]  # written by the first try, reused by every retry
    row = record.item(item.id)
    assert (row.status, row.wait, row.status_text) == (Status.FREE, None,
                                                       "free, restarts at Draft")
    api = sync_cloud_for(Computer.load())
    assert api is not None
    with api:
        owner = api.get_owner(item.id)
    assert owner is not None and owner.release is not None
    assert owner.release.checkpoint_sha256 == sha(file)
    handle = dev_env.client.get_workflow_handle(item.id)
    assert await handle.result() == "relinquished: restarts at Draft"
    (step,) = scheduled(await handle.fetch_history(), HANDOVER_ACTIVITY)
    assert retried_every(step) == (timedelta(seconds=1), 2.0, 0)
    policy = step.activity_task_scheduled_event_attributes.retry_policy
    assert policy.maximum_interval.ToTimedelta() == timedelta(seconds=15)


class RefusesAfterDown(CloudGoesDown):
    """Down for the first try of the handover step (its three requests), then answering the
    release with a refusal of the server: another machine owns the item."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/release"):
            self.refused += 1
            if self.refused <= 3:
                raise httpx.ConnectError("connection refused", request=request)
            body = {"error": {"code": "not_owner", "message": "item is owned by maya-desktop",
                              "hint": None}}
            return httpx.Response(403, json=body)
        return await self.inner.handle_async_request(request)


@pytest.mark.timeout(120)
async def test_a_refusal_after_the_cloud_came_back_ends_the_relinquish(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        flaky: CloudGoesDown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flaky, "handle_async_request",
                        lambda request: RefusesAfterDown.handle_async_request(flaky, request))
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 8")
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(relinquish_item, item.id)
    assert refused.value.message == (
        f"item {item.id} was not relinquished: item is owned by maya-desktop")
    assert flaky.refused == 4  # one try while down (three requests), one refused
    row = await until(record, item.id, lambda r: r.status != Status.WAITING)
    assert (row.status, row.stage, row.wait, row.status_text) == (
        Status.FAILED, "Draft", WaitKind.PERSON,
        "failed: item is owned by maya-desktop")
    assert await handover_attempt(dev_env, item.id) == 0  # nothing tried again


@pytest.mark.timeout(120)
async def test_another_failure_of_the_handover_step_ends_as_a_refusal_after_three_tries(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        flaky: CloudGoesDown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[str] = []

    async def broken(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/release"):
            tries.append(request.url.path)
            raise RuntimeError("a bug in the transport")
        return await flaky.inner.handle_async_request(request)

    monkeypatch.setattr(flaky, "handle_async_request", broken)
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 9")
    with pytest.raises(Refused) as refused:
        await asyncio.to_thread(relinquish_item, item.id)
    assert refused.value.message == (
        f"item {item.id} was not relinquished: relinquish failed: "
        "RuntimeError('a bug in the transport')")
    assert len(tries) == 3  # three tries of the step, one request each: not a cloud outage
    row = await until(record, item.id, lambda r: r.status == Status.FAILED)
    assert (row.stage, row.status_text) == (
        "Draft", "failed: relinquish failed: RuntimeError('a bug in the transport')")
    handle = dev_env.client.get_workflow_handle(item.id)
    assert (await handle.describe()).status.name == "RUNNING"  # the run did not fail


@pytest.mark.timeout(120)
async def test_a_relinquish_that_times_out_while_the_cloud_is_down_says_it_goes_on(
        dev_env: WorkflowEnvironment, space: Space, record: LocalRecord,
        flaky: CloudGoesDown, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relinquish_module, "RELINQUISH_TIMEOUT", 10.0)
    hold = tmp_path / "hold"
    item = await start_holding(dev_env, space, record, hold, "Week 10")
    flaky.down = True
    with pytest.raises(EngineError) as waited:
        await asyncio.to_thread(relinquish_item, item.id)
    assert (waited.value.message, waited.value.hint) == (
        f"item {item.id} is not handed over yet: relinquishing: Bees Cloud unreachable, "
        "retrying",
        "it goes on by itself while bees run is up; bees status shows it free once Bees "
        "Cloud answers")
    flaky.down = False
    row = await until(record, item.id, lambda r: r.status == Status.FREE, timeout=60)
    assert (row.wait, row.status_text) == (None, "free, restarts at Draft")
