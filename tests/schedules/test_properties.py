"""Properties of schedule timing over random zones, schedules and start instants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from bees_cli.schedules.times import fire_for, fire_times, keeps_real_time, schedule_key
from bees_cli.workspace.models import Schedule
from tests.support.examples import examples

ZONES = (
    "Europe/Paris",
    "America/New_York",
    "Australia/Lord_Howe",  # 30-minute changes at 02:00
    "America/Santiago",  # changes at midnight
    "Pacific/Chatham",  # +12:45/+13:45, changes at 02:45
)
START = datetime(2026, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=2 * 365)

TIMES = ("0:00", "0:30", "1:30", "2:00", "2:15", "2:30", "2:45", "3:00", "3:30", "9:00", "23:30")
CRONS = (
    "30 2 * * *",
    "*/15 * * * *",
    "*/20 1-3 * * *",
    "0 9 * * 1",
    "45 2 * * 0",
    "@daily",
    "@hourly",
    "0,30 0-3 * * *",
    "10-50/10 23,0,1,2 * * *",
    "30 * * * *",
    "0,20,45 * * * 1-5",
)
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """UTC hours at which the zone's offset changes within the two years tested."""
    zone = ZoneInfo(zone_name)
    found = []
    previous = START.astimezone(zone).utcoffset()
    hour = START
    while hour < START + SPAN:
        hour += timedelta(hours=1)
        offset = hour.astimezone(zone).utcoffset()
        if offset != previous:
            found.append(hour)
        previous = offset
    return tuple(found)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Schedule, datetime, int]:
    zone = draw(st.sampled_from(ZONES))
    data: dict[str, Any] = {"process": "p", "owner": "maya@example.com", "timezone": zone}
    if draw(st.booleans()):
        data["cron"] = draw(st.sampled_from(CRONS))
    else:
        days = draw(st.lists(st.sampled_from(DAYS), min_size=1, max_size=7, unique=True))
        hhmm = draw(
            st.one_of(
                st.sampled_from(TIMES),
                st.builds("{}:{:02d}".format, st.integers(0, 23), st.integers(0, 59)),
            )
        )
        data["calendar"] = {"days": days, "time": hhmm}
    if draw(st.booleans()):  # near a daylight-saving change, where the rules bite
        anchor = draw(st.sampled_from(transitions(zone)))
        after = anchor + timedelta(seconds=draw(st.integers(-36 * 3600, 36 * 3600)))
    else:
        after = START + timedelta(seconds=draw(st.integers(0, int(SPAN.total_seconds()))))
    return Schedule.model_validate(data), after, draw(st.integers(1, 25))


@settings(max_examples=examples(300), deadline=None)
@given(cases())
def test_fires_are_increasing_unique_and_consistent(case: tuple[Schedule, datetime, int]) -> None:
    schedule, after, count = case
    zone = ZoneInfo(schedule.timezone)
    fires = fire_times(schedule, "s", after=after, count=count)

    assert len(fires) == count
    instants = [f.utc for f in fires]
    assert all(a < b for a, b in zip([after, *instants], instants, strict=False))
    assert all(t.tzinfo is UTC and t.second == 0 and t.microsecond == 0 for t in instants)
    keys = [f.key for f in fires]
    assert len(set(keys)) == len(keys)
    assert keys == [schedule_key("s", f.local, f.utc.astimezone(zone).utcoffset() if f.repeat
                                 else None) for f in fires]

    if keeps_real_time(schedule):
        # Hourly or more often: every real instant whose wall-clock time matches fires,
        # the second occurrence of a repeated time under its own key, and nothing else.
        assert schedule.cron is not None
        expected, minute = [], after.replace(second=0, microsecond=0)
        while minute < fires[-1].utc:
            minute += timedelta(minutes=1)
            if minute > after and croniter.match(schedule.cron,
                                                 minute.astimezone(zone).replace(tzinfo=None)):
                expected.append(minute)
        assert instants == expected
        for fire in fires:
            assert fire.utc.astimezone(zone).replace(tzinfo=None) == fire.local
            first = fire.local.replace(tzinfo=zone).astimezone(UTC)
            assert fire.repeat == (first != fire.utc)
            assert fire_for(schedule, "s", fire.utc) == fire
        assert fire_times(schedule, "s", after=fires[0].utc, count=count - 1) == fires[1:]
        return

    for fire in fires:
        first = fire.local.replace(tzinfo=zone).astimezone(UTC)
        if first.astimezone(zone).replace(tzinfo=None) == fire.local:
            # An existing wall-clock time fires at its first occurrence; a second
            # occurrence, if any, maps back to the same key.
            assert fire.utc == first
            second = fire.local.replace(tzinfo=zone, fold=1).astimezone(UTC)
            assert fire_for(schedule, "s", second).key == fire.key
        else:
            # A skipped time fires at the first existing minute after it.
            shown = fire.utc.astimezone(zone).replace(tzinfo=None)
            before = (fire.utc - timedelta(minutes=1)).astimezone(zone).replace(tzinfo=None)
            assert before < fire.local < shown <= fire.local + timedelta(hours=1)
        assert fire_for(schedule, "s", fire.utc) == fire

    # A later window agrees with an earlier one: no time fires twice, none is lost.
    assert fire_times(schedule, "s", after=fires[0].utc, count=count - 1) == fires[1:]
