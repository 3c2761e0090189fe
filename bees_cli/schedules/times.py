"""When a schedule fires: wall-clock times in its zone, their UTC instants and their keys.

A schedule is written in wall-clock time (``every Monday at 9:00`` in ``Europe/Paris``),
while engines and clocks count UTC instants. This module is the one place that turns
one into the other, so daylight-saving rules are decided here and nowhere else. Every
function is pure: no clock, no network, no engine.

The rules (issue 6; issue 23, point 5), which depend on how often a schedule fires:

Daily and weekly schedules (every ``calendar`` schedule, and a ``cron`` that does not
fire in every hour, see :func:`keeps_real_time`): one wall-clock time fires at most once,
also across daylight-saving changes.

- A wall-clock time that happens twice (the repeated hour when clocks go back) fires
  once, at its first occurrence (``fold=0``).
- A wall-clock time that does not happen (the skipped hour when clocks go forward)
  fires at the next wall-clock minute that exists: 02:30 in ``Europe/Paris`` on the
  spring-forward Sunday fires at 03:00 local, 01:00 UTC.
- When several wall-clock times land on the same instant that way (02:15 and 02:45
  both land on 03:00), the instant fires once, under the key of the earliest of them.

Hourly and more frequent schedules (a ``cron`` whose hour field is every hour:
``*/15 * * * *``, ``@hourly``) keep real-time cadence, as cron does for jobs with a
wildcard hour: they fire at every real instant whose wall-clock time they match. Through
a repeated hour they fire at both occurrences of each of its times (``*/15`` in
``Europe/London`` on 2025-10-26: 00:45Z, 01:00Z, 01:15Z… 02:00Z); a time in a skipped
hour does not happen, so it does not fire (the cadence goes on from the new time).

Each fire is keyed by the schedule id and its wall-clock time, never by UTC, so every
computer of a person computes the same key for the same fire (see :func:`schedule_key`);
the second occurrence of a repeated time, which only an hourly schedule fires, adds its
UTC offset (``…T01:15+00:00``) so the two fires have two keys. Bees Cloud hands each key
out once.
"""

from __future__ import annotations

import heapq
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

from bees_cli.errors import UserError
from bees_cli.workspace.models import TITLE_FIELDS, Schedule

KEY_TIME_FORMAT = "%Y-%m-%dT%H:%M"
"""strftime format of the wall-clock part of a schedule key, e.g. ``2026-11-30T09:00``."""

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MINUTE = timedelta(minutes=1)
_HOUR = timedelta(hours=1)
_LONGEST_GAP = timedelta(days=2)
"""Longer than any skipped stretch of wall-clock time in the tz database (a day, Samoa 2011)."""


@dataclass(frozen=True)
class Fire:
    """One fire of a schedule.

    Attributes:
        local: the schedule's wall-clock time for this fire, naive, in the schedule's time
            zone, to the minute. In a skipped hour it is the written time (02:30), which
            did not happen on that day; ``utc`` says when it really fires.
        utc: the instant it fires at, aware, in UTC.
        key: the schedule key, ``schedule_key(schedule_id, local)``; for a ``repeat``,
            ``schedule_key(schedule_id, local, offset)`` with the zone's UTC offset at
            ``utc``.
        repeat: True for the second occurrence of a wall-clock time in a repeated hour
            (clocks went back), which only a schedule that keeps real-time cadence fires
            (:func:`keeps_real_time`).
    """

    local: datetime
    utc: datetime
    key: str
    repeat: bool = False


