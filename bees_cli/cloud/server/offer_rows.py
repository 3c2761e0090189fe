"""The offers' rows as the owner claim reads and marks them, inside its own transaction
(:mod:`~bees_cli.cloud.server.offers` answers the offer calls)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.people import Principal
from bees_cli.cloud.server.refusals import Conflict
from bees_cli.cloud.server.tables import offers, owners, record

LATEST_EPOCH = (
    sa.select(sa.func.max(owners.c.epoch))
    .where(owners.c.team_id == offers.c.team_id, owners.c.item_id == offers.c.item_id)
    .scalar_subquery()
)
"""The latest owner generation of an offer's item (correlated with ``offers``)."""
RELEASED_AT_OFFER = sa.exists().where(
    owners.c.team_id == offers.c.team_id,
    owners.c.item_id == offers.c.item_id,
    owners.c.epoch == offers.c.epoch,
    owners.c.released_us.is_not(None),
)
IS_OPEN = sa.and_(offers.c.claimed_us.is_(None), LATEST_EPOCH == offers.c.epoch,
                  RELEASED_AT_OFFER)
"""An offer is open while the item's latest owner row is the released one it was made at."""


def ended_items(conn: Connection, team_id: int, item_ids: list[str]) -> dict[str, str]:
    """Return ``{item_id: status}`` of those of ``item_ids`` whose shared record says they
    ended (:data:`wire.ENDED_STATUSES`: done, cancelled); an item without a record has not.

    Why: an ended item is never offered, by a relinquish ``--to`` or by a retire, and no
    runner claims it (it would run its stages again from a checkpoint taken before the end).
    """
    if not item_ids:
        return {}
    ended: dict[str, str] = {}
    for row in conn.execute(sa.select(record.c.item_id, record.c.fields).where(
            record.c.team_id == team_id, record.c.item_id.in_(item_ids))).all():
        status = json.loads(row.fields).get("status")
        if status in wire.ENDED_STATUSES:
            ended[row.item_id] = status
    return ended


def refuse_ended(conn: Connection, team_id: int, item_id: str) -> None:
    """Refuse to offer (or claim from an offer) ``item_id`` when it has ended.

    Raises:
        Conflict: ``item_ended`` when the item's shared record says done or cancelled.
    """
    status = ended_items(conn, team_id, [item_id]).get(item_id)
    if status is not None:
        raise Conflict("item_ended", f"item {item_id} is {status}: an ended item is never "
                       "offered", hint="bees item show ITEM shows its story; bees item "
                       "create makes a new one")


def open_offer(conn: Connection, who: Principal, item_id: str, pool: str) -> Any:
    """Return the open offer row of ``item_id`` to ``pool`` in the asker's team, or None.

    Runs in the caller's transaction (the owner claim's)."""
    return conn.execute(
        sa.select(offers.c.id, offers.c.epoch).where(
            offers.c.team_id == who.team_id, offers.c.item_id == item_id,
            offers.c.pool == pool, IS_OPEN)
    ).first()


def was_offered(conn: Connection, who: Principal, item_id: str, pool: str, epoch: int) -> bool:
    """Return True when the release of generation ``epoch`` of ``item_id`` was offered to
    ``pool`` (a runner that lost the offer is then answered ``taken``, not refused)."""
    return conn.execute(
        sa.select(offers.c.id).where(
            offers.c.team_id == who.team_id, offers.c.item_id == item_id,
            offers.c.pool == pool, offers.c.epoch == epoch)
    ).first() is not None


def mark_claimed(db: Database, conn: Connection, offer_id: int, machine_id: str,
                 by: str) -> None:
    """Mark offer ``offer_id`` claimed by ``by`` on ``machine_id`` (the claim that won it,
    in the claim's own transaction; a second mark changes nothing)."""
    conn.execute(
        offers.update()
        .where(offers.c.id == offer_id, offers.c.claimed_us.is_(None))
        .values(claimed_us=db.now_us(), claimed_machine=machine_id, claimed_by=by)
    )
