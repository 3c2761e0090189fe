"""The Bees Cloud calls about held schedule keys: report a key's item, list keys with none.

Issue 11, point 1: Bees Cloud remembers which item a key produced (the winner reports it),
and a computer asks at start for "keys I hold that have no item yet", so nothing depends on
a local file surviving. The calls are added to the cloud client on branch ``cloud-faults``
(``AsyncCloudClient.report_key_item(wire.KeyItem)`` and
``AsyncCloudClient.held_keys(machine_id, without_item=True)``); :class:`CloudKeys` uses them
when the client has them and otherwise does nothing (the local rows still recover).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bees_cli.cloud.client import AsyncCloudClient
    from bees_cli.machine.computer import Computer


class HeldKeys(Protocol):
    """Bees Cloud's record of the schedule keys this machine holds."""

    async def report_item(self, schedule_id: str, scheduled: datetime, item_id: str) -> None:
        """Tell Bees Cloud that the key (this person, ``schedule_id``, ``scheduled``) made
        ``item_id``; safe to repeat. Cloud trouble is swallowed (reported again later)."""

    async def without_item(self) -> list[tuple[str, datetime]]:
        """Return ``(schedule id, scheduled instant)`` of each key this machine holds whose
        item was never reported, oldest first.

        Raises:
            CloudError: the cloud could not answer.
        """


class CloudKeys:
    """:class:`HeldKeys` over an open cloud client (the calls of branch ``cloud-faults``).

    Args:
        client: an open async cloud client (not closed here).
        computer: this computer (its machine id).
    """

    def __init__(self, client: AsyncCloudClient, computer: Computer) -> None:
        self.client = client
        self.computer = computer

    async def report_item(self, schedule_id: str, scheduled: datetime, item_id: str) -> None:
        """Report the item a held key made, when the cloud client can (see the protocol)."""
        from bees_cli.cloud import wire
        from bees_cli.errors import CloudError

        report: Any = getattr(self.client, "report_key_item", None)
        model: Any = getattr(wire, "KeyItem", None)
        if report is None or model is None:
            return
        try:
            await report(model(schedule_id=schedule_id, scheduled_time=scheduled,
                               machine_id=self.computer.machine_id, item_id=item_id))
        except CloudError:
            return

    async def without_item(self) -> list[tuple[str, datetime]]:
        """List held keys without an item, when the cloud client can (else none)."""
        listing: Any = getattr(self.client, "held_keys", None)
        if listing is None:
            return []
        keys = await listing(self.computer.machine_id, without_item=True)
        return [(key.schedule_id, key.scheduled_time) for key in keys]