def schedule_key(schedule_id: str, local: datetime, offset: timedelta | None = None) -> str:
    """Build the schedule key of one fire: ``SCHEDULE_ID@YYYY-MM-DDTHH:MM[+HH:MM]``.

    Format: the schedule id (its file name without ``.yaml``), ``@``, then the wall-clock
    date and time in the schedule's own time zone, 24 h, to the minute, e.g.
    ``monday-report@2026-11-30T09:00``. Seconds are dropped. Only the second occurrence
    of a repeated wall-clock time (an hourly schedule's, :attr:`Fire.repeat`) is given
    ``offset``, the zone's UTC offset then: ``quarter@2025-10-26T01:15+00:00``.

    Why: no UTC, so the same wall-clock time gives the same key on every computer
    whatever its own zone; a daily time in a repeated hour gives one key (it fires at
    most once), while an hourly schedule's two fires at 01:15 BST and 01:15 GMT give two.
    The person is not in the string: Bees Cloud scopes keys per person itself.

    Args:
        schedule_id: the schedule's name, e.g. ``monday-report``.
        local: the wall-clock time, naive, in the schedule's zone.
        offset: the UTC offset of a second occurrence, or None.

    Returns:
        The key string.

    Raises:
        ValueError: ``local`` carries a time zone (a bug: keys are built from wall time).
    """
    if local.tzinfo is not None:
        raise ValueError("schedule_key takes a naive wall-clock time, not an aware datetime")
    key = f"{schedule_id}@{local.strftime(KEY_TIME_FORMAT)}"
    if offset is None:
        return key
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{key}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def keeps_real_time(schedule: Schedule) -> bool:
    """Tell whether a schedule fires hourly or more often, and so keeps real-time cadence.

    A ``cron`` whose hour field matches every hour (``*``, ``*/1``, ``0-23``; any minutes,
    days and months: ``*/15 * * * *``, ``@hourly``, ``0 * * * 1-5``) fires at every real
    instant whose wall-clock time it matches, twice through a repeated hour (the module
    rules). Every ``calendar`` schedule (a time on some days) and any other ``cron``
    (``0 */2 * * *``, ``*/15 1 * * *``) fires once per wall-clock time.

    Why: cron (Debian's and others) keeps real-time cadence for jobs with a wildcard hour,
    so an hourly check does not go silent for an hour when clocks go back.

    Args:
        schedule: the schedule.

    Returns:
        True for an hourly or more frequent ``cron``.
    """
    if schedule.cron is None:
        return False
    hours = croniter(schedule.cron).expanded[1]
    return hours == ["*"] or set(hours) == set(range(24))


def fire_times(schedule: Schedule, schedule_id: str, *, after: datetime, count: int) -> list[Fire]:
    """Return the next ``count`` fires of a schedule strictly after the instant ``after``.

    Calendar schedules fire on their ``days`` at their ``time``; cron schedules are
    evaluated on wall-clock times of the schedule's zone (not on UTC). Daylight-saving
    changes follow the module rules: a daily or weekly schedule fires a repeated time once
    at its first occurrence, a skipped time at the next existing minute, one instant once;
    an hourly or more frequent one (:func:`keeps_real_time`) fires at every real instant
    whose wall-clock time it matches, both occurrences of a repeated time included.
    ``schedule.enabled`` is not looked at: that is the caller's business.

    Args:
        schedule: the schedule (``cron`` or ``calendar``, and ``timezone``).
        schedule_id: its name, used in each fire's key.
        after: an aware instant (any zone; compared in UTC). A fire exactly at ``after``
            is not returned.
        count: how many fires to return (0 or more).

    Returns:
        Up to ``count`` fires, ``utc`` strictly increasing and keys unique. Fewer only for
        a cron expression that never matches again (e.g. ``0 0 30 2 *``).

    Raises:
        ValueError: ``after`` is naive or ``count`` is negative.
    """
    _require_aware(after, "after")
    if count < 0:
        raise ValueError(f"count must be 0 or more, got {count}")
    zone = ZoneInfo(schedule.timezone)
    after_utc = after.astimezone(UTC)
    # Wall-clock times up to the local time of `after` resolve to instants at or before
    # it, so walking on from there misses nothing (resolution never goes backwards).
    start = after_utc.astimezone(zone).replace(tzinfo=None)
    candidates = (_real_time_fires(schedule, schedule_id, after_utc, zone)
                  if keeps_real_time(schedule)
                  else _wall_clock_fires(schedule, schedule_id, start, zone))
    fires: list[Fire] = []
    last = after_utc
    for fire in candidates:
        if len(fires) == count:
            break
        if fire.utc <= last:
            continue  # before `after`, or an instant an earlier wall-clock time took
        fires.append(fire)
        last = fire.utc
    return fires


