"""A key granted here whose answers were all lost becomes its item while ``bees run`` runs.

DESIGN.md, "Under faults": a key this computer won becomes exactly one item, however late
the making is. A proxy drops every answer to the key claim: the laptop's first ask was
granted, both computers' fires "gave up". The laptop's registrar (the loop ``bees run``
keeps going) runs the held-keys check once Bees Cloud answers again: one item, the row
"ran here"; the desktop, which the cloud did not grant, keeps its row. Real Bees Cloud
over HTTP, real Temporal dev server and worker; clocks are injected, no test sleeps for a
time rule (the loops are polled).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from bees_cli.cloud.client import cloud_for
from bees_cli.engine.schedules import FireActivities, Registrar, fire_service, temporal_id
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog
from bees_cli.schedules.fires import FireService, Starter
from bees_cli.utc import parse_utc
from tests.e2e.conftest import FixedClock, Sleeps, Team, record_of, service, write_workspace
from tests.e2e.test_fire_faults import LosingTransport, maya
from tests.engine.conftest import dev_env  # noqa: F401 - the Temporal dev server fixture

GAVE_UP = "gave up (cloud unreachable after 5 tries)"


class DownTransport(LosingTransport):
    """Every key claim's answer is lost (the proxy); while ``down``, no request reaches
    the cloud at all. Counts the held-key listings that were asked."""

    def __init__(self) -> None:
        super().__init__(lose=10**6)
        self.down = False
        self.listings = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.endswith("/v1/keys"):
            self.listings += 1
        if self.down:
            raise httpx.ConnectError("cloud unreachable", request=request)
        return await super().handle_async_request(request)


async def until(done: Callable[[], bool]) -> None:
    """Poll ``done`` (the loops run on their own) for at most 20 s."""
    for _ in range(400):
        if done():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not done in 20 s")


async def test_a_grant_whose_answers_were_lost_is_made_while_bees_run_runs(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team) -> None:  # noqa: F811
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    lossy, desk_lossy = DownTransport(), DownTransport()
    laptop = maya(tmp_path, team, transport=lossy)
    desktop = maya(tmp_path, team, "maya-desktop", transport=desk_lossy)
    client, queue = dev_env.client, f"bees-test-{uuid.uuid4().hex[:8]}"
    sleeps = Sleeps()

    def make(here: Computer, path: Path, start: Starter | None) -> FireService:
        return fire_service(here, path, start=start, sleep=sleeps)

    registrar = Registrar(client, workspace, queue, computer=lambda: laptop)
    assert (await registrar.reconcile())["added"] == ["monday-report"]
    log = FireLog(laptop.record_path)
    worker = make_worker(client, queue, record_of(laptop), computer=laptop,
                         fires=FireActivities(lambda: laptop, make=make))
    async with worker:
        await client.get_schedule_handle(
            temporal_id(laptop.machine_id, "monday-report")).trigger()
        await until(lambda: bool(log.fires()))
    [row] = log.fires()
    at = parse_utc(row.scheduled)
    # the cloud granted the first ask; five answers lost: gave up, nothing made
    assert (row.outcome, row.text, row.tries, lossy.key_requests) == ("gave_up", GAVE_UP, 5, 5)
    assert sleeps.waits == [0.5, 1.0, 2.0, 4.0]
    assert record_of(laptop).items() == []
    desk = await service(desktop, workspace, at + timedelta(seconds=2),
                         sleep=Sleeps()).fire("monday-report", at)
    assert (desk.outcome, desk.text) == ("gave_up", GAVE_UP)  # "taken", its answers lost

    # bees run goes on (its registrar passes); the cloud is first unreachable altogether
    lossy.down = True
    said: list[str] = []
    clock = FixedClock(at + timedelta(minutes=2))
    running = Registrar(client, workspace, queue, computer=lambda: laptop, clock=clock)
    stop = asyncio.Event()
    task = asyncio.create_task(running.run(stop, said.append, every=0.05, started=True))
    await until(lambda: lossy.listings >= 3)
    assert [r.text for r in log.fires()] == [GAVE_UP]  # asked again on each pass
    lossy.down = False  # the cloud answers again (its claim answers are still lost)
    await until(lambda: bool(record_of(laptop).items()))
    await until(lambda: log.fires()[0].outcome == "ran_here")
    listings = lossy.listings
    await until(lambda: lossy.listings == listings and len(said) == 1)
    stop.set()
    await task
    [item] = record_of(laptop).items()
    [ran] = log.fires()
    assert (ran.text, ran.local, ran.scheduled) == (f"ran here ({item.id})", row.local,
                                                     row.scheduled)
    assert item.status == "pending"  # bees run starts it
    assert said == [f"schedule monday-report {row.local}: ran here ({item.id})"]
    assert FireLog(laptop.record_path).claim(item.id).status == "owner"  # type: ignore[union-attr]
    # the cloud knows the key's item: nothing left to make, however often the check runs
    cloud = cloud_for(laptop, retries=0)
    assert cloud is not None
    try:
        assert await cloud.held_keys(laptop.machine_id, without_item=True) == []
    finally:
        await cloud.aclose()
    await running.check_held(said.append)
    await running.check_held(said.append)
    assert [i.id for i in record_of(laptop).items()] == [item.id]
    assert len(said) == 1
    # the desktop's check: the cloud holds nothing for it; its row and record stay
    other = Registrar(client, workspace, queue, computer=lambda: desktop, clock=clock)
    await other.check_held(said.append)
    assert desk_lossy.listings == 1
    assert [(f.outcome, f.text) for f in FireLog(desktop.record_path).fires()] == [
        ("gave_up", GAVE_UP)]
    assert record_of(desktop).items() == []
    assert len(said) == 1


async def test_a_check_that_makes_the_item_while_the_fire_asks_leaves_ran_here(
        tmp_path: Path, team: Team) -> None:
    """The held-keys check of another fire's "gave up" runs while this fire still asks
    (between two tries): it makes the item; the fire's last try then gives up, and its row
    stays "ran here" with the one item."""
    workspace = write_workspace(tmp_path / "ws", team.maya, log=tmp_path / "agents.log")
    lossy = DownTransport()
    laptop = maya(tmp_path, team, transport=lossy)
    at = parse_utc("2025-01-06T08:00:00Z")
    checks: list[list[str]] = []

    async def sleep(_seconds: float) -> None:
        if not checks:  # after the first (granted) try, a registrar pass checks
            check = await service(laptop, workspace, at + timedelta(seconds=1)).make_held()
            checks.append([r.text for r in check.rows])

    row = await service(laptop, workspace, at + timedelta(seconds=1),
                        sleep=sleep).fire("monday-report", at)
    [item] = record_of(laptop).items()
    assert checks == [[f"ran here ({item.id})"]]
    assert lossy.key_requests == 5
    # the check's row is the fire's row (written by the check: no tries of its own)
    assert [(f.text, f.tries) for f in FireLog(laptop.record_path).fires()] == [
        (row.text, row.tries)] == [(f"ran here ({item.id})", 0)]
