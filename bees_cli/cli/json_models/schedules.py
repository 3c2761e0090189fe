"""``--json`` document of ``bees schedules``: each schedule, its next instants and last fires."""

from __future__ import annotations

from typing import Literal

from bees_cli.cli.json_models.base import Out, Part
from bees_cli.record.fires import FireOutcome
from bees_cli.record.views import UtcTime


class FireOut(Part):
    """One fire handled on this computer (``local``: the wall-clock time in the schedule's
    zone, no offset)."""

    key: str
    scheduled: UtcTime
    local: str
    handled: UtcTime
    outcome: FireOutcome
    detail: str | None
    """The outcome's detail: the item it ran as, the computer that took it, seconds late…"""
    tries: int


class Placement(Part):
    """Where one computer placed a wall-clock time: the instant and its tz database."""

    computer: str
    machine_id: str
    instant: UtcTime
    tz_version: str | None


class ZoneWarning(Part):
    """``zone_rules_disagree``: computers of the person placed the wall-clock ``local_time``
    of ``zone`` at different instants; it ran once, on ``holder``'s computer."""

    code: Literal["zone_rules_disagree"] = "zone_rules_disagree"
    local_time: str
    """The wall-clock time in ``zone``, no offset (``2025-01-06T09:00``)."""
    zone: str
    holder: Placement
    others: list[Placement]


class ScheduleOut(Part):
    """One schedule: fires here or why not, its next instants, this computer's last fires."""

    schedule: str
    process: str
    owner: str
    timezone: str
    enabled: bool
    fires_here: bool
    why_not: Literal["disabled", "no_person", "not_owner"] | None
    """Why it does not fire here: disabled, no person signed in here, or ``owner`` is
    another person."""
    next: list[UtcTime]
    last: list[FireOut]
    warnings: list[ZoneWarning]


class SchedulesOut(Out):
    """``bees schedules``."""

    schedules: list[ScheduleOut]
