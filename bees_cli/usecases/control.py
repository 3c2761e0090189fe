"""A person's requests to the local run: retry, accept, cancel (updates through the gateway).

``bees retry``, ``bees item accept`` and ``bees item cancel`` need ``bees run`` up on this
computer (``worker.json`` in the data dir names its live process); a refusal from the
workflow's validator comes back at once as :class:`~bees_cli.errors.Refused` (exit 3).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Literal

from bees_cli.errors import EngineError, Refused
from bees_cli.record.aio import AsyncRecord
from bees_cli.record.events import CancelAsked, Cancelled
from bees_cli.record.local import ItemRow, LocalRecord, now_utc
from bees_cli.record.states import Status
from bees_cli.usecases.models import CancelDone, PersonDone

if TYPE_CHECKING:
    from bees_cli.usecases.bees import Bees

UPDATE_TIMEOUT = 30.0
"""Seconds to wait for ``bees run`` to answer a person's request."""

CANCEL_WAIT = 10.0
"""Seconds ``bees item cancel`` waits for the record to say ``cancelled``."""

NOT_UP = "the engine is not running on this computer"


def start_hint(then: str) -> str:
    """Return the hint for :data:`NOT_UP`: ``start it with `bees run`, then `THEN```."""
    return f"start it with `bees run`, then `{then}`"


def changeable_row(record: LocalRecord, item_id: str,
                   what: Literal["retry", "accept", "cancel"]) -> ItemRow:
    """Return the row of ``item_id``, refusing an item that is done or cancelled, or free
    (relinquished: it has no run here, DESIGN.md, Handover).

    Args:
        record: this computer's local record.
        item_id: the item's id or a unique prefix.
        what: the person's request, named in the refusal of a free item.

    Raises:
        NotFound, Ambiguous: no such item here.
        Refused: it is done or cancelled; or free (exit 3: where it continues decides).
    """
    row = record.item(item_id)
    if row.status in ("done", "cancelled"):
        raise Refused(f"item {row.id} is {row.status}: nothing to change")
    if row.status == Status.FREE:
        raise Refused(f"item {row.id} is not running here: it was relinquished (restarts at "
                      f"{row.stage or '?'}); {what} it where it continues")
    return row


async def _person_request(bees: Bees, item_id: str,
                         what: Literal["retry", "accept"]) -> PersonDone:
    """Ask the run of ``item_id`` to retry (``what="retry"``) or accept (``"accept"``).

    A ``lost`` item (the engine lost its run) is retried without its run: its stage starts
    again from the top in a new one (:func:`bees_cli.usecases.recover.retry_lost`).

    Raises:
        NotFound: no such item here.
        Refused: the item is not failed or stopped (retry), not stopped at the review
            limit (accept), over, or free (relinquished: asked where it continues).
        EngineError: ``bees run`` is not up.
    """
    from bees_cli.engine.models import ACCEPT_UPDATE, RETRY_UPDATE, PersonInput

    row = await bees.async_record.run(changeable_row, item_id, what)
    if row.status == "pending":
        raise Refused(f"item {row.id} has not started yet: start it with bees run")
    if row.status == Status.LOST and what == "retry":
        from bees_cli.usecases.recover import retry_lost

        return await retry_lost(bees, row)
    address = await asyncio.to_thread(bees.worker_address)
    if address is None:
        command = "bees retry" if what == "retry" else "bees item accept"
        raise EngineError(NOT_UP, hint=start_hint(f"{command} {row.id}"))
    person = PersonInput(who=bees.who(), at=now_utc())
    name = RETRY_UPDATE if what == "retry" else ACCEPT_UPDATE
    engine = await bees.engine(address)
    stage = await engine.update(row.id, name, person, str, timeout=UPDATE_TIMEOUT)
    return PersonDone(item=row.id, stage=str(stage), who=person.who, at=person.at)


async def _cancel_item(bees: Bees, item_id: str, *, wait: float = CANCEL_WAIT) -> CancelDone:
    """Cancel item ``item_id``: its running stage is stopped, its slots freed, its open
    approval requests closed, its status becomes ``cancelled``. An item not started yet is
    cancelled in the record at once; for a running one, waits up to ``wait`` seconds for the
    record to say ``cancelled``.

    Raises:
        NotFound, Refused: no such item; it is done or cancelled already; it is free
            (relinquished: cancelled where it continues).
        EngineError: the engine is not running.
    """
    record = bees.async_record
    row = await record.run(changeable_row, item_id, "cancel")
    who = bees.who()
    if row.status in (Status.PENDING, Status.LOST):  # no run to stop
        await record.run(_cancel_at_once, row, who)
        return CancelDone(item=row.id, requested=False, cancelled=True)
    if not bees.has_engine and await asyncio.to_thread(bees.engine_address) is None:
        raise EngineError(NOT_UP, hint=start_hint(f"bees item cancel {row.id}"))
    engine = await bees.engine()
    await engine.cancel(row.id)
    await record.add_fact(row.id, CancelAsked(who=who), key=f"cancel:{now_utc()}")
    return CancelDone(item=row.id, requested=True,
                      cancelled=await _wait_cancelled(record, row.id, wait))


def _cancel_at_once(record: LocalRecord, row: ItemRow, who: str) -> None:
    """Cancel ``row``, which has no run to stop: its fact and its status in one step."""
    with record.step():
        record.add_fact(row.id, Cancelled(who=who), key="cancelled")
        record.set_state(row.id, status="cancelled", stage=row.stage)


async def _wait_cancelled(record: AsyncRecord, item_id: str, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        if (await record.item(item_id)).status == "cancelled":
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.1)
