"""Offers: items a person handed to a pool of runners, and why runners left them
(DESIGN.md, Runners).

Bees Cloud stores an offer and answers yes or no to claims; it never picks a runner and never
calls one. An offer is open while the item is still free at the generation it was offered
at (the owners' rows decide, so a person who takes the item back closes it too); a runner
claims it with the ordinary owner claim (:meth:`Owners.claim`), which refuses a runner an
item not offered to its pool, and marks the offer claimed in the claim's own transaction.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.offer_rows import IS_OPEN, ended_items, open_offer, refuse_ended
from bees_cli.cloud.server.owners import OWNER_LATEST, owner_of
from bees_cli.cloud.server.people import People, Principal, Who
from bees_cli.cloud.server.refusals import Conflict, Forbidden, NotFound
from bees_cli.cloud.server.tables import offer_notes, offers, people
from bees_cli.utc import from_us


class Offers:
    """The offers of one database.

    Args:
        db: the database.
        people: authenticates the asker inside each operation's transaction.
        machines: binds machine ids to people.
    """

    def __init__(self, db: Database, people: People, machines: Machines) -> None:
        self.db = db
        self.people = people
        self.machines = machines

    def offer(self, who: Who, item_id: str, body: wire.OfferMake) -> wire.Offer:
        """Hand released item ``item_id`` to ``body.pool``: an offer of its latest release.

        Only the machine (and person) that released the item last may offer it, and only
        while it is free. Offering the same release again answers the stored offer (its
        pool and secrets unchanged): a retried request is safe.

        Raises:
            Unauthorized: unknown or revoked token.
            NotFound: ``no_owner`` when the item was never claimed.
            Forbidden: ``machine_not_yours``; ``not_owner`` when another machine released
                it last (or holds it).
            Conflict: ``not_released`` while the item is held; ``item_ended`` when its
                shared record says it is done or cancelled (never offered again).
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, body.machine_id)
            row = conn.execute(OWNER_LATEST, {"team_id": who.team_id, "item_id": item_id}
                               ).first()
            if row is None:
                raise NotFound("no_owner", f"item {item_id} has never been claimed",
                               hint="a person claims and relinquishes it first")
            owner = owner_of(row)
            if row.machine_id != body.machine_id or row.person_id != who.person_id:
                raise Forbidden(
                    "not_owner",
                    f"item {item_id}: {owner.computer_name} ({owner.person}) "
                    f"{'holds it' if owner.held else 'released it last'}; only the computer "
                    "that released it can offer it", owner=owner)
            if row.released_us is None:
                raise Conflict("not_released",
                               f"item {item_id} is held by {owner.computer_name}: relinquish "
                               "it to offer it", owner=owner)
            refuse_ended(conn, who.team_id, item_id)
            conn.execute(
                self.db.insert(offers).values(
                    team_id=who.team_id, item_id=item_id, epoch=row.epoch, pool=body.pool,
                    secrets=wire.canonical_json(sorted(set(body.secrets))),
                    offered_us=self.db.now_us(), offered_by=who.person_id,
                ).on_conflict_do_nothing()
            )
            return self._one(conn, who, item_id, row.epoch)

    def listed(self, who: Who, pool: str | None, *, only_open: bool) -> list[wire.Offer]:
        """Return the team's offers (to ``pool``, or every pool), oldest first; a runner sees
        only its own pool's.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            if who.runner is not None:
                pool = who.pool
            query = self._select().where(offers.c.team_id == who.team_id)
            if pool is not None:
                query = query.where(offers.c.pool == pool)
            if only_open:
                query = query.where(IS_OPEN)
            rows = list(conn.execute(query.order_by(offers.c.offered_us, offers.c.id)).all())
            if only_open:  # an item that ended meanwhile is offered no more
                ended = ended_items(conn, who.team_id, sorted({row.item_id for row in rows}))
                rows = [row for row in rows if row.item_id not in ended]
            return self._answers(conn, rows)

    def leave(self, who: Who, item_id: str, body: wire.OfferLeave) -> wire.Offer:
        """Note why runner ``who`` leaves the open offer of ``item_id`` to its pool (its latest
        reason replaces an earlier one of the same runner).

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``not_a_runner`` for a person's token; ``machine_not_yours``.
            NotFound: ``no_offer`` when the item has no open offer to the runner's pool.
        """
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            if who.runner is None or who.pool is None:
                raise Forbidden("not_a_runner", "only a runner leaves an offer")
            self.machines.check(conn, who, body.machine_id)
            found = open_offer(conn, who, item_id, who.pool)
            if found is None:
                raise NotFound("no_offer", f"item {item_id} has no open offer to pool "
                               f"{who.pool}")
            values = {"offer_id": found.id, "runner": who.runner,
                      "machine_id": body.machine_id, "reason": body.reason,
                      "noted_us": self.db.now_us()}
            conn.execute(
                self.db.insert(offer_notes).values(**values).on_conflict_do_update(
                    index_elements=["offer_id", "runner"],
                    set_={"machine_id": body.machine_id, "reason": body.reason,
                          "noted_us": values["noted_us"]})
            )
            return self._one(conn, who, item_id, found.epoch)

    @staticmethod
    def _select() -> Any:
        return sa.select(offers, people.c.email, IS_OPEN.label("is_open")).join(
            people, people.c.id == offers.c.offered_by)

    def _one(self, conn: Connection, who: Principal, item_id: str, epoch: int) -> wire.Offer:
        row = conn.execute(self._select().where(
            offers.c.team_id == who.team_id, offers.c.item_id == item_id,
            offers.c.epoch == epoch)).one()
        return self._answers(conn, [row])[0]

    @staticmethod
    def _answers(conn: Connection, rows: list[Any]) -> list[wire.Offer]:
        notes: dict[int, list[wire.OfferNote]] = {}
        if rows:
            for note in conn.execute(
                sa.select(offer_notes)
                .where(offer_notes.c.offer_id.in_([row.id for row in rows]))
                .order_by(offer_notes.c.noted_us, offer_notes.c.runner)
            ).all():
                notes.setdefault(note.offer_id, []).append(wire.OfferNote(
                    runner=note.runner, machine_id=note.machine_id, reason=note.reason,
                    noted_at=from_us(note.noted_us)))
        return [wire.Offer(
            item_id=row.item_id, epoch=row.epoch, pool=row.pool,
            secrets=list(json.loads(row.secrets)), offered_at=from_us(row.offered_us),
            offered_by=row.email, open=bool(row.is_open),
            claimed_at=None if row.claimed_us is None else from_us(row.claimed_us),
            claimed_by=row.claimed_by, notes=notes.get(row.id, [])) for row in rows]
