"""Asking Bees Cloud for a schedule key: the claim, its tries and backoff, the answer read."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from bees_cli.errors import BeesError, CloudError, CloudRefused, CloudUnauthorized
from bees_cli.rules import KEY_TRIES

if TYPE_CHECKING:
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.machine.computer import Computer
    from bees_cli.schedules.times import Fire

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
"""How to wait a number of seconds (``asyncio.sleep``, or a test's)."""


async def ask_key(client: AsyncCloudClient, computer: Computer, schedule_id: str,
                  scheduled: datetime, fire: Fire, zone: str, *, sleep: Sleep,
                  backoff: float) -> tuple[bool, str | None, int, str | None]:
    """Ask Bees Cloud for the schedule key of ``fire``, :data:`KEY_TRIES` requests at most
    (DESIGN.md, "Schedules": rule 4 of :mod:`bees_cli.schedules.fires`).

    The claim carries the fire's wall-clock time, the schedule's zone and this
    computer's tz database version, so Bees Cloud keys the wall-clock time once even
    when computers place it at different instants; a disagreement the answer carries
    is kept for ``bees schedules`` (:mod:`bees_cli.schedules.disagreements`). The second
    occurrence of a repeated time (:attr:`~bees_cli.schedules.times.Fire.repeat`, an
    hourly schedule's 01:15 GMT after its 01:15 BST) is claimed by its instant only, as
    Bees Cloud keys a claim without a wall-clock time: its wall-clock time is the first
    occurrence's key already, and every computer places the second one at one instant.

    Returns:
        ``(granted, holder computer, tries, trouble)``; ``trouble`` is the give-up
        detail (``cloud unreachable after 5 tries``…) when no answer came. The holder
        of a key placed at another instant is ``COMPUTER (zone rules disagree)``.
    """
    from bees_cli.cloud import wire
    from bees_cli.schedules import zones
    from bees_cli.schedules.disagreements import ZoneDisagreement, remember
    from bees_cli.schedules.times import KEY_TIME_FORMAT

    if fire.repeat:
        claim = wire.KeyClaim(schedule_id=schedule_id, scheduled_time=scheduled,
                              machine_id=computer.machine_id, computer_name=computer.computer)
    else:
        claim = wire.KeyClaim(schedule_id=schedule_id, scheduled_time=scheduled,
                              machine_id=computer.machine_id,
                              computer_name=computer.computer,
                              local_time=fire.local.strftime(KEY_TIME_FORMAT), zone=zone,
                              tz_version=_tz_version(zones.tz_database().version))
    trouble = f"cloud unreachable after {KEY_TRIES} tries"
    for attempt in range(KEY_TRIES):
        if attempt:
            await sleep(min(backoff * 2 ** (attempt - 1), 8.0))
        try:
            answer = await client.claim_key(claim)
        except CloudUnauthorized:
            return False, None, attempt + 1, "cloud refused the sign-in"
        except CloudRefused as error:
            return False, None, attempt + 1, f"cloud refused: {error.text}"
        except CloudError as error:
            if error.status == 422 and claim.local_time is not None:
                # a Bees Cloud older than wall-clock keys refuses the new fields: ask as
                # it knows (keyed by the instant only); the request counted as a try
                claim = wire.KeyClaim(schedule_id=claim.schedule_id,
                                      scheduled_time=claim.scheduled_time,
                                      machine_id=claim.machine_id,
                                      computer_name=claim.computer_name)
                continue
            if error.code != "cloud_unreachable":
                trouble = f"cloud error after {KEY_TRIES} tries: {error.message}"
            continue
        holder = answer.computer_name
        if ZoneDisagreement.of(answer) is not None:
            try:
                await asyncio.to_thread(remember, computer, [answer])
            except BeesError as error:  # the fire goes on; bees schedules asks the cloud
                logger.warning("zone disagreement not kept: %s", error.message)
            if not answer.granted and answer.scheduled_time != scheduled:
                holder += " (zone rules disagree)"
        return answer.granted, holder, attempt + 1, None
    return False, None, KEY_TRIES, trouble


def _tz_version(version: str | None) -> str | None:
    """``version`` when Bees Cloud accepts it as a tz version (``2025b``), else None."""
    import re

    from bees_cli.cloud.checks import TZ_VERSION_PATTERN

    return version if version is not None and re.match(TZ_VERSION_PATTERN, version) else None
