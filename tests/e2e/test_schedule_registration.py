"""What a computer registers as Temporal Schedules (pure): whose, which instants, across DST."""

from __future__ import annotations

from datetime import UTC, datetime

from bees_cli.engine.schedules import build_schedule, temporal_id, wanted_schedules
from bees_cli.workspace.models import Schedule

MACHINE = "0123456789abcdef0123456789abcdef"


def daily(owner: str, at: str = "30 2 * * *", **extra: object) -> Schedule:
    return Schedule.model_validate({"process": "p", "owner": owner, "cron": at,
                                    "timezone": "Europe/Paris", **extra})


def test_only_the_signed_in_persons_enabled_schedules() -> None:
    schedules = {"mine": daily("Maya@example.com"), "sams": daily("sam@example.com"),
                 "off": daily("maya@example.com", enabled=False)}
    now = datetime(2025, 3, 1, tzinfo=UTC)
    wanted = wanted_schedules(schedules, person="maya@example.com", machine_id=MACHINE, now=now)
    assert list(wanted) == ["bees-schedule-0123456789ab-mine"]
    assert wanted_schedules(schedules, person=None, machine_id=MACHINE, now=now) == {}
    assert list(wanted_schedules(schedules, person="sam@example.com", machine_id=MACHINE,
                                 now=now)) == [temporal_id(MACHINE, "sams")]


def test_spring_forward_fires_at_the_next_valid_minute_and_fall_back_once() -> None:
    schedules = {"night": daily("maya@example.com")}
    spring = wanted_schedules(schedules, person="maya@example.com", machine_id=MACHINE,
                              now=datetime(2025, 3, 28, 12, tzinfo=UTC), horizon=3)
    assert spring[temporal_id(MACHINE, "night")].calendars == [
        {"year": 2025, "month": 3, "day": 29, "hour": 1, "minute": 30},  # CET: 02:30 = 01:30Z
        {"year": 2025, "month": 3, "day": 30, "hour": 1, "minute": 0},   # 02:30 skipped: 03:00
        {"year": 2025, "month": 3, "day": 31, "hour": 0, "minute": 30},  # CEST
    ]
    autumn = wanted_schedules(schedules, person="maya@example.com", machine_id=MACHINE,
                              now=datetime(2025, 10, 25, 12, tzinfo=UTC), horizon=2)
    assert autumn[temporal_id(MACHINE, "night")].calendars == [
        {"year": 2025, "month": 10, "day": 26, "hour": 0, "minute": 30},  # first 02:30 only
        {"year": 2025, "month": 10, "day": 27, "hour": 1, "minute": 30},
    ]


def test_the_temporal_schedule_is_exact_utc_catchup_60_allow_all() -> None:
    from datetime import timedelta
    from pathlib import Path

    from temporalio.client import ScheduleOverlapPolicy, ScheduleRange

    schedules = {"night": daily("maya@example.com")}
    [wanted] = wanted_schedules(schedules, person="maya@example.com", machine_id=MACHINE,
                                now=datetime(2025, 3, 28, 12, tzinfo=UTC), horizon=2).values()
    built = build_schedule(wanted, workspace=Path("/ws"), machine_id=MACHINE, task_queue="q")
    assert built.policy.catchup_window == timedelta(seconds=60)
    assert built.policy.overlap == ScheduleOverlapPolicy.ALLOW_ALL
    assert built.spec.time_zone_name == "UTC"
    first = built.spec.calendars[0]
    assert (first.year, first.month, first.day_of_month, first.hour, first.minute) == (
        (ScheduleRange(2025),), (ScheduleRange(3),), (ScheduleRange(29),), (ScheduleRange(1),),
        (ScheduleRange(30),))
    assert len(built.spec.calendars) == 2


def test_quarter_hours_are_registered_through_the_repeated_hour() -> None:
    """Issue 23, point 5: the engine is given every real quarter of the hour London repeats
    on 2025-10-26 (01:00-01:45 BST, then 01:00-01:45 GMT), not 00:45Z then 02:00Z."""
    schedules = {"quarter": daily("maya@example.com", "*/15 * * * *", timezone="Europe/London")}
    [wanted] = wanted_schedules(schedules, person="maya@example.com", machine_id=MACHINE,
                                now=datetime(2025, 10, 26, 0, 40, tzinfo=UTC),
                                horizon=7).values()
    assert [(c["day"], c["hour"], c["minute"]) for c in wanted.calendars] == [
        (26, 0, 45), (26, 1, 0), (26, 1, 15), (26, 1, 30), (26, 1, 45), (26, 2, 0), (26, 2, 15)]
