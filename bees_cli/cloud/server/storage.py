"""Bees Cloud storage: one object over one database, with the operations of each resource.

The work is done by one module per resource; this class builds them over one
:class:`~bees_cli.cloud.server.engine.Database` and keeps the names the app, the
admin commands and the tests call::

    tables.py    the tables (the Alembic migrations build exactly these)
    engine.py    URL, SQLite pragmas, PostgreSQL pool, transactions, the clock
    people.py    teams, people, tokens; who a request's token is
    machines.py  machine ids: bound to the person whose token first used them
    keys.py      schedule keys: first asker wins, forever; the item each key made
    owners.py    owners: one row per epoch, released only by the holder
    records.py   the shared record: per item the greatest RecordKey wins
    refusals.py  the domain errors; only app.py turns them into HTTP statuses

A claim is one ``INSERT … ON CONFLICT DO NOTHING RETURNING``, read back only when it
inserted nothing, so a race has exactly one winner however many server processes answer.
A token's person and a machine's binding are kept in each process for
:data:`~bees_cli.cloud.server.people.AUTH_CACHE_SECONDS` (5 s): a revoke takes effect on
every replica within that bound. Times are stored as
integer microseconds since the Unix epoch, UTC.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Clock, Database, default_sqlite_url
from bees_cli.cloud.server.keys import Keys
from bees_cli.cloud.server.machines import Machines
from bees_cli.cloud.server.offers import Offers
from bees_cli.cloud.server.owners import Owners
from bees_cli.cloud.server.people import People, Principal, Who
from bees_cli.cloud.server.records import Records
from bees_cli.cloud.server.runners import Runners
from bees_cli.cloud.server.tables import metadata
from bees_cli.utc import utc_now

if TYPE_CHECKING:
    from bees_cli.cloud.server.async_claims import AsyncClaims
    from bees_cli.cloud.server.sqlite_claims import SqliteClaims

__all__ = ["Principal", "Storage", "default_sqlite_url", "metadata"]


class Storage:
    """All Bees Cloud data access; one instance per process, thread-safe.

    Each operation that takes ``who`` (a bearer token, or a :class:`Principal`)
    checks it inside its own transaction and raises
    :class:`~bees_cli.cloud.server.refusals.Unauthorized` for an unknown or revoked
    token; the other refusals are named per method.

    Args:
        url: SQLAlchemy URL (``sqlite:///…`` or ``postgresql+psycopg://…``).
        clock: returns the server's current time (UTC); injected by tests.
        migrate: run the Alembic migrations to head first (default True).
        monotonic: seconds of a monotonic clock for the caches of tokens and machine
            bindings (:data:`~bees_cli.cloud.server.people.AUTH_CACHE_SECONDS`); injected
            by tests.

    Raises:
        UserError: unsupported URL.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = utc_now,
        migrate: bool = True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = Database(url, clock=clock)
        self.url = url
        self.clock = clock
        self.engine = self.db.engine
        self.dialect = self.db.dialect
        if migrate:
            from bees_cli.cloud.server.migrations import upgrade

            upgrade(self.engine)
        self.people = People(self.db, monotonic=monotonic)
        self.machines = Machines(self.db, monotonic=monotonic)
        self.keys = Keys(self.db, self.people, self.machines)
        self.owners = Owners(self.db, self.people, self.machines)
        self.records = Records(self.db, self.people, self.machines)
        self.offers = Offers(self.db, self.people, self.machines)
        self.runners = Runners(self.db, self.people, self.machines)
        self.async_claims: AsyncClaims | SqliteClaims | None = None
        """Owner claims answered from the event loop (PostgreSQL: :mod:`.async_claims`;
        SQLite: :mod:`.sqlite_claims`)."""
        if self.dialect == "postgresql":
            from bees_cli.cloud.server.async_claims import AsyncClaims

            self.async_claims = AsyncClaims(self.owners)
        else:
            from bees_cli.cloud.server.sqlite_claims import SqliteClaims

            self.async_claims = SqliteClaims(self.owners)

    def close(self) -> None:
        """Close every pooled connection."""
        self.db.close()

    # -- people (see people.People) -----------------------------------------------------

    def add_team(self, name: str) -> bool:
        """Create team ``name``; return False when it already exists (:meth:`People.add_team`)."""
        return self.people.add_team(name)

    def add_person(self, email: str, team: str) -> str:
        """Add ``email`` to ``team`` and return a fresh token (:meth:`People.add_person`)."""
        return self.people.add_person(email, team)

    def revoke_person(self, email: str, team: str) -> int:
        """Revoke every live token of ``email`` in ``team`` (:meth:`People.revoke_person`)."""
        return self.people.revoke_person(email, team)

    def add_runner(self, name: str, pool: str, team: str) -> str:
        """Add runner ``name`` of ``pool`` to ``team``; return its token
        (:meth:`People.add_runner`)."""
        return self.people.add_runner(name, pool, team)

    def authenticate(self, token: str) -> Principal | None:
        """Return the person of ``token``, or None (:meth:`People.authenticate`)."""
        return self.people.authenticate(token)

    def authenticate_or_refuse(self, who: Who) -> Principal:
        """Return the person of ``who`` or refuse (:meth:`People.authenticate_or_refuse`)."""
        return self.people.authenticate_or_refuse(who)

    def me(self, who: Who) -> wire.Me:
        """Return who ``who`` is, the team and the server clock (:meth:`People.me`)."""
        return self.people.me(who)

    # -- schedule keys (see keys.Keys) --------------------------------------------------

    def claim_key(self, who: Who, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim a schedule key; granted or taken (:meth:`Keys.claim`)."""
        return self.keys.claim(who, claim)

    def report_key_item(self, who: Who, report: wire.KeyItem) -> wire.KeyAnswer:
        """Record the item a key produced (:meth:`Keys.report_item`)."""
        return self.keys.report_item(who, report)

    def held_keys(self, who: Who, machine_id: str, *, without_item: bool) -> list[wire.KeyAnswer]:
        """Return the asker's keys held by ``machine_id`` (:meth:`Keys.held`)."""
        return self.keys.held(who, machine_id, without_item=without_item)

    def key_disagreements(self, who: Who, machine_id: str) -> list[wire.KeyAnswer]:
        """Return the asker's keys placed at two instants (:meth:`Keys.disagreements`)."""
        return self.keys.disagreements(who, machine_id)

    # -- owners (see owners.Owners) -----------------------------------------------------

    def claim_owner(self, who: Who, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim an item for a machine; owner or taken (:meth:`Owners.claim`)."""
        return self.owners.claim(who, claim)

    def get_owner(self, who: Who, item_id: str) -> wire.Owner:
        """Return the latest owner row of ``item_id`` (:meth:`Owners.get`)."""
        return self.owners.get(who, item_id)

    def owner_history(self, who: Who, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id``, oldest first (:meth:`Owners.history`)."""
        return self.owners.history(who, item_id)

    def list_owners(self, who: Who) -> list[wire.Owner]:
        """Return the team's held items by item id (:meth:`Owners.held`)."""
        return self.owners.held(who)

    def release_owner(self, who: Who, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Release ``item_id`` by its owning machine (:meth:`Owners.release`)."""
        return self.owners.release(who, item_id, release)

    def repair_owner(self, who: Who, item_id: str, release: wire.OwnerRelease) -> wire.Owner:
        """Re-send the release of a free item by its last releaser (:meth:`Owners.repair`)."""
        return self.owners.repair(who, item_id, release)

    # -- offers (see offers.Offers) ---------------------------------------------------------

    def make_offer(self, who: Who, item_id: str, body: wire.OfferMake) -> wire.Offer:
        """Hand a released item to a pool (:meth:`Offers.offer`)."""
        return self.offers.offer(who, item_id, body)

    def list_offers(self, who: Who, pool: str | None, *, only_open: bool) -> list[wire.Offer]:
        """Return the team's offers (:meth:`Offers.listed`)."""
        return self.offers.listed(who, pool, only_open=only_open)

    def leave_offer(self, who: Who, item_id: str, body: wire.OfferLeave) -> wire.Offer:
        """Note why a runner leaves an offer (:meth:`Offers.leave`)."""
        return self.offers.leave(who, item_id, body)

    # -- runners (see runners.Runners) ------------------------------------------------------

    def runner_heard(self, who: Who, body: wire.RunnerHeard) -> wire.RunnerView:
        """Note a runner's heartbeat (:meth:`Runners.heard`)."""
        return self.runners.heard(who, body)

    def list_runners(self, who: Who) -> wire.RunnerList:
        """Return the team's runners (:meth:`Runners.listed`)."""
        return self.runners.listed(who)

    def retire_runner(self, name: str, team: str) -> wire.RunnerRetired:
        """Retire a runner: fence it, offer its items back (:meth:`Runners.retire`)."""
        return self.runners.retire(name, team)

    # -- shared record (see records.Records) --------------------------------------------

    def push(
        self, who: Who, batch: wire.RecordPush, *, generations: bool = False
    ) -> wire.PushAnswer:
        """Apply a batch; refuse changes one by one, per item the greatest key wins.

        See :meth:`Records.push` (``generations``: also list the changes that lost).
        """
        return self.records.push(who, batch, generations=generations)

    def pull(
        self, who: Who, since: int, limit: int = wire.MAX_PULL, *, generations: bool = False
    ) -> wire.PullAnswer:
        """Return the team's items changed after cursor ``since`` (:meth:`Records.pull`)."""
        return self.records.pull(who, since, limit, generations=generations)
