"""Schedule keys: (person, schedule, scheduled time), first asker wins, kept forever.

A key is also one per wall-clock time (schedule, local time, zone) when the claims carry
it: two computers whose tz databases place one wall-clock time at two instants ask for
two instants, and the second is answered ``taken`` with the disagreement kept, so the time
runs once and both computers can see why (issue 11, point 9).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.people import People, Principal, Who
from bees_cli.cloud.server.refusals import Conflict, Forbidden, NotFound
from bees_cli.cloud.server.tables import key_disagreements, keys
from bees_cli.utc import format_utc, from_us, to_us

MAX_KEY_LIST = 1000
"""Most keys one ``GET /v1/keys`` returns (oldest scheduled time first)."""
MAX_DISAGREEMENT_LIST = 100
"""Most keys one ``GET /v1/keys/disagreements`` returns (newest scheduled time first)."""

_WALL = sa.and_(
    keys.c.local_time == sa.bindparam("local_time"), keys.c.zone == sa.bindparam("zone")
)
KEY_ROW = (
    sa.select(keys)
    .where(
        keys.c.team_id == sa.bindparam("team_id"),
        keys.c.person_id == sa.bindparam("person_id"),
        keys.c.schedule_id == sa.bindparam("schedule_id"),
        sa.or_(keys.c.scheduled_us == sa.bindparam("scheduled_us"), _WALL),
    )
    .order_by(sa.case((_WALL, 0), else_=1))
    .limit(1)
)
"""A person's key of a schedule by wall-clock time (``local_time``, ``zone``; NULL matches
nothing) first, else by instant (``scheduled_us``); built once."""
KEY_COLUMNS = (
    "team_id",
    "person_id",
    "schedule_id",
    "scheduled_us",
    "machine_id",
    "computer_name",
    "granted_us",
    "local_time",
    "zone",
    "tz_version",
)


class Keys:
    """The schedule keys of one database (DESIGN.md "Schedules").

    Keys are unique per (team, person, schedule id, scheduled time); a claim is one
    ``INSERT … ON CONFLICT DO NOTHING RETURNING``, followed by a read of the key only when
    it inserted nothing, so a race has exactly one winner however many server processes
    answer. The holder then reports
    the item the key produced; a key keeps its first item for good.

    Args:
        db: the database.
        people: authenticates the asker inside the claim's transaction.
        machines: binds machine ids to people.
    """

    def __init__(self, db: Database, people: People, machines: Machines) -> None:
        self.db = db
        self.people = people
        self.machines = machines
        self._claim = (
            db.insert(keys)
            .values({name: sa.bindparam(name) for name in KEY_COLUMNS})
            .on_conflict_do_nothing()
            .returning(*keys.c)
        )

    @staticmethod
    def _row(
        conn: Connection,
        who: Principal,
        schedule_id: str,
        scheduled_us: int,
        wall: tuple[str | None, str | None] = (None, None),
    ) -> Any:
        """The asker's key of ``schedule_id`` at ``wall`` (local time, zone) when one is
        held, else at the instant ``scheduled_us`` (one read, :data:`KEY_ROW`)."""
        params = {
            "team_id": who.team_id,
            "person_id": who.person_id,
            "schedule_id": schedule_id,
            "scheduled_us": scheduled_us,
            "local_time": wall[0],
            "zone": wall[1],
        }
        return conn.execute(KEY_ROW, params).first()

    @staticmethod
    def _disagreements(conn: Connection, key_id: int) -> list[wire.KeyDisagreement]:
        rows = conn.execute(
            sa.select(key_disagreements)
            .where(key_disagreements.c.key_id == key_id)
            .order_by(key_disagreements.c.noticed_us, key_disagreements.c.id)
        ).all()
        return [
            wire.KeyDisagreement(
                machine_id=r.machine_id,
                computer_name=r.computer_name,
                scheduled_time=from_us(r.scheduled_us),
                tz_version=r.tz_version,
                noticed_at=from_us(r.noticed_us),
            )
            for r in rows
        ]

    @staticmethod
    def _answer(
        row: Any,
        who: Principal,
        machine_id: str,
        disagreements: list[wire.KeyDisagreement] | None = None,
    ) -> wire.KeyAnswer:
        """The key as answered; the wall-clock fields only when ``disagreements`` is given
        (an answer to a claim that sent a wall-clock time, or the disagreement listing), so
        an older Bees, whose models refuse unknown fields, never receives them."""
        wall: dict[str, Any] = {}
        if disagreements is not None:
            wall = {
                name: value
                for name, value in (
                    ("local_time", row.local_time),
                    ("zone", row.zone),
                    ("tz_version", row.tz_version),
                    ("disagreements", disagreements or None),
                )
                if value is not None
            }
        return wire.KeyAnswer(
            status="granted" if row.machine_id == machine_id else "taken",
            schedule_id=row.schedule_id,
            scheduled_time=from_us(row.scheduled_us),
            person=who.email,
            machine_id=row.machine_id,
            computer_name=row.computer_name,
            granted_at=from_us(row.granted_us),
            item_id=row.item_id,
            **wall,
        )

    def claim(self, who: Who, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim the schedule key (person, schedule, time); first asker wins, forever.

        With a wall-clock time in the claim, the key is also one per (schedule,
        ``local_time``, ``zone``): the insert does nothing when either the instant or the
        wall-clock time is taken (one statement, so a race still has one winner), and a
        claim whose wall-clock time is held at another instant by another machine is
        ``taken``, its machine, instant and tz version kept as a disagreement.

        Returns:
            ``granted`` when ``claim.machine_id`` holds the key (also on a repeat, with
            the same ``granted_at``), else ``taken`` with the holder's computer, instant
            and grant time; ``item_id`` once the holder reported the key's item. To a
            claim with a wall-clock time, also the key's ``local_time``, ``zone``, the
            holder's ``tz_version`` and the ``disagreements`` noted so far.

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``machine_not_yours``.
        """
        scheduled_us = to_us(claim.scheduled_time)
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, claim.machine_id)
            now_us = self.db.now_us()
            values = {
                "team_id": who.team_id,
                "person_id": who.person_id,
                "schedule_id": claim.schedule_id,
                "scheduled_us": scheduled_us,
                "machine_id": claim.machine_id,
                "computer_name": claim.computer_name,
                "granted_us": now_us,
                "local_time": claim.local_time,
                "zone": claim.zone,
                "tz_version": claim.tz_version,
            }
            wall: list[wire.KeyDisagreement] | None = None if claim.local_time is None else []
            row = conn.execute(self._claim, values).first()
            if row is None:  # not granted now: read the key that holds the time back
                row = self._row(
                    conn, who, claim.schedule_id, scheduled_us, (claim.local_time, claim.zone)
                )
                if wall is not None:
                    self._disagree(conn, row, claim, scheduled_us, now_us)
                    wall = self._disagreements(conn, row.id)
            # else granted now: a new key has no disagreements yet
        return self._answer(row, who, claim.machine_id, wall)

    def _disagree(
        self, conn: Connection, row: Any, claim: wire.KeyClaim, scheduled_us: int, now_us: int
    ) -> None:
        """Keep the disagreement of a wall-clock claim held at another instant by another
        machine (at most once per machine and instant)."""
        if row.scheduled_us != scheduled_us and row.machine_id != claim.machine_id:
            conn.execute(
                self.db.insert(key_disagreements)
                .values(
                    key_id=row.id,
                    machine_id=claim.machine_id,
                    computer_name=claim.computer_name,
                    scheduled_us=scheduled_us,
                    tz_version=claim.tz_version,
                    noticed_us=now_us,
                )
                .on_conflict_do_nothing()
            )

    def report_item(self, who: Who, report: wire.KeyItem) -> wire.KeyAnswer:
        """Record which item the key (person, schedule, time) produced; safe to repeat.

        Returns:
            The key, ``granted``, with ``item_id`` set.

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``machine_not_yours``; ``not_key_holder`` when another machine
                holds the key.
            NotFound: ``no_key`` when the key was never granted.
            Conflict: ``key_has_item`` when the key already produced another item.
        """
        scheduled_us = to_us(report.scheduled_time)
        with self.db.transaction() as conn:
            who = self.people.principal(conn, who)
            self.machines.check(conn, who, report.machine_id)
            row = self._row(conn, who, report.schedule_id, scheduled_us)
            when = format_utc(report.scheduled_time)
            if row is None:
                raise NotFound("no_key", f"no key was granted for {report.schedule_id} at {when}")
            if row.machine_id != report.machine_id:
                raise Forbidden(
                    "not_key_holder",
                    f"the key of {report.schedule_id} at {when} is held by"
                    f" {row.computer_name} (machine {row.machine_id})",
                    hint="only the computer that holds the key makes its item",
                )
            if row.item_id is None:
                conn.execute(
                    keys.update()
                    .where(keys.c.id == row.id, keys.c.item_id.is_(None))
                    .values(item_id=report.item_id)
                )
                row = self._row(conn, who, report.schedule_id, scheduled_us)
            if row.item_id != report.item_id:
                raise Conflict(
                    "key_has_item",
                    f"the key of {report.schedule_id} at {when} already made item {row.item_id}",
                    hint="one key makes exactly one item",
                )
        return self._answer(row, who, report.machine_id)

    def held(self, who: Who, machine_id: str, *, without_item: bool) -> list[wire.KeyAnswer]:
        """Return the asker's keys held by ``machine_id``, oldest scheduled time first.

        Args:
            who: the asker; only their own keys are listed.
            machine_id: the holding machine (must be the asker's, or not yet used).
            without_item: only keys whose item was never reported.

        Returns:
            At most :data:`MAX_KEY_LIST` keys, all ``granted``.

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``machine_not_yours``.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            if self.machines.owned_by(conn, who, machine_id) is False:
                raise Forbidden(
                    "machine_not_yours",
                    f"machine {machine_id} belongs to another person of the team",
                )
            query = sa.select(keys).where(
                keys.c.team_id == who.team_id,
                keys.c.person_id == who.person_id,
                keys.c.machine_id == machine_id,
            )
            if without_item:
                query = query.where(keys.c.item_id.is_(None))
            rows = conn.execute(
                query.order_by(keys.c.scheduled_us, keys.c.schedule_id).limit(MAX_KEY_LIST)
            ).all()
        return [self._answer(row, who, machine_id) for row in rows]

    def disagreements(self, who: Who, machine_id: str) -> list[wire.KeyAnswer]:
        """Return the asker's keys whose wall-clock time two computers placed at two instants.

        Args:
            who: the asker; only their own keys are listed.
            machine_id: the asking machine (``granted`` marks the keys it holds); must be
                the asker's, or not yet used.

        Returns:
            At most :data:`MAX_DISAGREEMENT_LIST` keys, newest scheduled time first, each
            with its wall-clock time, the holder's tz version and its disagreements.

        Raises:
            Unauthorized: unknown or revoked token.
            Forbidden: ``machine_not_yours``.
        """
        with self.db.transaction(write=False) as conn:
            who = self.people.principal(conn, who)
            if self.machines.owned_by(conn, who, machine_id) is False:
                raise Forbidden(
                    "machine_not_yours",
                    f"machine {machine_id} belongs to another person of the team",
                )
            disagreed = sa.select(key_disagreements.c.key_id).where(
                key_disagreements.c.key_id == keys.c.id
            )
            rows = conn.execute(
                sa.select(keys)
                .where(
                    keys.c.team_id == who.team_id,
                    keys.c.person_id == who.person_id,
                    disagreed.exists(),
                )
                .order_by(keys.c.scheduled_us.desc(), keys.c.schedule_id)
                .limit(MAX_DISAGREEMENT_LIST)
            ).all()
            return [
                self._answer(row, who, machine_id, self._disagreements(conn, row.id))
                for row in rows
            ]
