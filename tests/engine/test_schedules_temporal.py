"""Temporal Schedules on the real dev server: registration per person, and a fire that runs.

Lives beside the engine tests to share their one dev server (``dev_env``); the test of a
lost grant also uses a real Bees Cloud (the e2e ``cloud`` and ``team`` fixtures).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.client import ScheduleOverlapPolicy
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from bees_cli.cloud.client import cloud_for
from bees_cli.engine.schedules import FireActivities, Registrar, fire_service, temporal_id
from bees_cli.engine.worker import make_worker
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import FireLog
from bees_cli.schedules.fires import FireService, Starter
from bees_cli.utc import parse_utc
from tests.e2e.conftest import (  # noqa: F401 - cloud: the fixture team needs
    FixedClock,
    Sleeps,
    Team,
    cloud,
    make_computer,
    record_of,
    service,
    team,
    write_workspace,
)
from tests.e2e.test_fire_faults import DownTransport, maya
from tests.support.wait import until

GAVE_UP = "gave up (cloud unreachable after 5 tries)"


async def test_registers_own_schedules_and_a_trigger_fires_the_fire_workflow(
        dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    maya = "maya@example.com"
    workspace = write_workspace(tmp_path / "ws", maya, log=tmp_path / "agents.log")
    (workspace / "schedules" / "sams-digest.yaml").write_text(
        "process: weekly-report\nowner: sam@example.com\ncron: '0 8 * * *'\n"
        "timezone: Europe/London\n", encoding="utf-8")
    laptop = make_computer(tmp_path, "maya-laptop", maya)
    queue = f"bees-test-{uuid.uuid4().hex[:8]}"
    client = dev_env.client
    registrar = Registrar(client, workspace, queue, computer=lambda: laptop)

    assert await registrar.reconcile() == {"added": ["monday-report"], "updated": [],
                                           "removed": []}
    assert await registrar.reconcile() == {"added": [], "updated": [], "removed": []}
    handle = client.get_schedule_handle(temporal_id(laptop.machine_id, "monday-report"))
    described = await handle.describe()
    assert described.schedule.policy.catchup_window == timedelta(seconds=60)
    assert described.schedule.policy.overlap == ScheduleOverlapPolicy.ALLOW_ALL
    assert len(described.schedule.spec.calendars) == 10
    with pytest.raises(RPCError):
        await client.get_schedule_handle(temporal_id(laptop.machine_id, "sams-digest")).describe()

    worker = make_worker(client, queue, record_of(laptop), computer=laptop,
                         fires=FireActivities(lambda: laptop))
    async with worker:
        await handle.trigger()
        log = FireLog(laptop.record_path)
        await until(log.fires, "the schedule never fired")
    [row] = log.fires()
    [item] = record_of(laptop).items()
    assert (row.outcome, row.text) == ("ran_here", f"ran here ({item.id})")
    assert item.title.startswith("Weekly report ") and item.status == "pending"

    # the schedule file now belongs to Sam: the next pass removes it here
    path = workspace / "schedules" / "monday-report.yaml"
    path.write_text(path.read_text().replace(maya, "sam@example.com"), encoding="utf-8")
    changes = await registrar.reconcile()
    assert changes == {"added": [], "updated": [],
                       "removed": ["monday-report"]}  # its name, not its Temporal id
    with pytest.raises(RPCError):
        await handle.describe()


async def test_the_registrar_makes_a_held_key_item_when_bees_run_starts_again(
        dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from bees_cli.engine.schedules import fire_service
    from tests.e2e.conftest import FixedClock

    maya = "maya@example.com"
    workspace = write_workspace(tmp_path / "ws", maya, log=tmp_path / "agents.log")
    laptop = make_computer(tmp_path, "maya-laptop", maya)
    at = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)

    def stopped(*_args: object) -> None:
        raise asyncio.CancelledError  # bees run stopped between the key and the item

    crashing = fire_service(laptop, workspace, clock=FixedClock(at))
    crashing.make = stopped
    with pytest.raises(asyncio.CancelledError):
        await crashing.fire("monday-report", at)
    assert record_of(laptop).items() == []

    said: list[str] = []
    registrar = Registrar(dev_env.client, workspace, f"bees-test-{uuid.uuid4().hex[:8]}",
                          computer=lambda: laptop, clock=FixedClock(at + timedelta(days=1)))
    stop = asyncio.Event()
    task = asyncio.create_task(registrar.run(stop, said.append, every=0.05))
    await until(lambda: record_of(laptop).items(), "the registrar made no item")
    stop.set()
    await task
    [item] = record_of(laptop).items()
    assert item.status == "pending"  # bees run's next pass starts it
    assert said == ["schedules added: monday-report",
                    f"schedule monday-report 2025-01-06T09:00: ran here ({item.id})"]


async def test_at_start_removed_schedules_go_and_missed_times_are_noted_before_any_fire(
        dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    """Issue 15's trial: a schedule disabled while ``bees run`` was down fired once at the
    next start, and the times missed while down had no row. ``prepare_schedules`` runs
    before the worker: when it returns the engine no longer has the disabled schedule and
    the missed Monday has its row, so the Monday the engine delivers at start cannot hide it."""
    from datetime import UTC, datetime

    from bees_cli.engine.background import prepare_schedules
    from bees_cli.engine.schedules import fire_service
    from tests.e2e.conftest import FixedClock

    maya = "maya@example.com"
    nine = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)  # Monday 9:00 Paris
    workspace = write_workspace(tmp_path / "ws", maya, log=tmp_path / "agents.log")
    digest = workspace / "schedules" / "daily-digest.yaml"
    digest.write_text(f"process: weekly-report\nowner: {maya}\ncron: '0 7 * * *'\n"
                      "timezone: UTC\n", encoding="utf-8")
    laptop = make_computer(tmp_path, "maya-laptop", maya)
    queue = f"bees-test-{uuid.uuid4().hex[:8]}"
    client = dev_env.client
    before = Registrar(client, workspace, queue, computer=lambda: laptop,
                       clock=FixedClock(nine - timedelta(days=1)))
    assert (await before.reconcile())["added"] == ["daily-digest", "monday-report"]
    first = await fire_service(laptop, workspace, clock=FixedClock(nine)).fire(
        "monday-report", nine)
    assert first.outcome == "ran_here"

    # bees run is down: the digest is disabled, two Mondays pass; it starts 20 s after the
    # third, which the engine delivers (on time) once the worker runs
    digest.write_text(digest.read_text(encoding="utf-8") + "enabled: false\n",
                      encoding="utf-8")
    said: list[str] = []
    start = nine + timedelta(days=14, seconds=20)
    registrar = await prepare_schedules(client, queue, workspace, said.append,
                                        computer=laptop, clock=FixedClock(start))
    assert registrar is not None and registrar.started
    gone = temporal_id(laptop.machine_id, "daily-digest")
    with pytest.raises(RPCError):
        await client.get_schedule_handle(gone).describe()
    await client.get_schedule_handle(temporal_id(laptop.machine_id, "monday-report")).describe()
    missed = "missed (this computer was asleep or bees run was down)"
    assert said == ["schedules removed: daily-digest",
                    f"schedule monday-report 2025-01-13T09:00: {missed}"]
    assert [(f.local, f.text) for f in FireLog(laptop.record_path).fires()] == [
        ("2025-01-13T09:00", missed), ("2025-01-06T09:00", first.text)]


async def test_a_schedule_that_never_fired_here_is_missed_from_when_it_was_registered(
        dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    """Registered by one ``bees run``, which stopped before its first time; the next starts
    three days later: each of the three daily times is noted missed (it had no row to
    count from before)."""
    from bees_cli.engine.background import prepare_schedules
    from tests.e2e.conftest import FixedClock

    maya = "maya@example.com"
    workspace = write_workspace(tmp_path / "ws", maya, log=tmp_path / "agents.log")
    (workspace / "schedules" / "monday-report.yaml").unlink()
    (workspace / "schedules" / "daily-digest.yaml").write_text(
        f"process: weekly-report\nowner: {maya}\ncron: '0 7 * * *'\ntimezone: UTC\n",
        encoding="utf-8")
    laptop = make_computer(tmp_path, "maya-laptop", maya)
    queue = f"bees-test-{uuid.uuid4().hex[:8]}"
    client = dev_env.client
    assert (await Registrar(client, workspace, queue, computer=lambda: laptop).reconcile()
            )["added"] == ["daily-digest"]
    handle = client.get_schedule_handle(temporal_id(laptop.machine_id, "daily-digest"))
    made = (await handle.describe()).info.created_at
    first = made.replace(hour=7, minute=0, second=0, microsecond=0)
    if first <= made:
        first += timedelta(days=1)
    said: list[str] = []
    await prepare_schedules(client, queue, workspace, said.append, computer=laptop,
                            clock=FixedClock(made + timedelta(days=3)))
    missed = "missed (this computer was asleep or bees run was down)"
    locals_ = [(first + timedelta(days=n)).strftime("%Y-%m-%dT%H:%M") for n in range(3)]
    assert said == [f"schedule daily-digest {at}: {missed}" for at in locals_]
    assert [(f.local, f.text) for f in FireLog(laptop.record_path).fires()] == [
        (at, missed) for at in reversed(locals_)]


async def test_a_grant_whose_answers_were_lost_is_made_while_bees_run_runs(
        dev_env: WorkflowEnvironment, tmp_path: Path, team: Team) -> None:  # noqa: F811
    """DESIGN.md, "Under faults": a proxy drops every answer to the key claim; the laptop's
    first ask was granted, both computers' fires "gave up". The laptop's registrar (the loop
    ``bees run`` keeps going) runs the held-keys check once Bees Cloud answers again: one
    item, the row "ran here"; the desktop, which the cloud did not grant, keeps its row.
    Clocks and sleeps are injected; the loops are polled."""
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
    asking = cloud_for(laptop, retries=0)
    assert asking is not None
    try:
        assert await asking.held_keys(laptop.machine_id, without_item=True) == []
    finally:
        await asking.aclose()
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


async def test_the_engine_fires_every_quarter_of_the_repeated_hour(
        dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    """Issue 23, point 5, on the real server: a ``*/15`` schedule in Europe/London
    registered just before the next night London goes back from BST to GMT; the engine's
    own next ten action times run through the repeated hour at every real quarter."""
    now = datetime.now(UTC)
    fall = next(moment for moment in (_london_fall_back(year) for year in range(
        now.year, now.year + 3)) if moment > now + timedelta(days=1))
    maya = "maya@example.com"
    workspace = write_workspace(tmp_path / "ws", maya, log=tmp_path / "agents.log")
    (workspace / "schedules" / "monday-report.yaml").unlink()
    (workspace / "schedules" / "quarter.yaml").write_text(
        f"process: weekly-report\nowner: {maya}\ncron: '*/15 * * * *'\n"
        "timezone: Europe/London\n", encoding="utf-8")
    laptop = make_computer(tmp_path, "maya-laptop", maya)
    registrar = Registrar(dev_env.client, workspace, f"bees-test-{uuid.uuid4().hex[:8]}",
                          computer=lambda: laptop,
                          clock=FixedClock(fall - timedelta(minutes=20)))
    assert (await registrar.reconcile())["added"] == ["quarter"]
    handle = dev_env.client.get_schedule_handle(temporal_id(laptop.machine_id, "quarter"))
    try:
        described = await handle.describe()
    finally:
        await handle.delete()
    # 00:45Z is 01:45 BST; 01:00Z-01:45Z are 01:00-01:45 GMT, the same wall times again
    assert described.info.next_action_times == [
        fall + timedelta(minutes=minutes) for minutes in range(-15, 135, 15)]


def _london_fall_back(year: int) -> datetime:
    """01:00Z on the last Sunday of October of ``year``: London goes back to GMT."""
    day = datetime(year, 10, 31, 1, 0, tzinfo=UTC)
    return day - timedelta(days=(day.weekday() + 1) % 7)
