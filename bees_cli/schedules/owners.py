"""Owners: an item made on this computer is claimed in Bees Cloud before its first stage starts.

Rules (DESIGN.md, "Owners"; issue 6): a computer claims an item before it runs it; the
claim never expires; a computer never runs an item another computer owns. With no Bees
Cloud configured there is nothing to ask and the item starts (same path, minus the call).

When the cloud cannot be reached at claim time the item is not started: it shows
``waiting: cannot claim owner (cloud unreachable)`` and ``bees run`` tries the claim again
every :data:`CLAIM_RETRY` seconds, so an item never runs unclaimed. An item the cloud says
another computer owns shows ``waiting: owned by COMPUTER`` and is never started here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bees_cli.cloud.client import ask_owner, cloud_for, owner_claim_of
from bees_cli.errors import CloudError, CloudUnreachable
from bees_cli.machine.computer import Computer
from bees_cli.record.fires import ClaimStatus, FireLog
from bees_cli.record.local import ItemRow, LocalRecord
from bees_cli.record.states import Status, WaitKind
from bees_cli.utc import parse_utc

if TYPE_CHECKING:
    from bees_cli.cloud import wire
    from bees_cli.cloud.client import AsyncCloudClient

CLAIM_RETRY = 15.0
"""Seconds between claim attempts of an item whose claim found the cloud unreachable."""

UNREACHABLE_REASON = "cannot claim owner (cloud unreachable)"
"""The waiting reason of an item whose owner claim could not reach Bees Cloud."""

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ClaimOutcome:
    """How one owner claim ended.

    Attributes:
        status: ``owner`` (this machine owns it), ``taken`` (another computer does),
            ``unreachable`` (retry later), ``no_cloud`` (nothing to ask), ``error``
            (the cloud refused the request or answered badly; retried like unreachable).
        computer: the owning computer's name (``owner``/``taken``).
        detail: a one-line message for ``error``.
        epoch: the owner generation this machine was granted (``owner``), else None.
    """

    status: ClaimStatus
    computer: str | None = None
    detail: str | None = None
    epoch: int | None = None

    @property
    def may_start(self) -> bool:
        """True when this computer may start the item."""
        return self.status in (ClaimStatus.OWNER, ClaimStatus.NO_CLOUD)

    @property
    def wait(self) -> WaitKind | None:
        """Why the item waits while it may not start (another computer owns it, or the claim
        could not be made yet), else None."""
        if self.status == ClaimStatus.TAKEN:
            return WaitKind.OWNED_ELSEWHERE
        if self.status in (ClaimStatus.UNREACHABLE, ClaimStatus.ERROR):
            return WaitKind.CLAIM_PENDING
        return None

    @property
    def reason(self) -> str | None:
        """The waiting reason shown while the item may not start, else None."""
        if self.status == ClaimStatus.UNREACHABLE:
            return UNREACHABLE_REASON
        if self.status == ClaimStatus.TAKEN:
            return f"owned by {self.computer}"
        if self.status == ClaimStatus.ERROR:
            return f"cannot claim owner ({self.detail})"
        return None


def granted(answer: wire.OwnerAnswer) -> ClaimOutcome:
    """Return the outcome of an answered claim: ``owner`` with the generation granted, or
    ``taken`` by the computer named."""
    if answer.granted:
        return ClaimOutcome(ClaimStatus.OWNER, computer=answer.owner.computer_name,
                            epoch=answer.owner.epoch)
    return ClaimOutcome(ClaimStatus.TAKEN, computer=answer.owner.computer_name)


async def claim_owner(computer: Computer, item_id: str, *, client: AsyncCloudClient | None = None,
                      clock: Clock = _utcnow) -> ClaimOutcome:
    """Claim ``item_id`` for this computer in Bees Cloud and note the outcome in the record.

    Args:
        computer: this computer (its sign-in decides whether there is a cloud to ask).
        item_id: the work item.
        client: an open client to reuse; else one is made (two retries) and closed.
        clock: this computer's clock (UTC), for the claim's ``tried`` time.

    Returns:
        The :class:`ClaimOutcome`; never raises for cloud trouble.
    """
    if computer.login is None:
        outcome = ClaimOutcome(ClaimStatus.NO_CLOUD)
    else:
        api = client or cloud_for(computer, retries=2)
        assert api is not None
        try:
            outcome = granted(await api.claim_owner(owner_claim_of(computer, item_id)))
        except CloudUnreachable:
            outcome = ClaimOutcome(ClaimStatus.UNREACHABLE)
        except CloudError as error:
            outcome = ClaimOutcome(ClaimStatus.ERROR, detail=error.message)
        finally:
            if client is None:
                await api.aclose()
    await asyncio.to_thread(FireLog(computer.record_path).set_claim, item_id, outcome.status,
                            computer=outcome.computer, detail=outcome.detail, tried=clock(),
                            epoch=outcome.epoch)
    return outcome


def show_claim(record: LocalRecord, row: ItemRow, outcome: ClaimOutcome) -> None:
    """Show the claim on the item: a waiting reason when it may not start, else pending again.

    ``row`` is the item as read before the claim was asked; the record changes only while the
    item is still in that row's status, so a claim answered after a person cancelled the item
    never makes it waiting (or pending) again, and a later try never starts it.
    """
    still = frozenset({row.status})
    if outcome.may_start:
        if row.status == Status.WAITING and row.wait in _CLAIM_WAITS:
            record.set_state(row.id, status=Status.PENDING, stage=row.stage, only_if=still)
        return
    record.set_state(row.id, status=Status.WAITING, stage=row.stage, reason=outcome.reason,
                     wait=outcome.wait, only_if=still)


_CLAIM_WAITS = frozenset({WaitKind.OWNED_ELSEWHERE, WaitKind.CLAIM_PENDING})


def startable(record: LocalRecord) -> list[ItemRow]:
    """Return the items ``bees run`` should try to start: ``pending`` ones, and ``waiting``
    ones whose owner claim could not be made yet (oldest first)."""
    rows = record.items(statuses=frozenset({Status.PENDING, Status.WAITING}))
    return [r for r in rows if r.status == Status.PENDING or r.wait == WaitKind.CLAIM_PENDING]


async def ready_to_start(record: LocalRecord, row: ItemRow, *, computer: Computer,
                         client: AsyncCloudClient | None = None,
                         clock: Clock = _utcnow) -> bool:
    """Tell whether item ``row`` may start now on ``computer``, claiming it first when needed.

    An item already claimed here starts; one another computer owns never does; one whose
    claim failed is tried again once :data:`CLAIM_RETRY` seconds have passed. ``client``:
    an open client to claim through (:func:`claim_owner`), else one is made for the claim.
    """
    here = computer
    if here.login is None:
        return True
    previous = await asyncio.to_thread(FireLog(here.record_path).claim, row.id)
    if previous is not None:
        if previous.status == ClaimStatus.OWNER:
            if row.status != Status.PENDING:
                show_claim(record, row, ClaimOutcome(ClaimStatus.OWNER, previous.computer))
            return True
        if previous.status == ClaimStatus.TAKEN:
            return False
        waited = (clock() - parse_utc(previous.tried)).total_seconds()
        if previous.status in (ClaimStatus.UNREACHABLE, ClaimStatus.ERROR) \
                and waited < CLAIM_RETRY:
            return False
    outcome = await claim_owner(here, row.id, client=client, clock=clock)
    await asyncio.to_thread(show_claim, record, row, outcome)
    return outcome.may_start


def claim_at_create(here: Computer, record: LocalRecord, item_id: str) -> ClaimOutcome:
    """Claim a just-created item on computer ``here`` (``bees item create``), blocking; show
    the outcome on it.

    Uses the blocking client, so it is safe to call from a worker thread of an event loop.
    """
    try:
        answer = ask_owner(here, item_id)
        outcome = (ClaimOutcome(ClaimStatus.NO_CLOUD) if answer is None
                   else granted(answer))
    except CloudUnreachable:
        outcome = ClaimOutcome(ClaimStatus.UNREACHABLE)
    except CloudError as error:
        outcome = ClaimOutcome(ClaimStatus.ERROR, detail=error.message)
    FireLog(here.record_path).set_claim(item_id, outcome.status, computer=outcome.computer,
                                        detail=outcome.detail, tried=_utcnow(),
                                        epoch=outcome.epoch)
    show_claim(record, record.item(item_id), outcome)
    return outcome
