"""Schedule timing: wall-clock fires, daylight-saving rules, keys, lateness, titles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bees_cli.errors import UserError
from bees_cli.rules import is_late
from bees_cli.schedules.times import (
    Fire,
    fire_for,
    fire_times,
    item_title,
    lateness,
    schedule_key,
    utc_calendar,
)
from bees_cli.workspace.models import Schedule

DAILY = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def make(
    *,
    cron: str | None = None,
    days: list[str] | None = None,
    at: str = "9:00",
    timezone: str = "Europe/Paris",
    title: str = "{schedule} {date}",
) -> Schedule:
    data: dict[str, Any] = {
        "process": "weekly-report",
        "owner": "maya@example.com",
        "timezone": timezone,
        "title": title,
    }
    if cron is not None:
        data["cron"] = cron
    else:
        data["calendar"] = {"days": days or ["monday"], "time": at}
    return Schedule.model_validate(data)


def z(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    """An aware UTC datetime."""
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    """A naive wall-clock datetime."""
    return datetime(year, month, day, hour, minute, second)


def rows(fires: list[Fire]) -> list[tuple[str, str, str]]:
    """(local, utc, key) of each fire, as short strings that read like the expectations."""
    return [
        (f.local.strftime("%Y-%m-%d %H:%M"), f.utc.strftime("%Y-%m-%d %H:%MZ"), f.key)
        for f in fires
    ]


# ---- calendar schedules ----------------------------------------------------------------


def test_monday_nine_paris_normal_weeks() -> None:
    fires = fire_times(make(), "monday-report", after=z(2026, 1, 1), count=3)
    assert rows(fires) == [
        ("2026-01-05 09:00", "2026-01-05 08:00Z", "monday-report@2026-01-05T09:00"),
        ("2026-01-12 09:00", "2026-01-12 08:00Z", "monday-report@2026-01-12T09:00"),
        ("2026-01-19 09:00", "2026-01-19 08:00Z", "monday-report@2026-01-19T09:00"),
    ]
    assert all(f.utc.tzinfo is UTC and f.local.tzinfo is None for f in fires)


def test_monday_nine_paris_across_both_changes() -> None:
    spring = fire_times(make(), "monday-report", after=z(2026, 3, 20), count=2)
    assert rows(spring) == [
        ("2026-03-23 09:00", "2026-03-23 08:00Z", "monday-report@2026-03-23T09:00"),
        ("2026-03-30 09:00", "2026-03-30 07:00Z", "monday-report@2026-03-30T09:00"),
    ]
    autumn = fire_times(make(), "monday-report", after=z(2026, 10, 20), count=2)
    assert rows(autumn) == [
        ("2026-10-26 09:00", "2026-10-26 08:00Z", "monday-report@2026-10-26T09:00"),
        ("2026-11-02 09:00", "2026-11-02 08:00Z", "monday-report@2026-11-02T09:00"),
    ]


def test_after_is_strict_and_any_zone_is_accepted() -> None:
    schedule = make()
    at_fire = z(2026, 1, 5, 8, 0)
    assert fire_times(schedule, "r", after=at_fire, count=1)[0].utc == z(2026, 1, 12, 8, 0)
    just_before = at_fire - timedelta(microseconds=1)
    assert fire_times(schedule, "r", after=just_before, count=1)[0].utc == at_fire
    tokyo = at_fire.astimezone(ZoneInfo("Asia/Tokyo"))
    assert fire_times(schedule, "r", after=tokyo, count=1)[0].utc == z(2026, 1, 12, 8, 0)


def test_several_days() -> None:
    schedule = make(days=["friday", "monday"], at="17:45", timezone="UTC")
    fires = fire_times(schedule, "s", after=z(2026, 1, 1), count=3)
    assert [f.utc for f in fires] == [
        z(2026, 1, 2, 17, 45),
        z(2026, 1, 5, 17, 45),
        z(2026, 1, 9, 17, 45),
    ]


def test_daily_0230_paris_spring_forward_fires_at_0300_local() -> None:
    every_day = make(days=DAILY, at="2:30")
    fires = fire_times(every_day, "night", after=z(2026, 3, 28), count=3)
    assert rows(fires) == [
        ("2026-03-28 02:30", "2026-03-28 01:30Z", "night@2026-03-28T02:30"),
        # 02:30 does not exist that Sunday: fires at 03:00 CEST, 01:00 UTC; key keeps 02:30.
        ("2026-03-29 02:30", "2026-03-29 01:00Z", "night@2026-03-29T02:30"),
        ("2026-03-30 02:30", "2026-03-30 00:30Z", "night@2026-03-30T02:30"),
    ]


def test_daily_0230_paris_fall_back_fires_once_at_first_occurrence() -> None:
    sunday = make(days=["sunday", "saturday", "monday"], at="2:30")
    fires = fire_times(sunday, "night", after=z(2026, 10, 24), count=3)
    assert rows(fires) == [
        ("2026-10-24 02:30", "2026-10-24 00:30Z", "night@2026-10-24T02:30"),
        # 02:30 happens twice (00:30Z in CEST, 01:30Z in CET): only the first fires.
        ("2026-10-25 02:30", "2026-10-25 00:30Z", "night@2026-10-25T02:30"),
        ("2026-10-26 02:30", "2026-10-26 01:30Z", "night@2026-10-26T02:30"),
    ]
    # Starting between the two occurrences: the second one is never a fire.
    between = fire_times(sunday, "night", after=z(2026, 10, 25, 1, 0), count=1)
    assert rows(between) == [("2026-10-26 02:30", "2026-10-26 01:30Z", "night@2026-10-26T02:30")]


def test_new_york_spring_forward_and_fall_back() -> None:
    spring = make(days=DAILY, at="2:30", timezone="America/New_York")
    assert rows(fire_times(spring, "ny", after=z(2026, 3, 7), count=3)) == [
        ("2026-03-07 02:30", "2026-03-07 07:30Z", "ny@2026-03-07T02:30"),
        ("2026-03-08 02:30", "2026-03-08 07:00Z", "ny@2026-03-08T02:30"),
        ("2026-03-09 02:30", "2026-03-09 06:30Z", "ny@2026-03-09T02:30"),
    ]
    autumn = make(days=DAILY, at="1:30", timezone="America/New_York")
    assert rows(fire_times(autumn, "ny", after=z(2026, 10, 31), count=3)) == [
        ("2026-10-31 01:30", "2026-10-31 05:30Z", "ny@2026-10-31T01:30"),
        ("2026-11-01 01:30", "2026-11-01 05:30Z", "ny@2026-11-01T01:30"),
        ("2026-11-02 01:30", "2026-11-02 06:30Z", "ny@2026-11-02T01:30"),
    ]
    monday = make(timezone="America/New_York")
    assert [f.utc for f in fire_times(monday, "ny", after=z(2026, 3, 1), count=2)] == [
        z(2026, 3, 2, 14, 0),
        z(2026, 3, 9, 13, 0),
    ]


# ---- cron schedules --------------------------------------------------------------------


def test_cron_0230_paris_spring_forward() -> None:
    fires = fire_times(make(cron="30 2 * * *"), "night", after=z(2026, 3, 28), count=3)
    assert rows(fires) == [
        ("2026-03-28 02:30", "2026-03-28 01:30Z", "night@2026-03-28T02:30"),
        ("2026-03-29 02:30", "2026-03-29 01:00Z", "night@2026-03-29T02:30"),
        ("2026-03-30 02:30", "2026-03-30 00:30Z", "night@2026-03-30T02:30"),
    ]


def test_cron_0230_paris_fall_back() -> None:
    fires = fire_times(make(cron="30 2 * * *"), "night", after=z(2026, 10, 24, 12), count=2)
    assert rows(fires) == [
        ("2026-10-25 02:30", "2026-10-25 00:30Z", "night@2026-10-25T02:30"),
        ("2026-10-26 02:30", "2026-10-26 01:30Z", "night@2026-10-26T02:30"),
    ]


def test_cron_is_evaluated_on_wall_clock_not_utc() -> None:
    # 9:00 on weekdays in Paris is 08:00Z in winter and 07:00Z in summer.
    fires = fire_times(make(cron="0 9 * * 1-5"), "w", after=z(2026, 3, 27), count=2)
    assert [f.utc for f in fires] == [z(2026, 3, 27, 8, 0), z(2026, 3, 30, 7, 0)]


def test_cron_steps_across_spring_forward() -> None:
    fires = fire_times(make(cron="*/20 1-3 * * *"), "s", after=z(2026, 3, 28, 12), count=7)
    assert rows(fires) == [
        ("2026-03-29 01:00", "2026-03-29 00:00Z", "s@2026-03-29T01:00"),
        ("2026-03-29 01:20", "2026-03-29 00:20Z", "s@2026-03-29T01:20"),
        ("2026-03-29 01:40", "2026-03-29 00:40Z", "s@2026-03-29T01:40"),
        # 02:00, 02:20, 02:40 and 03:00 all land on 03:00 CEST: one fire, the first key.
        ("2026-03-29 02:00", "2026-03-29 01:00Z", "s@2026-03-29T02:00"),
        ("2026-03-29 03:20", "2026-03-29 01:20Z", "s@2026-03-29T03:20"),
        ("2026-03-29 03:40", "2026-03-29 01:40Z", "s@2026-03-29T03:40"),
        ("2026-03-30 01:00", "2026-03-29 23:00Z", "s@2026-03-30T01:00"),
    ]


def test_cron_quarter_hours_in_the_gap_fire_once() -> None:
    fires = fire_times(make(cron="15,45 2 * * *"), "q", after=z(2026, 3, 29), count=2)
    assert rows(fires) == [
        ("2026-03-29 02:15", "2026-03-29 01:00Z", "q@2026-03-29T02:15"),
        ("2026-03-30 02:15", "2026-03-30 00:15Z", "q@2026-03-30T02:15"),
    ]


def test_cron_steps_across_fall_back() -> None:
    fires = fire_times(make(cron="*/20 1-3 * * *"), "s", after=z(2026, 10, 24, 12), count=9)
    utc = [f.utc.strftime("%d %H:%M") for f in fires]
    assert utc[0:3] == ["24 23:00", "24 23:20", "24 23:40"]  # 01:00-01:40 CEST
    assert utc[3:6] == ["25 00:00", "25 00:20", "25 00:40"]  # 02:00-02:40, first (CEST)
    assert utc[6:9] == ["25 02:00", "25 02:20", "25 02:40"]  # 03:00-03:40 CET
    assert len({f.key for f in fires}) == 9


def test_cron_shorthand_and_never_matching() -> None:
    daily = fire_times(make(cron="@daily"), "d", after=z(2026, 7, 1), count=1)
    assert rows(daily) == [("2026-07-02 00:00", "2026-07-01 22:00Z", "d@2026-07-02T00:00")]
    # validate refuses such a cron; a schedule built without validation still yields no fire
    never = make(cron="0 9 * * *").model_copy(update={"cron": "0 0 30 2 *"})
    assert fire_times(never, "never", after=z(2026, 1, 1), count=3) == []
    leap = fire_times(make(cron="15 2 29 2 *", timezone="UTC"), "l", after=z(2026, 1, 1), count=1)
    assert leap[0].utc == z(2028, 2, 29, 2, 15)


def test_fire_times_arguments() -> None:
    assert fire_times(make(), "r", after=z(2026, 1, 1), count=0) == []
    with pytest.raises(ValueError, match="aware"):
        fire_times(make(), "r", after=datetime(2026, 1, 1), count=1)
    with pytest.raises(ValueError, match="count"):
        fire_times(make(), "r", after=z(2026, 1, 1), count=-1)


# ---- keys and fire_for -----------------------------------------------------------------


def test_schedule_key_format() -> None:
    assert schedule_key("monday-report", local(2026, 11, 30, 9, 0)) == (
        "monday-report@2026-11-30T09:00"
    )
    assert schedule_key("r", local(2026, 1, 2, 3, 4, 59)) == "r@2026-01-02T03:04"
    with pytest.raises(ValueError, match="naive"):
        schedule_key("r", z(2026, 11, 30, 9, 0))


def test_fire_for_both_occurrences_of_a_repeated_hour_share_one_key() -> None:
    schedule = make(cron="30 2 * * *")
    first = fire_for(schedule, "night", z(2026, 10, 25, 0, 30))
    second = fire_for(schedule, "night", z(2026, 10, 25, 1, 30))
    assert first.key == second.key == "night@2026-10-25T02:30"
    assert first.local == second.local == local(2026, 10, 25, 2, 30)
    assert (first.utc, second.utc) == (z(2026, 10, 25, 0, 30), z(2026, 10, 25, 1, 30))
    ny = make(days=["sunday"], at="1:30", timezone="America/New_York")
    assert fire_for(ny, "ny", z(2026, 11, 1, 5, 30)).key == "ny@2026-11-01T01:30"
    assert fire_for(ny, "ny", z(2026, 11, 1, 6, 30)).key == "ny@2026-11-01T01:30"


def test_fire_for_skipped_hour_keeps_the_written_time() -> None:
    fire = fire_for(make(cron="30 2 * * *"), "night", z(2026, 3, 29, 1, 0))
    assert fire == Fire(local(2026, 3, 29, 2, 30), z(2026, 3, 29, 1, 0), "night@2026-03-29T02:30")
    steps = fire_for(make(cron="*/20 1-3 * * *"), "s", z(2026, 3, 29, 1, 0))
    assert steps.key == "s@2026-03-29T02:00"


def test_fire_for_matches_fire_times_and_takes_any_zone() -> None:
    schedule = make()
    fire = fire_times(schedule, "r", after=z(2026, 11, 29), count=1)[0]
    assert fire.key == "r@2026-11-30T09:00"
    assert fire_for(schedule, "r", fire.utc) == fire
    seconds_late = fire.utc + timedelta(seconds=42, microseconds=7)
    assert fire_for(schedule, "r", seconds_late) == fire
    tokyo = fire.utc.astimezone(ZoneInfo("Asia/Tokyo"))
    assert fire_for(schedule, "r", tokyo) == fire


def test_fire_for_an_instant_off_the_schedule_uses_its_wall_clock_minute() -> None:
    fire = fire_for(make(), "r", z(2026, 1, 6, 13, 7, 30))
    assert fire == Fire(local(2026, 1, 6, 14, 7), z(2026, 1, 6, 13, 7), "r@2026-01-06T14:07")
    with pytest.raises(ValueError, match="aware"):
        fire_for(make(), "r", datetime(2026, 1, 6, 13, 7))


# ---- lateness --------------------------------------------------------------------------


def test_lateness_boundary() -> None:
    at = z(2026, 11, 30, 8, 0)
    assert lateness(at, at + timedelta(seconds=60)) == 60.0
    assert is_late(at, at + timedelta(seconds=60)) is False
    assert lateness(at, at + timedelta(seconds=60, milliseconds=1)) == 60.001
    assert is_late(at, at + timedelta(seconds=60, milliseconds=1)) is True
    assert lateness(at, at - timedelta(seconds=2)) == -2.0
    assert is_late(at, at - timedelta(seconds=2)) is False
    assert is_late(at, at + timedelta(minutes=2)) is True
    with pytest.raises(ValueError, match="aware"):
        lateness(at, datetime(2026, 11, 30, 8, 1))


# ---- titles ----------------------------------------------------------------------------

MONDAY = Fire(local(2026, 11, 30, 9, 0), z(2026, 11, 30, 8, 0), "r@2026-11-30T09:00")


def test_title_default_and_all_fields() -> None:
    assert item_title(make(), "monday-report", MONDAY) == "monday-report 2026-11-30"
    schedule = make(title="{{Weekly}} {schedule}: {date} at {time}, {time}")
    assert item_title(schedule, "monday-report", MONDAY) == (
        "{Weekly} monday-report: 2026-11-30 at 09:00, 09:00"
    )
    assert item_title(make(title="plain"), "r", MONDAY) == "plain"


def test_title_uses_the_written_time_in_a_skipped_hour() -> None:
    schedule = make(cron="30 2 * * *", title="{date} {time}")
    fire = fire_for(schedule, "night", z(2026, 3, 29, 1, 0))
    assert item_title(schedule, "night", fire) == "2026-03-29 02:30"


@pytest.mark.parametrize(
    ("title", "shown"),
    [
        ("Report {week}", "'{week}'"),
        ("{date:%Y}", "'{date:%Y}'"),
        ("{time!r}", "'{time!r}'"),
        ("{}", "'{}'"),
        ("{date.year}", "'{date.year}'"),
    ],
)
def test_title_unknown_placeholder(title: str, shown: str) -> None:
    schedule = make().model_copy(update={"title": title})  # skip the model's own check
    with pytest.raises(UserError) as caught:
        item_title(schedule, "monday-report", MONDAY)
    assert "schedule 'monday-report'" in caught.value.message
    assert f"unknown placeholder {shown}" in caught.value.message
    assert caught.value.hint == "use only {schedule}, {date}, {time}"


@pytest.mark.parametrize("title", ["Report } {date}", "Report {date", "{"])
def test_title_stray_brace(title: str) -> None:
    schedule = make().model_copy(update={"title": title})
    with pytest.raises(UserError) as caught:
        item_title(schedule, "monday-report", MONDAY)
    assert caught.value.message == (
        f"schedule 'monday-report': unbalanced '{{' or '}}' in title {title!r}"
    )


# ---- engine calendar -------------------------------------------------------------------


def test_utc_calendar_exact_fields() -> None:
    fires = fire_times(make(cron="30 2 * * *"), "night", after=z(2026, 3, 28), count=3)
    assert utc_calendar(fires) == [
        {"year": 2026, "month": 3, "day": 28, "hour": 1, "minute": 30},
        {"year": 2026, "month": 3, "day": 29, "hour": 1, "minute": 0},
        {"year": 2026, "month": 3, "day": 30, "hour": 0, "minute": 30},
    ]
    assert utc_calendar([]) == []
