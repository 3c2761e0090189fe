"""Machines: a machine id belongs to the person whose token first used it in the team."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.people import Principal
from bees_cli.cloud.server.refusals import Forbidden
from bees_cli.cloud.server.tables import machines


class Machines:
    """The machine ids of one database and the person each belongs to (DESIGN.md "Owners").

    The first claim, key, release or record push that names a machine id binds it to
    the asking person (one ``INSERT … ON CONFLICT DO NOTHING`` then a read, so a race
    has one winner); from then on another person's token cannot act as that machine.

    Args:
        db: the database.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    def is_mine(self, conn: Connection, who: Principal, machine_id: str) -> bool:
        """Return True when ``machine_id`` belongs to ``who``, binding it on first use.

        Runs inside the caller's transaction ``conn``, so the binding commits with
        the operation that used the machine id.
        """
        known = self.owned_by(conn, who, machine_id)
        if known is not None:
            return known  # bound already: a read, no write
        conn.execute(
            self.db.insert(machines)
            .values(
                team_id=who.team_id,
                machine_id=machine_id,
                person_id=who.person_id,
                first_seen_us=self.db.now_us(),
            )
            .on_conflict_do_nothing()
        )
        person_id = conn.execute(
            sa.select(machines.c.person_id).where(
                machines.c.team_id == who.team_id, machines.c.machine_id == machine_id
            )
        ).scalar_one()
        return bool(person_id == who.person_id)

    def check(self, conn: Connection, who: Principal, machine_id: str) -> None:
        """Bind ``machine_id`` to ``who`` on first use, or refuse when it is another's.

        Raises:
            Forbidden: ``machine_not_yours`` when another person of the team first
                used ``machine_id``.
        """
        if not self.is_mine(conn, who, machine_id):
            raise Forbidden(
                "machine_not_yours",
                f"machine {machine_id} belongs to another person of the team",
                hint="each computer has its own machine id; sign in on your own computer",
            )

    def owned_by(self, conn: Connection, who: Principal, machine_id: str) -> bool | None:
        """Return whether ``machine_id`` belongs to ``who`` without binding it (None: unknown)."""
        person_id = conn.execute(
            sa.select(machines.c.person_id).where(
                machines.c.team_id == who.team_id, machines.c.machine_id == machine_id
            )
        ).scalar_one_or_none()
        return None if person_id is None else bool(person_id == who.person_id)
