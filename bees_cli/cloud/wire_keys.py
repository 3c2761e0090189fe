"""Wire models of the schedule-key calls of Bees Cloud API v1 (``/v1/keys...``).

:mod:`bees_cli.cloud.wire` re-exports them (``wire.KeyClaim``, ...) with the list of calls.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from bees_cli.cloud.checks import Id, Name, TzVersion, UtcTime, WallTime, Wire, ZoneName


class KeyClaim(Wire):
    """Ask for the schedule key (this token's person, ``schedule_id``, ``scheduled_time``).

    A computer also sends the fire's wall-clock time (``local_time`` in ``zone``, both or
    neither) and its tz database version. The key is then one per wall-clock time too: a
    second claim for the same schedule, ``local_time`` and ``zone`` at another instant (two
    computers disagree on the zone rules) is answered ``taken``, with the disagreement
    noted (:class:`KeyDisagreement`), so the time still runs exactly once. A claim without
    them (an older Bees) is keyed by the instant only.
    """

    schedule_id: Id
    scheduled_time: UtcTime
    machine_id: Id
    computer_name: Name
    local_time: WallTime | None = None
    """The schedule's wall-clock time of this fire in ``zone``, e.g. ``2025-01-06T09:00``."""
    zone: ZoneName | None = None
    """The schedule's time zone, e.g. ``Europe/Paris``."""
    tz_version: TzVersion | None = None
    """The tz database version the asking computer computed the instant with (``2025b``)."""

    @model_validator(mode="after")
    def _wall_clock_whole(self) -> KeyClaim:
        if (self.local_time is None) != (self.zone is None):
            raise ValueError("local_time and zone go together: send both or neither")
        return self


class KeyDisagreement(Wire):
    """A computer that asked for a key's wall-clock time at another instant than the holder.

    The holder's side is the :class:`KeyAnswer` itself (``computer_name``,
    ``scheduled_time``, ``tz_version``); this is the other side. Kept forever, once per
    machine and instant.
    """

    machine_id: str
    computer_name: str
    scheduled_time: UtcTime
    """The instant this computer computed for the same wall-clock time."""
    tz_version: str | None = None
    """Its tz database version, when it sent one."""
    noticed_at: UtcTime
    """When Bees Cloud received its claim (server clock)."""


class KeyAnswer(Wire):
    """The key's holder: ``granted`` when it is the asking machine, else ``taken``.

    A repeated claim by the holding machine is ``granted`` again with the same
    ``granted_at`` (safe to retry after a lost answer).
    """

    status: Literal["granted", "taken"]
    schedule_id: str
    scheduled_time: UtcTime
    person: str
    machine_id: str
    computer_name: str
    granted_at: UtcTime
    item_id: str | None = None
    """The item the key produced, once its holder reported it (:class:`KeyItem`)."""
    local_time: str | None = None
    """The key's wall-clock time (when the holder sent one); only in answers to claims and
    listings that send or ask for wall-clock times, so an older Bees reads every answer."""
    zone: str | None = None
    """The key's time zone, with ``local_time``."""
    tz_version: str | None = None
    """The holder's tz database version, when it sent one."""
    disagreements: list[KeyDisagreement] | None = None
    """Computers that computed another instant for this wall-clock time, oldest first."""

    @property
    def granted(self) -> bool:
        """True when the asking machine holds the key."""
        return self.status == "granted"


class KeyItem(Wire):
    """The holder of a schedule key reports the item the key produced (once; repeats are safe).

    The key is (this token's person, ``schedule_id``, ``scheduled_time``); only the
    machine that holds it may report, and a key keeps its first item for good.
    """

    schedule_id: Id
    scheduled_time: UtcTime
    machine_id: Id
    item_id: Id


class KeyList(Wire):
    """Schedule keys, oldest scheduled time first."""

    keys: list[KeyAnswer]
