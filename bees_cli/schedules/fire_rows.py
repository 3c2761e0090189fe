"""The rows a fire writes in the fires table: one per fire, and "missed" ones at start.

Every fire leaves one row (:class:`~bees_cli.record.fires.FireOutcome`); a fire time that
passed with no row while ``bees run`` was down gets a "missed" row, never caught up
(:mod:`bees_cli.schedules.fires`, rule 6).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from bees_cli.record.fires import FireLog, FireOutcome, FireRow
from bees_cli.rules import is_late

if TYPE_CHECKING:
    from bees_cli.schedules.times import Fire
    from bees_cli.workspace.loader import Workspace

MISSED_LOOKBACK = 500
"""Most fire times of one schedule looked at for "missed" rows at start."""


def add_row(log: FireLog, schedule_id: str, scheduled: datetime, fire: Fire,
            handled: datetime, outcome: FireOutcome, detail: str | None,
            tries: int = 0) -> FireRow:
    """Write the row of fire ``fire`` of ``schedule_id`` at ``scheduled`` (its wall-clock
    time in the schedule's zone, no offset) and return it (blocking)."""
    from bees_cli.schedules.times import KEY_TIME_FORMAT

    return log.add_fire(schedule_id=schedule_id, key=fire.key, scheduled=scheduled,
                        local=fire.local.strftime(KEY_TIME_FORMAT), handled=handled,
                        outcome=outcome, detail=detail, tries=tries)


def missed_rows(log: FireLog, workspace: Workspace, person: str | None, now: datetime,
                registered: Mapping[str, datetime] | None = None) -> list[FireRow]:
    """Write a "missed" row for each fire time of ``person``'s enabled schedules that passed
    more than 60 s before ``now`` with no row, since the schedule's last row, or since it
    was registered here (``registered``, by schedule name) when it has no row yet
    (blocking). No one signed in (``person`` None): none.

    Returns:
        The missed rows, by schedule name then time.
    """
    from bees_cli.schedules.times import fire_times

    rows: list[FireRow] = []
    if person is None:
        return rows
    for name, schedule in sorted(workspace.schedules.items()):
        if not schedule.enabled or schedule.owner.lower() != person.lower():
            continue
        last = log.last_scheduled(name) or (registered or {}).get(name)
        if last is None:
            continue
        for fire in fire_times(schedule, name, after=last, count=MISSED_LOOKBACK):
            if not is_late(fire.utc, now):
                break
            if log.fire_row(name, fire.utc) is None:
                rows.append(add_row(log, name, fire.utc, fire, now, FireOutcome.MISSED, None))
    return rows
