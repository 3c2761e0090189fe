"""The offers' rows as the owner claim reads and marks them, inside its own transaction
(:mod:`~bees_cli.cloud.server.offers` answers the offer calls)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.people import Principal
from bees_cli.cloud.server.tables import offers, owners

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
