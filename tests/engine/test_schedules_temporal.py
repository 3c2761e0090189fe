"""Temporal Schedules on the real dev server: registration per person, and a fire that runs.

Lives beside the engine tests to share their one dev server (``dev_env``).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import ScheduleOverlapPolicy
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from bees_cli.engine.schedules import FireActivities, Registrar, temporal_id
from bees_cli.engine.worker import make_worker
from bees_cli.record.fires import FireLog
from tests.e2e.conftest import make_computer, record_of, write_workspace


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
        for _ in range(300):
            if log.fires():
                break
            await asyncio.sleep(0.05)
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
    for _ in range(200):
        if record_of(laptop).items():
            break
        await asyncio.sleep(0.05)
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