def fire_for(schedule: Schedule, schedule_id: str, scheduled_utc: datetime) -> Fire:
    """Return the fire for the instant an engine fired at, with its wall-clock time and key.

    When the instant (floored to the minute) is one of :func:`fire_times`, that fire is
    returned, so a skipped-hour fire at 03:00 keeps its key ``…T02:30`` and an hourly
    schedule's second 01:15 its key ``…T01:15+00:00``. Otherwise the fire is built from the
    wall-clock time the instant shows in the schedule's zone: the second occurrence of a
    daily or weekly schedule's repeated time therefore gets the same key as the first, and
    is refused ("already fired here"). An instant that is not on the schedule at all (a
    test or manual fire) gets the key of its own wall-clock minute (with the offset in the
    second occurrence of a repeated hour, for an hourly schedule).

    Args:
        schedule: the schedule.
        schedule_id: its name, used in the key.
        scheduled_utc: the aware instant the engine scheduled the fire for (e.g.
            Temporal's scheduled start time), not the time it actually started.

    Returns:
        The fire. Its ``utc`` is ``scheduled_utc`` floored to the minute (for a second
        occurrence, that second instant; ``local`` and ``key`` are those of the first).

    Raises:
        ValueError: ``scheduled_utc`` is naive.
    """
    _require_aware(scheduled_utc, "scheduled_utc")
    instant = scheduled_utc.astimezone(UTC).replace(second=0, microsecond=0)
    upcoming = fire_times(schedule, schedule_id, after=instant - _MINUTE, count=1)
    if upcoming and upcoming[0].utc == instant:
        return upcoming[0]
    zone = ZoneInfo(schedule.timezone)
    local = instant.astimezone(zone).replace(tzinfo=None)
    if keeps_real_time(schedule) and _instants(local, zone)[0] != instant:
        return _repeat(schedule_id, local, instant, zone)
    return Fire(local=local, utc=instant, key=schedule_key(schedule_id, local))


def lateness(scheduled_utc: datetime, now_utc: datetime) -> float:
    """Return how late a fire starts: seconds from its scheduled instant to now.

    Args:
        scheduled_utc: the aware instant the fire was scheduled for.
        now_utc: the aware instant it is handled at.

    Returns:
        Seconds, negative when early.

    Raises:
        ValueError: either datetime is naive.
    """
    _require_aware(scheduled_utc, "scheduled_utc")
    _require_aware(now_utc, "now_utc")
    return (now_utc - scheduled_utc).total_seconds()



def item_title(schedule: Schedule, schedule_id: str, fire: Fire) -> str:
    """Fill a schedule's title template for one fire.

    Placeholders: ``{schedule}`` (the schedule id), ``{date}`` (``YYYY-MM-DD``) and
    ``{time}`` (``HH:MM``), both from ``fire.local``, the wall-clock time in the
    schedule's zone. ``{{`` and ``}}`` stand for literal braces.

    Args:
        schedule: the schedule, whose ``title`` is the template.
        schedule_id: its name.
        fire: the fire being turned into a work item.

    Returns:
        The title.

    Raises:
        UserError: the template has a stray brace, or a placeholder other than the three
            (including format specs and conversions); names the schedule and the
            placeholder.
    """
    template = schedule.title
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        raise UserError(
            f"schedule '{schedule_id}': unbalanced '{{' or '}}' in title {template!r}",
            hint="write '{{' or '}}' for a literal brace",
        ) from None
    values = {
        "schedule": schedule_id,
        "date": fire.local.strftime("%Y-%m-%d"),
        "time": fire.local.strftime("%H:%M"),
    }
    allowed = ", ".join("{" + name + "}" for name in TITLE_FIELDS)
    pieces: list[str] = []
    for text, field, spec, conversion in parts:
        pieces.append(text)
        if field is None:
            continue
        if field not in values or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "")
            shown += (f":{spec}" if spec else "") + "}"
            raise UserError(
                f"schedule '{schedule_id}': unknown placeholder '{shown}' in title {template!r}",
                hint=f"use only {allowed}",
            )
        pieces.append(values[field])
    return "".join(pieces)


def utc_calendar(fires: Iterable[Fire]) -> list[dict[str, int]]:
    """Return each fire's exact UTC instant as calendar fields, for an engine's schedule.

    Why: the engine registers these exact instants (e.g. a Temporal Schedule spec in UTC
    for the next N fires) instead of a cron in the local zone, so daylight-saving
    decisions stay in this module.

    Args:
        fires: fires, e.g. from :func:`fire_times`.

    Returns:
        One ``{"year", "month", "day", "hour", "minute"}`` dict per fire, in UTC, in the
        order given.
    """
    instants = [fire.utc.astimezone(UTC) for fire in fires]
    return [
        {"year": t.year, "month": t.month, "day": t.day, "hour": t.hour, "minute": t.minute}
        for t in instants
    ]


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime (UTC), got a naive one: {value}")


