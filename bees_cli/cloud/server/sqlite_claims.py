"""Owner claims on SQLite answered from the event loop: one writer thread, claims in groups.

Why: through the thread path a claim cost about six times the CPU of a bare app doing the
same insert (issue 29, point 5): a hop to a worker thread and back per claim, SQLAlchemy's
execution, a ``SAVEPOINT`` per claim and the token's check inside the transaction. Here the
claims that arrive while a group is being written wait on the event loop and go to one writer
thread together (one hop per group); there each runs the same statements as
:meth:`~bees_cli.cloud.server.owners.Owners.claim` (:func:`~bees_cli.cloud.server.owners.
claim_statement`, compiled once by SQLAlchemy's SQLite dialect) on the driver's cursor, inside
one transaction of the process's group commit (:mod:`~bees_cli.cloud.server.group_commit`),
so they share its ``BEGIN IMMEDIATE``, its write lock and its fsync with every other writer of
the process. A claim is answered only after the commit that holds it.

The results are those of the thread path: the same statements in the same order with the same
looks, one writer at a time (SQLite), the same answers. As on PostgreSQL
(:mod:`~bees_cli.cloud.server.async_claims`), a claim is taken here only when this process
already knows the token's person (not a runner's) and the machine's binding to that person
(both kept for :data:`~bees_cli.cloud.server.people.AUTH_CACHE_SECONDS`); anything else goes
to the thread path, which reads, binds or refuses as before.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import sqlalchemy.exc

from bees_cli.cloud import wire
from bees_cli.cloud.server.owners import (
    CLAIM_LOOKS,
    OWNER_LATEST,
    Owners,
    claim_answer,
    claim_statement,
)
from bees_cli.cloud.server.people import Principal
from bees_cli.cloud.server.tables import owners as owner_rows

_Claim = tuple[Principal, wire.OwnerClaim, "asyncio.Future[tuple[Any, Any]]"]


class _Compiled:
    """A statement as SQLite SQL with ``?`` parameters, their names in order, its fixed
    values (SQLAlchemy's literals), and a row type naming its columns."""

    def __init__(self, owners: Owners, statement: Any, columns: list[str]) -> None:
        compiled = statement.compile(dialect=owners.db.engine.dialect)
        self.sql = str(compiled)
        self.names = list(compiled.positiontup or [])
        self.fixed = {k: v for k, v in compiled.params.items() if v is not None}
        self.row = namedtuple("Row", columns)  # type: ignore[misc]  # noqa: PYI024

    def order(self, names: list[str]) -> Any:
        """Return ``values(*given)``: the statement's parameters (fixed ones filled in) from
        values given in the order of ``names``."""
        spots = [names.index(name) if name in names else None for name in self.names]
        fixed = [self.fixed.get(name) for name in self.names]

        def values(*given: Any) -> list[Any]:
            return [fixed[n] if spot is None else given[spot] for n, spot in enumerate(spots)]

        return values

    def run(self, cursor: sqlite3.Cursor, values: list[Any]) -> Any:
        """Execute with ``values`` (all parameters, in order); return the first row or None."""
        found = cursor.execute(self.sql, values).fetchone()
        return None if found is None else self.row(*found)


class SqliteClaims:
    """The owner claims of one SQLite database, answered from the event loop.

    The writer thread starts at the first claim and stops with :meth:`close`. When a group's
    transaction fails, every claim in it fails with ``sqlalchemy.exc.OperationalError`` (the
    app answers 503, which clients retry; nothing of the group was committed).

    Args:
        owners: the owners of the database (its clock, its group commit, the kept tokens and
            bindings).
    """

    def __init__(self, owners: Owners) -> None:
        self.owners = owners
        self._claim = _Compiled(
            owners, claim_statement(owners.db), [column.name for column in owner_rows.c]
        )
        self._latest = _Compiled(
            owners, OWNER_LATEST, [c.name for c in OWNER_LATEST.selected_columns]
        )
        self._claim_values = self._claim.order(
            ["team_id", "item_id", "machine_id", "computer_name", "person_id", "since_us"]
        )
        self._latest_values = self._latest.order(["team_id", "item_id"])
        self._writer: ThreadPoolExecutor | None = None
        self._pending: list[_Claim] = []
        self._writing = False

    async def claim(self, token: str, claim: wire.OwnerClaim) -> wire.OwnerAnswer | None:
        """Claim ``claim.item_id`` for the asking machine, as :meth:`Owners.claim` does.

        Returns:
            The answer, or None when the claim needs the thread path (the token's person
            or the machine's binding is not known in this process, the token is a runner's,
            or the machine is another person's).

        Raises:
            Conflict: ``busy`` (see :meth:`Owners.claim`).
            sqlalchemy.exc.OperationalError: the group's transaction failed.
        """
        who = self.owners.people.kept(token)
        if (who is None or who.runner is not None  # a runner's claim checks its offer
                or self.owners.machines.kept(who, claim.machine_id) is not True):
            return None
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[Any, Any]] = loop.create_future()
        self._pending.append((who, claim, done))
        if not self._writing:
            self._writing = True
            loop.create_task(self._flush())
        won, latest = await done
        return claim_answer(who, claim, won, latest)

    async def _flush(self) -> None:
        """Write the waiting claims in groups until none waits (one task at a time)."""
        loop = asyncio.get_running_loop()
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="bees-claims")
        try:
            while self._pending:
                group, self._pending = self._pending, []
                try:
                    rows = await loop.run_in_executor(self._writer, self._write, group)
                except Exception as error:  # noqa: BLE001 - every claim of the group gets it
                    for _, _, done in group:
                        if not done.done():
                            done.set_exception(error)
                else:
                    for (_, _, done), row in zip(group, rows, strict=True):
                        if not done.done():
                            done.set_result(row)
        finally:
            self._writing = False

    def _write(self, group: list[_Claim]) -> list[tuple[Any, Any]]:
        """Run each claim of ``group`` in one transaction of the group commit (writer thread);
        return (won, latest) per claim, as :meth:`Owners.claim` finds them."""
        db = self.owners.db
        answers = []
        try:
            with db.driver_transaction() as driver:
                cursor = driver.cursor()
                try:
                    for who, claim, _done in group:
                        answers.append(self._one(cursor, who, claim))
                finally:
                    cursor.close()
        except sqlite3.Error as error:
            raise sqlalchemy.exc.OperationalError(self._claim.sql, None, error) from error
        return answers

    def _one(
        self, cursor: sqlite3.Cursor, who: Principal, claim: wire.OwnerClaim
    ) -> tuple[Any, Any]:
        """One claim's statements, as in :meth:`Owners.claim`: (won row, latest row)."""
        team, item, machine = who.team_id, claim.item_id, claim.machine_id
        for _look in range(CLAIM_LOOKS):
            values = self._claim_values(team, item, machine, claim.computer_name,
                                        who.person_id, self.owners.db.now_us())
            won = self._claim.run(cursor, values)
            if won is not None:
                return won, None
            latest = self._latest.run(cursor, self._latest_values(team, item))
            if latest is not None and latest.released_us is None:
                return None, latest
        return None, None

    async def close(self) -> None:
        """Stop the writer thread (after the group it is writing)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            await asyncio.get_running_loop().run_in_executor(None, writer.shutdown)
