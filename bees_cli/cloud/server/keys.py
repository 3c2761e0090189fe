"""Schedule keys: (person, schedule, scheduled time), first asker wins, kept forever."""

from __future__ import annotations

import sqlalchemy as sa

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.people import People, Who
from bees_cli.cloud.server.tables import keys
from bees_cli.utc import from_us, to_us


class Keys:
    """The schedule keys of one database (DESIGN.md "Schedules").

    Keys are unique per (team, person, schedule id, scheduled time); a claim is one
    ``INSERT … ON CONFLICT DO NOTHING`` followed by a read of the row, so a race has
    exactly one winner however many server processes answer.

    Args:
        db: the database.
        people: authenticates the asker inside the claim's transaction.
    """

    def __init__(self, db: Database, people: People) -> None:
        self.db = db
        self.people = people

    def claim(self, who: Who, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim the schedule key (person, schedule, time); first asker wins, forever.

        Returns:
            ``granted`` when ``claim.machine_id`` holds the key (also on a repeat, with
            the same ``granted_at``), else ``taken`` with the holder's computer and
            grant time.

        Raises:
            Unauthorized: unknown or revoked token.
        """
        scheduled_us = to_us(claim.scheduled_time)
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            conn.execute(
                self.db.insert(keys)
                .values(
                    team_id=who.team_id,
                    person_id=who.person_id,
                    schedule_id=claim.schedule_id,
                    scheduled_us=scheduled_us,
                    machine_id=claim.machine_id,
                    computer_name=claim.computer_name,
                    granted_us=self.db.now_us(),
                )
                .on_conflict_do_nothing()
            )
            row = conn.execute(
                sa.select(keys).where(
                    keys.c.team_id == who.team_id,
                    keys.c.person_id == who.person_id,
                    keys.c.schedule_id == claim.schedule_id,
                    keys.c.scheduled_us == scheduled_us,
                )
            ).one()
        return wire.KeyAnswer(
            status="granted" if row.machine_id == claim.machine_id else "taken",
            schedule_id=row.schedule_id,
            scheduled_time=from_us(row.scheduled_us),
            person=who.email,
            machine_id=row.machine_id,
            computer_name=row.computer_name,
            granted_at=from_us(row.granted_us),
        )
