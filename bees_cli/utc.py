"""One UTC timestamp format for all of Bees: RFC 3339 text with microseconds and ``Z``.

Every layer may import this module (it imports only the standard library). Times are
written with :func:`format_utc` and read with :func:`parse_utc`, which also reads the
precisions Bees wrote before (seconds, milliseconds) and ``+00:00`` for ``Z``, so older
files and databases still read. Compare times as ``datetime`` or as integer
microseconds (:func:`to_us`), never as text: ``09:00:00Z`` sorts after ``09:00:00.5Z``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""The Unix epoch, in UTC."""


def utc_now() -> datetime:
    """Return the current time as an aware ``datetime`` in UTC (the default clock)."""
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """Return the aware ``moment`` converted to UTC.

    Raises:
        ValueError: ``moment`` is naive (no zone): its instant is unknown.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"a time must carry a zone, got the naive time {moment.isoformat()}")
    return moment.astimezone(UTC)


def format_utc(moment: datetime) -> str:
    """Return ``moment`` as RFC 3339 text in UTC with microseconds and ``Z``.

    E.g. ``2025-01-06T09:00:00.000000Z``.

    Args:
        moment: an aware ``datetime`` in any zone.

    Returns:
        27 characters, always the same precision, so equal times give equal text.

    Raises:
        ValueError: ``moment`` is naive (no zone).
    """
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def display_utc(moment: datetime) -> str:
    """Return ``moment`` as UTC text to whole seconds, for people: ``2025-01-06T09:00:00Z``.

    Display only: stored and compared times are written with :func:`format_utc`.

    Raises:
        ValueError: ``moment`` is naive (no zone).
    """
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(text: str) -> datetime:
    """Return the time written in ``text`` as an aware ``datetime`` in UTC.

    Reads ISO 8601 / RFC 3339 text that carries a zone: ``Z`` or an offset such as
    ``+00:00``, with whole seconds, milliseconds or microseconds (what Bees wrote
    before this format was fixed).

    Args:
        text: e.g. ``2025-01-06T09:00:00Z``, ``2025-01-06T09:00:00.123Z``,
            ``2025-01-06T09:00:00.123456+00:00``.

    Returns:
        The same instant in UTC.

    Raises:
        ValueError: not an ISO 8601 time, or a time without a zone.
    """
    try:
        parsed = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"a time must carry a zone, e.g. 2025-01-06T09:00:00Z: {text!r}")
    return parsed.astimezone(UTC)


def to_us(moment: datetime) -> int:
    """Return ``moment`` as integer microseconds since the Unix epoch (UTC), exactly.

    Why: integers compare and index the same in Python, SQLite and PostgreSQL; floats
    of seconds lose microseconds and text compares by characters.

    Raises:
        ValueError: ``moment`` is naive (no zone).
    """
    delta = as_utc(moment) - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int) -> datetime:
    """Return integer microseconds since the Unix epoch as an aware ``datetime`` in UTC."""
    return EPOCH + timedelta(microseconds=value)
