"""Machines: a machine id belongs to the person whose token first used it in the team."""

from __future__ import annotations

import time
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.people import AUTH_CACHE_SECONDS, Kept, Principal
from bees_cli.cloud.server.refusals import Forbidden
from bees_cli.cloud.server.tables import machines

RETIRED = -1
"""The person a retired machine id is bound to: no one (issue 27, point 4)."""
MACHINE_PERSON = sa.select(
    sa.case((machines.c.retired_us.is_not(None), RETIRED), else_=machines.c.person_id)
).where(
    machines.c.team_id == sa.bindparam("team_id"),
    machines.c.machine_id == sa.bindparam("machine_id"),
)
"""The person a machine id is bound to in a team; built once."""


class Machines:
    """The machine ids of one database and the person each belongs to (DESIGN.md "Owners").

    The first claim, key, release or record push that names a machine id binds it to
    the asking person (one ``INSERT … ON CONFLICT DO NOTHING`` then a read, so a race
    has one winner); from then on another person's token cannot act as that machine.

    A binding once read is kept in the process for :data:`AUTH_CACHE_SECONDS` (bindings
    never change; the bound is there for any future admin change, as for tokens).

    Args:
        db: the database.
        monotonic: seconds of a monotonic clock, for the cache (injected by tests).
        cache_seconds: how long a binding read is kept; 0 turns the cache off.
    """

    def __init__(
        self,
        db: Database,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        cache_seconds: float = AUTH_CACHE_SECONDS,
    ) -> None:
        self.db = db
        self._kept: Kept[tuple[int, str], int] = Kept(monotonic, cache_seconds)
        self._insert = (
            db.insert(machines)
            .values(
                team_id=sa.bindparam("team_id"),
                machine_id=sa.bindparam("machine_id"),
                person_id=sa.bindparam("person_id"),
                first_seen_us=sa.bindparam("first_seen_us"),
            )
            .on_conflict_do_nothing()
        )

    def is_mine(self, conn: Connection, who: Principal, machine_id: str) -> bool:
        """Return True when ``machine_id`` belongs to ``who``, binding it on first use.

        Runs inside the caller's transaction ``conn``, so the binding commits with
        the operation that used the machine id.
        """
        known = self.owned_by(conn, who, machine_id)
        if known is not None:
            return known  # bound already: a read (or none), no write
        params = {"team_id": who.team_id, "machine_id": machine_id}
        conn.execute(
            self._insert,
            {**params, "person_id": who.person_id, "first_seen_us": self.db.now_us()},
        )
        person_id = conn.execute(MACHINE_PERSON, params).scalar_one()
        return bool(person_id == who.person_id)

    def check(self, conn: Connection, who: Principal, machine_id: str) -> None:
        """Bind ``machine_id`` to ``who`` on first use, or refuse when it is another's.

        Raises:
            Forbidden: ``machine_not_yours`` when another person of the team first
                used ``machine_id``.
        """
        if not self.is_mine(conn, who, machine_id):
            if self._kept.peek((who.team_id, machine_id)) == RETIRED or conn.execute(
                    MACHINE_PERSON, {"team_id": who.team_id, "machine_id": machine_id}
            ).scalar() == RETIRED:
                raise Forbidden(
                    "machine_retired",
                    f"machine {machine_id} was retired with its runner: Bees Cloud refuses "
                    "what it sends",
                    hint="a retired runner stays fenced; an admin adds a new runner (bees "
                         "cloud admin runner add NAME --pool POOL) with a fresh BEES_HOME")
            raise Forbidden(
                "machine_not_yours",
                f"machine {machine_id} belongs to another person of the team",
                hint="each computer has its own machine id; sign in on your own computer",
            )

    def forget(self) -> None:
        """Forget the bindings this process kept (a machine id was just retired)."""
        self._kept.clear()

    def owned_by(self, conn: Connection, who: Principal, machine_id: str) -> bool | None:
        """Return whether ``machine_id`` belongs to ``who`` without binding it (None: unknown).

        A binding read within the last :data:`AUTH_CACHE_SECONDS` is answered from memory.
        """
        params = {"team_id": who.team_id, "machine_id": machine_id}
        # A binding read here is committed: each operation reads a machine id before it
        # binds it, at most once per transaction, and committed bindings never change.
        person_id = self._kept.read(
            (who.team_id, machine_id), lambda: conn.execute(MACHINE_PERSON, params).scalar()
        )
        return None if person_id is None else bool(person_id == who.person_id)

    def kept(self, who: Principal, machine_id: str) -> bool | None:
        """Return whether ``machine_id`` belongs to ``who`` when this process read its binding
        within the last :data:`AUTH_CACHE_SECONDS`, else None (nothing is read or bound)."""
        person_id = self._kept.peek((who.team_id, machine_id))
        return None if person_id is None else bool(person_id == who.person_id)
