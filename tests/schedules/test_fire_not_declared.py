"""A fire the engine delivers for a schedule that must not fire here now, and a missed
time delivered late at the start of ``bees run`` (issue 15's trial: a schedule removed or
disabled while ``bees run`` was down fired once at the next start)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.engine.fire_models import FireRequest
from bees_cli.engine.schedules import FireActivities
from bees_cli.record.fires import FireLog, FireOutcome
from bees_cli.schedules.fires import NotFiredHere
from bees_cli.utc import format_utc
from tests.e2e.conftest import make_computer, record_of, service, write_workspace

NINE = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
"""Monday 6 January 2025, 9:00 in Paris: a time of ``monday-report``."""
MAYA = "maya@example.com"
MISSED_TEXT = "missed (this computer was asleep or bees run was down)"


def _disable(workspace: Path) -> None:
    path = workspace / "schedules" / "monday-report.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "enabled: false\n", encoding="utf-8")


async def test_a_fire_of_a_disabled_schedule_makes_nothing_and_leaves_no_row(
        tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", MAYA, log=tmp_path / "a.log")
    _disable(workspace)
    laptop = make_computer(tmp_path, "maya-laptop", MAYA)
    with pytest.raises(NotFiredHere) as refused:
        await service(laptop, workspace, NINE).fire("monday-report", NINE)
    assert refused.value.message == "schedule monday-report is disabled: not fired"
    assert (record_of(laptop).items(), FireLog(laptop.record_path).fires()) == ([], [])


async def test_a_fire_of_another_persons_schedule_makes_nothing(tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", "sam@example.com", log=tmp_path / "a.log")
    laptop = make_computer(tmp_path, "maya-laptop", MAYA)
    activity = FireActivities(lambda: laptop,
                              make=lambda here, ws, start: service(here, ws, NINE))
    result = await activity.fire_schedule(FireRequest(
        schedule_id="monday-report", workspace=str(workspace), scheduled=format_utc(NINE)))
    assert (result.outcome, result.text) == (
        "not_fired", "schedule monday-report belongs to sam@example.com: not fired here")
    assert (record_of(laptop).items(), FireLog(laptop.record_path).fires()) == ([], [])


async def test_a_time_noted_missed_at_start_stays_missed_when_the_engine_delivers_it_late(
        tmp_path: Path) -> None:
    workspace = write_workspace(tmp_path / "ws", MAYA, log=tmp_path / "a.log")
    laptop = make_computer(tmp_path, "maya-laptop", MAYA)
    await service(laptop, workspace, NINE).fire("monday-report", NINE)
    second = NINE + timedelta(days=7)
    start = second + timedelta(seconds=90)
    [missed] = await service(laptop, workspace, start).recover()
    assert (missed.scheduled, missed.text) == ("2025-01-13T08:00:00.000000Z", MISSED_TEXT)
    late = await service(laptop, workspace, start + timedelta(seconds=1)).fire(
        "monday-report", second)
    assert (late.outcome, late.handled) == (FireOutcome.MISSED, missed.handled)
    assert len(record_of(laptop).items()) == 1
