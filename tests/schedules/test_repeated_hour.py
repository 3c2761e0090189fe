"""Hourly and more frequent schedules keep real-time cadence across daylight-saving changes
(issue 23, point 5); daily and weekly ones keep one run per wall-clock time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bees_cli.schedules.times import Fire, fire_for, fire_times, keeps_real_time
from bees_cli.workspace.models import Schedule


def cron(expression: str, zone: str = "Europe/London") -> Schedule:
    return Schedule.model_validate({"process": "p", "owner": "maya@example.com",
                                    "cron": expression, "timezone": zone})


def calendar(at: str, zone: str = "Europe/London") -> Schedule:
    return Schedule.model_validate({"process": "p", "owner": "maya@example.com",
                                    "calendar": {"days": ["sunday"], "time": at},
                                    "timezone": zone})


def z(month: int, day: int, hour: int, minute: int = 0, year: int = 2025) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def rows(fires: list[Fire]) -> list[tuple[str, str]]:
    """(UTC instant, key) of each fire."""
    return [(f.utc.strftime("%d %H:%MZ"), f.key) for f in fires]


def test_quarter_hours_in_london_fire_at_every_real_quarter_of_the_repeated_hour() -> None:
    # 2025-10-26: at 02:00 BST (01:00Z) London goes back to 01:00 GMT
    fires = fire_times(cron("*/15 * * * *"), "q", after=z(10, 25, 23, 50), count=10)
    assert rows(fires) == [
        ("26 00:00Z", "q@2025-10-26T01:00"),  # 01:00 BST
        ("26 00:15Z", "q@2025-10-26T01:15"),
        ("26 00:30Z", "q@2025-10-26T01:30"),
        ("26 00:45Z", "q@2025-10-26T01:45"),
        ("26 01:00Z", "q@2025-10-26T01:00+00:00"),  # 01:00 GMT: the same wall time again
        ("26 01:15Z", "q@2025-10-26T01:15+00:00"),
        ("26 01:30Z", "q@2025-10-26T01:30+00:00"),
        ("26 01:45Z", "q@2025-10-26T01:45+00:00"),
        ("26 02:00Z", "q@2025-10-26T02:00"),
        ("26 02:15Z", "q@2025-10-26T02:15"),
    ]
    assert [f.repeat for f in fires] == [False] * 4 + [True] * 4 + [False] * 2
    assert [f.local.strftime("%H:%M") for f in fires[4:8]] == ["01:00", "01:15", "01:30",
                                                               "01:45"]


@pytest.mark.parametrize(("after", "first"), [
    (z(10, 26, 0, 50), "26 01:00Z"),  # inside the first 01:xx: the second 01:00 is next
    (z(10, 26, 1, 10), "26 01:15Z"),  # inside the second 01:xx
])
def test_a_window_starting_inside_the_repeated_hour_loses_nothing(after: datetime,
                                                                  first: str) -> None:
    fires = fire_times(cron("*/15 * * * *"), "q", after=after, count=2)
    assert rows(fires)[0][0] == first


def test_hourly_in_new_york_fires_at_0500z_and_0600z() -> None:
    # 2025-11-02: at 02:00 EDT (06:00Z) New York goes back to 01:00 EST
    fires = fire_times(cron("0 * * * *", "America/New_York"), "h", after=z(11, 2, 3, 30),
                       count=4)
    assert rows(fires) == [
        ("02 04:00Z", "h@2025-11-02T00:00"),
        ("02 05:00Z", "h@2025-11-02T01:00"),  # 01:00 EDT
        ("02 06:00Z", "h@2025-11-02T01:00-05:00"),  # 01:00 EST
        ("02 07:00Z", "h@2025-11-02T02:00"),
    ]
    hourly = fire_times(cron("@hourly", "America/New_York"), "h", after=z(11, 2, 3, 30),
                        count=4)
    assert [f.utc for f in hourly] == [f.utc for f in fires]


def test_spring_forward_keeps_the_real_cadence_too() -> None:
    # 2025-03-30: at 01:00 GMT London jumps to 02:00 BST; 01:30 does not happen
    fires = fire_times(cron("30 * * * *"), "h", after=z(3, 30, 0), count=3)
    assert rows(fires) == [("30 00:30Z", "h@2025-03-30T00:30"),
                           ("30 01:30Z", "h@2025-03-30T02:30"),
                           ("30 02:30Z", "h@2025-03-30T03:30")]


def test_daily_and_weekly_schedules_still_fire_once_per_wall_clock_time() -> None:
    daily = fire_times(calendar("1:30"), "d", after=z(10, 25, 12), count=2)
    assert rows(daily) == [("26 00:30Z", "d@2025-10-26T01:30"),  # the first 01:30 only
                           ("02 01:30Z", "d@2025-11-02T01:30")]
    # a daily window of quarter hours is not hourly: its times fire once each
    window = fire_times(cron("*/15 1 * * *"), "w", after=z(10, 25, 23, 50), count=5)
    assert rows(window) == [("26 00:00Z", "w@2025-10-26T01:00"),
                            ("26 00:15Z", "w@2025-10-26T01:15"),
                            ("26 00:30Z", "w@2025-10-26T01:30"),
                            ("26 00:45Z", "w@2025-10-26T01:45"),
                            ("27 01:00Z", "w@2025-10-27T01:00")]
    second = fire_for(calendar("1:30"), "d", z(10, 26, 1, 30))
    assert (second.key, second.repeat) == ("d@2025-10-26T01:30", False)  # already fired


def test_the_two_fires_of_one_wall_time_get_two_keys() -> None:
    schedule = cron("*/15 * * * *")
    bst = fire_for(schedule, "q", z(10, 26, 0, 15))
    gmt = fire_for(schedule, "q", z(10, 26, 1, 15))
    assert bst.local == gmt.local == datetime(2025, 10, 26, 1, 15)
    assert (bst.key, gmt.key) == ("q@2025-10-26T01:15", "q@2025-10-26T01:15+00:00")
    assert (bst.repeat, gmt.repeat) == (False, True)
    # an instant off the schedule in the second 01:xx (a manual fire) is its own key too
    off = fire_for(schedule, "q", z(10, 26, 1, 7))
    assert (off.key, off.repeat) == ("q@2025-10-26T01:07+00:00", True)


@pytest.mark.parametrize(("schedule", "hourly"), [
    (cron("*/15 * * * *"), True),
    (cron("@hourly"), True),
    (cron("0 0-23 * * *"), True),
    (cron("5,35 * * * 1-5"), True),
    (cron("0 */2 * * *"), False),
    (cron("*/15 1 * * *"), False),
    (cron("30 2 * * *"), False),
    (calendar("9:00"), False),
])
def test_which_schedules_keep_real_time(schedule: Schedule, hourly: bool) -> None:
    assert keeps_real_time(schedule) is hourly
