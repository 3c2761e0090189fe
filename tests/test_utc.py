"""The one UTC format: written at one precision, read at every precision Bees wrote."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bees_cli.utc import display_utc, format_utc, from_us, parse_utc, to_us


def test_format_is_rfc3339_with_microseconds_and_z() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_utc(datetime(2025, 1, 6, 11, 0, tzinfo=plus_two)) == (
        "2025-01-06T09:00:00.000000Z"
    )
    assert format_utc(datetime(2025, 1, 6, 9, 0, 0, 120, tzinfo=UTC)) == (
        "2025-01-06T09:00:00.000120Z"
    )


@pytest.mark.parametrize(
    ("text", "micro"),
    [
        ("2025-01-06T09:00:00Z", 0),  # record/local.py, workflows.py: seconds
        ("2025-01-06T09:00:00.123Z", 123_000),  # record/fires.py, SQLite %f: milliseconds
        ("2025-01-06T09:00:00.123456Z", 123_456),  # engine/actions.py, checkpoint: micro
        ("2025-01-06T09:00:00+00:00", 0),  # isoformat() of an aware UTC time
        ("2025-01-06T11:00:00.5+02:00", 500_000),  # another zone: normalised to UTC
    ],
)
def test_parse_reads_every_precision_written_today(text: str, micro: int) -> None:
    parsed = parse_utc(text)
    assert parsed == datetime(2025, 1, 6, 9, 0, 0, micro, tzinfo=UTC)
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2025-01-06T09:00:00", "a time must carry a zone, e.g. 2025-01-06T09:00:00Z: "),
        ("yesterday", "not an ISO 8601 time: "),
    ],
)
def test_parse_refuses_naive_and_bad_text(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_utc(text)
    assert str(caught.value) == f"{message}{text!r}"


def test_naive_times_are_refused_when_written() -> None:
    with pytest.raises(ValueError):
        format_utc(datetime(2025, 1, 6, 9))
    with pytest.raises(ValueError):
        to_us(datetime(2025, 1, 6, 9))


def test_microseconds_are_exact() -> None:
    assert to_us(datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC)) == 1_000_001
    assert to_us(datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)) == -1
    assert from_us(1_736_154_000_000_000) == datetime(2025, 1, 6, 9, tzinfo=UTC)


aware = st.datetimes(
    datetime(1900, 1, 2), datetime(2200, 1, 1), timezones=st.just(UTC)
).flatmap(lambda moment: st.integers(-14 * 60, 14 * 60).map(
    lambda minutes: moment.astimezone(timezone(timedelta(minutes=minutes)))
))


@given(aware, aware)
def test_text_order_is_time_order_and_round_trips(a: datetime, b: datetime) -> None:
    assert parse_utc(format_utc(a)) == a
    assert from_us(to_us(a)) == a
    assert (format_utc(a) < format_utc(b)) == (a < b) == (to_us(a) < to_us(b))


def test_display_is_whole_seconds_in_utc() -> None:
    moment = datetime(2025, 1, 6, 10, 0, 7, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert display_utc(moment) == "2025-01-06T09:00:07Z"
    with pytest.raises(ValueError, match="naive"):
        display_utc(datetime(2025, 1, 6, 9))
