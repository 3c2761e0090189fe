"""Owner claims on PostgreSQL answered on the event loop: async psycopg, one statement.

Why: on PostgreSQL a claim is one ``INSERT … RETURNING`` (:func:`~bees_cli.cloud.server.owners.
claim_statement`), yet through the thread path it cost about ten times a bare insert's CPU
(issue 16): the hop to a worker thread and back, SQLAlchemy's execution and pool, and three
round trips (``BEGIN``, the insert, ``COMMIT``). Here the same statements, compiled once by
SQLAlchemy's PostgreSQL dialect, run on one of a few async psycopg connections in autocommit:
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
import collections
import re
from typing import Any

import psycopg
import sqlalchemy as sa
import sqlalchemy.exc
from psycopg.pq import TransactionStatus

from bees_cli.cloud import wire
from bees_cli.cloud.server.owners import (
    CLAIM_LOOKS,
    OWNER_LATEST,
    Owners,
    claim_answer,
    claim_statement,
)
from bees_cli.cloud.server.tables import owners as owner_rows

POOL_MOST = 16
"""Most connections the claims open (one per claim in flight; more claims wait)."""
APPLICATION = "bees-claims"
"""The ``application_name`` of the claims' connections (``pg_stat_activity`` shows it)."""


class _Connections:
    """At most :data:`POOL_MOST` autocommit connections, opened when first needed, each
    lent to one claim at a time; one that comes back broken (or mid-statement) is closed
    and its place opened again by the next claim that needs one.

    Why not psycopg_pool: its checks, statistics and background workers cost a tenth of a
    claim's CPU (issue 29, point 5); a claim needs a connection and nothing else.
    """

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self.opened = 0
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._closing: set[asyncio.Task[None]] = set()

    async def get(self) -> psycopg.AsyncConnection[Any]:
        """Return an idle connection, a new one, or the next one given back.

        Raises:
            psycopg.OperationalError: a new connection could not be opened.
        """
        while True:
            if self._idle:
                return self._idle.pop()
            if self.opened < POOL_MOST:
                self.opened += 1
                try:
                    return await psycopg.AsyncConnection.connect(
                        self.conninfo, autocommit=True, application_name=APPLICATION
                    )
                except BaseException:
                    self.opened -= 1
                    self._hand(None)
                    raise
            waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                conn = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    self.put(waiter.result())
                raise
            if conn is not None:
                return conn  # else a place was freed: open one

    def put(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Take ``conn`` back: to a waiting claim, or idle; closed when it is not idle."""
        if conn.closed or conn.pgconn.transaction_status != TransactionStatus.IDLE:
            self.opened -= 1
            task = asyncio.get_running_loop().create_task(conn.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            self._hand(None)
            return
        if not self._hand(conn):
            self._idle.append(conn)

    def _hand(self, conn: psycopg.AsyncConnection[Any] | None) -> bool:
        """Give ``conn`` (None: a free place) to the first claim still waiting, if any."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return True
        return False

    async def close(self) -> None:
        """Close the idle connections (those lent out are closed when given back)."""
        idle, self._idle = self._idle, []
        self.opened -= len(idle)
        for conn in idle:
            await conn.close()


def _compiled(owners: Owners, statement: Any) -> tuple[str, list[str]]:
    """Return ``statement`` as PostgreSQL SQL for psycopg with positional parameters, the
    literals SQLAlchemy made parameters of (``LIMIT 1``, ``COALESCE(…, 0) + 1``) written
    in, and the names of its parameters in order (a name used twice is there twice).

    Why positional: psycopg maps named parameters to positions at every execution."""
    compiled = statement.compile(dialect=owners.db.engine.dialect)
    fixed = {name: value for name, value in compiled.params.items() if value is not None}
    names: list[str] = []

    def place(found: re.Match[str]) -> str:
        name = found.group(1)
        if name in fixed:
            return str(int(fixed[name]))
        names.append(name)
        return "%s"

    return re.sub(r"%\((\w+)\)s", place, str(compiled)), names


class AsyncClaims:
    """The owner claims of one PostgreSQL database, answered on the event loop.

    Connections open at the first claims (in the running event loop) and close with
    :meth:`close`. A connection that breaks fails its claim with
    ``sqlalchemy.exc.OperationalError`` (the app answers 503, which clients retry; a
    retry is answered ``owner`` again) and is replaced.

    Args:
        owners: the owners of the database (its clock, the kept tokens and bindings).
    """

    def __init__(self, owners: Owners) -> None:
        self.owners = owners
        self._claim_sql, self._claim_names = _compiled(owners, claim_statement(owners.db))
        self._latest_sql, self._latest_names = _compiled(owners, OWNER_LATEST)
        url = sa.make_url(owners.db.url).set(drivername="postgresql")
        self._connections = _Connections(url.render_as_string(hide_password=False))
        self._claim_row = collections.namedtuple(  # type: ignore[misc]  # noqa: PYI024
            "Row", [column.name for column in owner_rows.c])
        latest_columns = [column.name for column in OWNER_LATEST.selected_columns]
        self._latest_row = collections.namedtuple(  # type: ignore[misc]  # noqa: PYI024
            "Row", latest_columns)
        self._released = latest_columns.index("released_us")

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
            "team_id": who.team_id,
            "item_id": claim.item_id,
            "machine_id": claim.machine_id,
            "computer_name": claim.computer_name,
            "person_id": who.person_id,
        }
        latest_of = [values[name] for name in self._latest_names]
        won = latest = None
        conn = None
        try:
            conn = await self._connections.get()
            for _look in range(CLAIM_LOOKS):
                values["since_us"] = self.owners.db.now_us()
                given = [values[name] for name in self._claim_names]
                cursor = await conn.execute(self._claim_sql, given, prepare=True)
                found = await cursor.fetchone()
                if found is not None:
                    won = self._claim_row(*found)
                    break
                cursor = await conn.execute(self._latest_sql, latest_of, prepare=True)
                found = await cursor.fetchone()
                if found is not None and found[self._released] is None:
                    latest = self._latest_row(*found)
                    break
                # held and released again meanwhile: look once more
        except psycopg.OperationalError as error:
            raise sqlalchemy.exc.OperationalError(self._claim_sql, values, error) from error
        finally:
            if conn is not None:
                self._connections.put(conn)
        return claim_answer(who, claim, won, latest)

    async def close(self) -> None:
        """Close the idle connections."""
        await self._connections.close()
