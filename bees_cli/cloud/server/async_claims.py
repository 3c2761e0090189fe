"""Owner claims on PostgreSQL answered on the event loop: psycopg's async pool, one statement.

Why: on PostgreSQL a claim is one ``INSERT … RETURNING`` (:func:`~bees_cli.cloud.server.owners.
claim_statement`), yet through the thread path it cost about ten times a bare insert's CPU
(issue 16): the hop to a worker thread and back, SQLAlchemy's execution and pool, and three
round trips (``BEGIN``, the insert, ``COMMIT``). Here the same statements, compiled once by
SQLAlchemy's PostgreSQL dialect, run on a connection of psycopg's async pool in autocommit:
the insert is its own transaction, so a won claim is one round trip, prepared on the server.

The results are those of :meth:`~bees_cli.cloud.server.owners.Owners.claim`: the same
statements in the same order with the same retries, each one seeing the latest commit
(READ COMMITTED gives every statement of the thread path's transaction a fresh snapshot
too), and the same answer. A claim is taken here only when this process already knows the
token's person and the machine's binding to that person (both kept for
:data:`~bees_cli.cloud.server.people.AUTH_CACHE_SECONDS`): the claim then writes nothing
but the owner row. Anything else (a token or a binding to read, a machine id to bind,
another person's machine) goes to the thread path, which reads, binds or refuses as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import sqlalchemy as sa
import sqlalchemy.exc

from bees_cli.cloud import wire
from bees_cli.cloud.server.owners import (
    CLAIM_LOOKS,
    OWNER_LATEST,
    Owners,
    claim_answer,
    claim_statement,
)

POOL_MOST = 16
"""Most connections the async pool opens (one per claim in flight; more claims wait)."""
POOL_LEAST = 2
"""Connections the async pool keeps open when idle."""


def _compiled(owners: Owners, statement: Any) -> tuple[str, dict[str, Any]]:
    """Return ``statement`` as PostgreSQL SQL for psycopg, and the values of the parameters
    SQLAlchemy made for its literals (``LIMIT 1``, ``COALESCE(…, 0) + 1``)."""
    compiled = statement.compile(dialect=owners.db.engine.dialect)
    fixed = {name: value for name, value in compiled.params.items() if value is not None}
    return str(compiled), fixed


class AsyncClaims:
    """The owner claims of one PostgreSQL database, answered on the event loop.

    The pool opens at the first claim (in the running event loop) and closes with
    :meth:`close`. A connection that breaks fails its claim with
    ``sqlalchemy.exc.OperationalError`` (the app answers 503, which clients retry; a
    retry is answered ``owner`` again) and is replaced.

    Args:
        owners: the owners of the database (its clock, the kept tokens and bindings).
    """

    def __init__(self, owners: Owners) -> None:
        self.owners = owners
        self._claim_sql, self._claim_fixed = _compiled(owners, claim_statement(owners.db))
        self._latest_sql, self._latest_fixed = _compiled(owners, OWNER_LATEST)
        url = sa.make_url(owners.db.url).set(drivername="postgresql")
        self._conninfo = url.render_as_string(hide_password=False)
        self._pool: Any = None
        self._opening = asyncio.Lock()

    async def claim(self, token: str, claim: wire.OwnerClaim) -> wire.OwnerAnswer | None:
        """Claim ``claim.item_id`` for the asking machine, as :meth:`Owners.claim` does.

        Returns:
            The answer, or None when the claim needs the thread path (the token's person
            or the machine's binding is not known in this process, or the machine is
            another person's).

        Raises:
            Conflict: ``busy`` (see :meth:`Owners.claim`).
            sqlalchemy.exc.OperationalError: the database could not be reached, or the
                connection broke.
        """
        who = self.owners.people.kept(token)
        if (who is None or who.runner is not None  # a runner's claim checks its offer
                or self.owners.machines.kept(who, claim.machine_id) is not True):
            return None
        values = {
            **self._claim_fixed,
            "team_id": who.team_id,
            "item_id": claim.item_id,
            "machine_id": claim.machine_id,
            "computer_name": claim.computer_name,
            "person_id": who.person_id,
        }
        latest_of = {**self._latest_fixed, "team_id": who.team_id, "item_id": claim.item_id}
        pool = self._pool or await self._open()
        won = latest = None
        try:
            async with pool.connection() as conn:
                for _look in range(CLAIM_LOOKS):
                    values["since_us"] = self.owners.db.now_us()
                    cursor = await conn.execute(self._claim_sql, values, prepare=True)
                    won = await cursor.fetchone()
                    if won is not None:
                        break
                    cursor = await conn.execute(self._latest_sql, latest_of, prepare=True)
                    latest = await cursor.fetchone()
                    if latest is not None and latest.released_us is None:
                        break
                    latest = None  # held and released again meanwhile: look once more
        except psycopg.OperationalError as error:
            raise sqlalchemy.exc.OperationalError(self._claim_sql, values, error) from error
        return claim_answer(who, claim, won, latest)

    async def _open(self) -> Any:
        """Open the pool in the running event loop (once)."""
        async with self._opening:
            if self._pool is None:
                from psycopg.rows import namedtuple_row
                from psycopg_pool import AsyncConnectionPool

                pool: Any = AsyncConnectionPool(
                    self._conninfo,
                    min_size=POOL_LEAST,
                    max_size=POOL_MOST,
                    kwargs={"autocommit": True, "row_factory": namedtuple_row},
                    open=False,
                    name="bees-claims",
                )
                await pool.open()
                self._pool = pool
        return self._pool

    async def close(self) -> None:
        """Close the pool's connections (if it was opened)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