def _wall_times(schedule: Schedule, start: datetime) -> Iterator[datetime]:
    """Yield the schedule's wall-clock times after ``start`` (naive, local), in order.

    Times up to and including ``start``'s minute may be yielded too; the caller filters.
    """
    if schedule.cron is not None:
        matches = croniter(schedule.cron, start - _MINUTE)
        while True:
            try:
                yield matches.get_next(datetime)
            except CroniterBadDateError:
                return
    assert schedule.calendar is not None
    hour, minute = (int(part) for part in schedule.calendar.time.split(":"))
    at = time(hour, minute)
    weekdays = {_WEEKDAYS.index(day) for day in schedule.calendar.days}
    day: date = start.date()
    while True:
        if day.weekday() in weekdays:
            yield datetime.combine(day, at)
        day += timedelta(days=1)


def _wall_clock_fires(schedule: Schedule, schedule_id: str, start: datetime,
                      zone: ZoneInfo) -> Iterator[Fire]:
    """Yield a daily or weekly schedule's fires from the wall-clock time ``start`` on, one
    per wall-clock time (module rules); instants never decrease, some may repeat."""
    for local in _wall_times(schedule, start):
        yield Fire(local=local, utc=_resolve(local, zone), key=schedule_key(schedule_id, local))


def _real_time_fires(schedule: Schedule, schedule_id: str, after_utc: datetime,
                     zone: ZoneInfo) -> Iterator[Fire]:
    """Yield an hourly schedule's fires at every real instant whose wall-clock time matches,
    in instant order, from about ``after_utc`` on (earlier ones too; the caller filters).

    Wall-clock times are walked in order and each gives 0 (skipped), 1 or 2 (repeated)
    instants. The second occurrence of a time comes after the first occurrences of later
    times (01:00 GMT after 01:45 BST), so instants wait in a heap until no later wall-clock
    time can give an earlier one: the first instant of each time never goes backwards.
    """
    # The walk starts early enough for a second occurrence whose wall-clock time is
    # before the local time of `after` (after = 01:50 BST: 01:00 GMT is still to come).
    offsets = [(after_utc + step * _HOUR).astimezone(zone).utcoffset() or timedelta(0)
               for step in range(int(_LONGEST_GAP / _HOUR) + 1)]
    start = (after_utc + min(offsets)).replace(tzinfo=None)
    waiting: list[tuple[datetime, bool, datetime]] = []
    for local in _wall_times(schedule, start):
        instants = _instants(local, zone)
        for number, instant in enumerate(instants):
            heapq.heappush(waiting, (instant, number == 1, local))
        if instants:
            while waiting and waiting[0][0] <= instants[0]:
                yield _fire(schedule_id, *heapq.heappop(waiting), zone)
    while waiting:
        yield _fire(schedule_id, *heapq.heappop(waiting), zone)


def _fire(schedule_id: str, instant: datetime, repeat: bool, local: datetime,
          zone: ZoneInfo) -> Fire:
    if repeat:
        return _repeat(schedule_id, local, instant, zone)
    return Fire(local=local, utc=instant, key=schedule_key(schedule_id, local))


def _repeat(schedule_id: str, local: datetime, instant: datetime, zone: ZoneInfo) -> Fire:
    """The fire at the second occurrence ``instant`` of the wall-clock time ``local``."""
    offset = instant.astimezone(zone).utcoffset()
    return Fire(local=local, utc=instant, key=schedule_key(schedule_id, local, offset),
                repeat=True)


def _instants(local: datetime, zone: ZoneInfo) -> list[datetime]:
    """Return the UTC instants at which the wall-clock time ``local`` happens in ``zone``:
    none (skipped), one, or two (a repeated hour), in order."""
    found = []
    for fold in (0, 1):
        instant = local.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == local and instant not in found:
            found.append(instant)
    return sorted(found)


def _resolve(local: datetime, zone: ZoneInfo) -> datetime:
    """Return the UTC instant a wall-clock time fires at (module rule).

    An existing time resolves with ``fold=0`` (its first occurrence when repeated); a time
    in a skipped stretch resolves to the first later wall-clock minute that exists.
    """
    candidate = local
    while candidate - local <= _LONGEST_GAP:
        instant = candidate.replace(tzinfo=zone).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == candidate:
            return instant
        candidate += _MINUTE
    raise AssertionError(f"no existing wall-clock minute within 2 days after {local} in {zone}")
