"""Bees Cloud storage over SQLAlchemy 2: teams, people, tokens, keys, owners, the shared record.

Rules kept here (DESIGN.md "Owners", "Schedules", "Shared record"):

* A claim is one ``INSERT … ON CONFLICT DO NOTHING`` followed by a read of the row,
  so a race has exactly one winner however many server processes answer.
* Schedule keys are unique per (team, person, schedule id, scheduled time).
* Owners are rows of (team, item, epoch); at most one row per item is unreleased
  (a partial unique index), and only the machine that holds it may release it.
  A release frees the item; the next claim makes epoch + 1. Nothing is deleted.
* The shared record keeps, per item, the change with the greatest
  (origin time, machine id, content digest): the same on every server whatever the
  order of arrival. Each applied change takes a fresh per-team sequence number;
  pushes of one team are serialised on the team row, so sequence numbers become
  visible in order and a pull ``since`` a cursor never misses one.

Times are stored as integer microseconds since the Unix epoch, UTC.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bees_cli.cloud import wire
from bees_cli.errors import NotFound, UserError

metadata = sa.MetaData()

teams = sa.Table(
    "teams",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.Column("record_seq", sa.BigInteger, nullable=False, server_default="0"),
)

people = sa.Table(
    "people",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("email", sa.String(320), nullable=False),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("team_id", "email", name="uq_people_team_email"),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("token_id", sa.String(32), nullable=False, unique=True),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False),
    sa.Column("created_us", sa.BigInteger, nullable=False),
    sa.Column("revoked_us", sa.BigInteger, nullable=True),
)

keys = sa.Table(
    "schedule_keys",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("schedule_id", sa.String(200), nullable=False),
    sa.Column("scheduled_us", sa.BigInteger, nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("computer_name", sa.String(200), nullable=False),
    sa.Column("granted_us", sa.BigInteger, nullable=False),
    sa.UniqueConstraint(
        "team_id", "person_id", "schedule_id", "scheduled_us", name="uq_keys_person_time"
    ),
)

owners = sa.Table(
    "owners",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("item_id", sa.String(200), nullable=False),
    sa.Column("epoch", sa.Integer, nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("computer_name", sa.String(200), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("since_us", sa.BigInteger, nullable=False),
    sa.Column("released_us", sa.BigInteger, nullable=True),
    sa.Column("restart_stages", sa.Text, nullable=True),
    sa.Column("checkpoint_sha256", sa.String(64), nullable=True),
    sa.UniqueConstraint("team_id", "item_id", "epoch", name="uq_owners_item_epoch"),
    sa.Index(
        "uq_owners_item_held",
        "team_id",
        "item_id",
        unique=True,
        sqlite_where=sa.text("released_us IS NULL"),
        postgresql_where=sa.text("released_us IS NULL"),
    ),
)

record = sa.Table(
    "record_items",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("item_id", sa.String(200), nullable=False),
    sa.Column("fields", sa.Text, nullable=False),
    sa.Column("digest", sa.String(64), nullable=False),
    sa.Column("origin_us", sa.BigInteger, nullable=False),
    sa.Column("machine_id", sa.String(200), nullable=False),
    sa.Column("person_id", sa.Integer, sa.ForeignKey("people.id"), nullable=False),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.UniqueConstraint("team_id", "item_id", name="uq_record_item"),
    sa.Index("ix_record_team_seq", "team_id", "seq"),
)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """Return the current time in UTC (the default server clock)."""
    return datetime.now(UTC)


def to_us(moment: datetime) -> int:
    """Return a zoned ``datetime`` as integer microseconds since the Unix epoch (UTC)."""
    delta = moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: int) -> datetime:
    """Return integer microseconds since the Unix epoch as a UTC ``datetime``."""
    from datetime import timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)


def canonical_json(value: Any) -> str:
    """Return ``value`` as compact JSON with sorted keys (the stored and digested form)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def default_sqlite_url() -> str:
    """Return the default database URL: ``cloud.db`` in this computer's data dir (SQLite)."""
    from bees_cli.machine.paths import data_dir

    return f"sqlite:///{data_dir() / 'cloud.db'}"


class ApiProblem(Exception):
    """A request the server refuses; the app turns it into ``{"error": …}`` with ``status``.

    Args:
        status: HTTP status (4xx).
        code: stable error code, e.g. ``not_owner``.
        message: one line.
        hint: one line or None.
        owner: the owner row to report (``not_owner``), or None.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        hint: str | None = None,
        owner: wire.Owner | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.owner = owner


@dataclass(frozen=True)
class Principal:
    """The person a request's token belongs to, and their team."""

    person_id: int
    email: str
    team_id: int
    team: str


TOKEN_PREFIX = "bees"


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


_DUMMY_HASH = _hash_secret("not a secret")


def create_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Return a SQLAlchemy engine for ``url`` set up for Bees Cloud.

    SQLite: WAL journal, 30 s busy timeout, ``synchronous=FULL`` and every
    transaction ``BEGIN IMMEDIATE`` unless the connection has the execution option
    ``bees_read`` (writers queue instead of failing on a lock upgrade).
    PostgreSQL (``postgresql+psycopg://``): a pool, READ COMMITTED; a dropped
    connection fails one request (503, which clients retry) and is replaced.

    Raises:
        UserError: the URL is not a SQLite or PostgreSQL URL, or the SQLite folder is missing.
    """
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:":
            folder = Path(database).expanduser().resolve().parent
            if not folder.is_dir():
                raise UserError(f"{folder}: no such folder for the SQLite database")
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": 30, "check_same_thread": False},
            pool_size=pool_size,
            max_overflow=pool_size,
        )

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            read = conn.get_execution_options().get("bees_read", False)
            conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

        return engine
    if backend == "postgresql":
        return sa.create_engine(
            parsed, pool_size=pool_size, max_overflow=pool_size * 2, pool_recycle=3600
        )
    raise UserError(
        f"unsupported database URL {parsed.render_as_string(hide_password=True)!r}",
        hint="use sqlite:///PATH or postgresql+psycopg://USER@HOST/DB",
    )


class Storage:
    """All Bees Cloud data access; one instance per process, thread-safe.

    Args:
        url: SQLAlchemy URL (``sqlite:///…`` or ``postgresql+psycopg://…``).
        clock: returns the server's current time (UTC); injected by tests.
        migrate: run the Alembic migrations to head first (default True).

    Raises:
        UserError: unsupported URL.
        sqlalchemy.exc.OperationalError: the database cannot be reached.
    """

    def __init__(self, url: str, *, clock: Clock = utc_now, migrate: bool = True) -> None:
        self.url = url
        self.clock = clock
        self.engine = create_engine(url)
        self.dialect = self.engine.dialect.name
        self._write_lock: AbstractContextManager[Any] = (
            threading.Lock() if self.dialect == "sqlite" else nullcontext()
        )
        if migrate:
            from bees_cli.cloud.server.migrations import upgrade

            upgrade(self.engine)

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    @contextmanager
    def _tx(self, *, write: bool = True) -> Iterator[Connection]:
        """One transaction; on SQLite, writers of this process queue on a lock first.

        Why: SQLite lets one writer in at a time; a Python lock makes the others wait
        in order instead of polling the file lock with growing sleeps.
        """
        lock = self._write_lock if write else nullcontext()
        with lock, self.engine.connect() as conn:
            if not write:
                conn.execution_options(bees_read=True)
            with conn.begin():
                yield conn

    def _who(self, conn: Connection, who: Principal | str) -> Principal:
        if isinstance(who, Principal):
            return who
        found = self._authenticate(conn, who)
        if found is None:
            raise ApiProblem(
                401,
                "unauthorized",
                "the token is unknown or revoked",
                hint="ask your team admin for a new token (`bees cloud person add`)",
            )
        return found

    def _insert(self, table: sa.Table) -> Any:
        if self.dialect == "postgresql":
            from sqlalchemy.dialects import postgresql

            return postgresql.insert(table)
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(table)

    def _now_us(self) -> int:
        return to_us(self.clock())

    # -- administration ---------------------------------------------------------------

    def add_team(self, name: str) -> bool:
        """Create team ``name``; return False when it already exists.

        Raises:
            UserError: the name is not a valid id.
        """
        name = _valid(wire.check_id, name, "team name")
        with self._tx() as conn:
            result = conn.execute(
                self._insert(teams)
                .values(name=name, created_us=self._now_us(), record_seq=0)
                .on_conflict_do_nothing()
                .returning(teams.c.id)
            )
            return len(result.all()) == 1

    def add_person(self, email: str, team: str) -> str:
        """Add ``email`` to ``team`` (if new) and return a fresh bearer token, shown once.

        Only the SHA-256 of the token's secret is stored.

        Raises:
            UserError: bad email.
            NotFound: no such team.
        """
        email = _valid(wire.check_email, email, "email")
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        now = self._now_us()
        with self._tx() as conn:
            team_id = self._team_id(conn, team)
            conn.execute(
                self._insert(people)
                .values(team_id=team_id, email=email, created_us=now)
                .on_conflict_do_nothing()
            )
            person_id = conn.execute(
                sa.select(people.c.id).where(people.c.team_id == team_id, people.c.email == email)
            ).scalar_one()
            conn.execute(
                tokens.insert().values(
                    token_id=token_id,
                    person_id=person_id,
                    secret_sha256=_hash_secret(secret),
                    created_us=now,
                )
            )
        return f"{TOKEN_PREFIX}.{token_id}.{secret}"

    def revoke_person(self, email: str, team: str) -> int:
        """Revoke every live token of ``email`` in ``team``; return how many were revoked.

        Raises:
            NotFound: no such team or person.
        """
        email = email.strip().lower()
        with self._tx() as conn:
            team_id = self._team_id(conn, team)
            person_id = conn.execute(
                sa.select(people.c.id).where(people.c.team_id == team_id, people.c.email == email)
            ).scalar_one_or_none()
            if person_id is None:
                raise NotFound(f"no person {email!r} in team {team!r}")
            result = conn.execute(
                tokens.update()
                .where(tokens.c.person_id == person_id, tokens.c.revoked_us.is_(None))
                .values(revoked_us=self._now_us())
            )
            return int(result.rowcount)

    def _team_id(self, conn: Connection, team: str) -> int:
        team_id = conn.execute(sa.select(teams.c.id).where(teams.c.name == team)).scalar()
        if team_id is None:
            raise NotFound(f"no team {team!r}", hint=f"create it with `bees cloud team add {team}`")
        return int(team_id)

    # -- authentication -----------------------------------------------------------------

    def authenticate(self, token: str) -> Principal | None:
        """Return the person of a bearer ``token``, or None when it is unknown or revoked.

        The secret's hash is compared with :func:`hmac.compare_digest` (constant time),
        also when the token id is unknown.
        """
        with self._tx(write=False) as conn:
            return self._authenticate(conn, token)

    def authenticate_or_refuse(self, who: Principal | str) -> Principal:
        """Return the person of ``who`` (a token or an already known person).

        Raises:
            ApiProblem: 401 ``unauthorized`` for an unknown or revoked token.
        """
        if isinstance(who, Principal):
            return who
        with self._tx(write=False) as conn:
            return self._who(conn, who)

    def me(self, who: Principal | str) -> wire.Me:
        """Return who ``who`` is, the team, and the server clock (UTC).

        Raises:
            ApiProblem: 401 ``unauthorized``.
        """
        found = self.authenticate_or_refuse(who)
        return wire.Me(person=found.email, team=found.team, server_time=self.clock())

    def _authenticate(self, conn: Connection, token: str) -> Principal | None:
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or len(parts[1]) != 16:
            return None
        row = conn.execute(
            sa.select(
                tokens.c.secret_sha256,
                tokens.c.revoked_us,
                people.c.id,
                people.c.email,
                teams.c.id.label("team_id"),
                teams.c.name,
            )
            .join(people, people.c.id == tokens.c.person_id)
            .join(teams, teams.c.id == people.c.team_id)
            .where(tokens.c.token_id == parts[1])
        ).first()
        expected = row.secret_sha256 if row is not None else _DUMMY_HASH
        matches = hmac.compare_digest(expected, _hash_secret(parts[2]))
        if row is None or not matches or row.revoked_us is not None:
            return None
        return Principal(person_id=row.id, email=row.email, team_id=row.team_id, team=row.name)

    # -- schedule keys ------------------------------------------------------------------

    def claim_key(self, who: Principal | str, claim: wire.KeyClaim) -> wire.KeyAnswer:
        """Claim the schedule key (person, schedule, time); first asker wins, forever.

        Returns ``granted`` when ``claim.machine_id`` holds the key (also on a repeat),
        else ``taken`` with the holder's computer and grant time.
        """
        scheduled_us = to_us(claim.scheduled_time)
        with self._tx() as conn:
            who = self._who(conn, who)
            where = (
                keys.c.team_id == who.team_id,
                keys.c.person_id == who.person_id,
                keys.c.schedule_id == claim.schedule_id,
                keys.c.scheduled_us == scheduled_us,
            )
            conn.execute(
                self._insert(keys)
                .values(
                    team_id=who.team_id,
                    person_id=who.person_id,
                    schedule_id=claim.schedule_id,
                    scheduled_us=scheduled_us,
                    machine_id=claim.machine_id,
                    computer_name=claim.computer_name,
                    granted_us=self._now_us(),
                )
                .on_conflict_do_nothing()
            )
            row = conn.execute(sa.select(keys).where(*where)).one()
        return wire.KeyAnswer(
            status="granted" if row.machine_id == claim.machine_id else "taken",
            schedule_id=row.schedule_id,
            scheduled_time=from_us(row.scheduled_us),
            person=who.email,
            machine_id=row.machine_id,
            computer_name=row.computer_name,
            granted_at=from_us(row.granted_us),
        )

    # -- owners -------------------------------------------------------------------------

    def _owner_select(self) -> sa.Select[Any]:
        return sa.select(owners, people.c.email).join(people, people.c.id == owners.c.person_id)

    @staticmethod
    def _owner(row: Any) -> wire.Owner:
        release = None
        if row.released_us is not None:
            release = wire.Release(
                released_at=from_us(row.released_us),
                restart_stages=json.loads(row.restart_stages or "{}"),
                checkpoint_sha256=row.checkpoint_sha256 or "",
            )
        return wire.Owner(
            item_id=row.item_id,
            epoch=row.epoch,
            machine_id=row.machine_id,
            computer_name=row.computer_name,
            person=row.email,
            since=from_us(row.since_us),
            release=release,
        )

    def _latest_owner(self, conn: Connection, team_id: int, item_id: str) -> Any:
        return conn.execute(
            self._owner_select()
            .where(owners.c.team_id == team_id, owners.c.item_id == item_id)
            .order_by(owners.c.epoch.desc())
            .limit(1)
        ).first()

    def claim_owner(self, who: Principal | str, claim: wire.OwnerClaim) -> wire.OwnerAnswer:
        """Claim ``claim.item_id`` for the asking machine; one winner per free epoch.

        A held item answers ``owner`` to its holder (same row, same ``since``: a retry
        is safe) and ``taken`` to everyone else. A free item (never claimed, or
        released) gets a new owner row at the next epoch through one
        ``INSERT … ON CONFLICT DO NOTHING``; the row read back names the winner.
        """
        with self._tx() as conn:
            who = self._who(conn, who)
            for _attempt in range(50):
                latest = self._latest_owner(conn, who.team_id, claim.item_id)
                if latest is None or latest.released_us is not None:
                    # Free: one INSERT decides the next epoch's owner. In PostgreSQL
                    # (READ COMMITTED) it waits for a concurrent insert of the same
                    # epoch and then does nothing; each read sees the latest commit.
                    epoch = 1 if latest is None else latest.epoch + 1
                    conn.execute(
                        self._insert(owners)
                        .values(
                            team_id=who.team_id,
                            item_id=claim.item_id,
                            epoch=epoch,
                            machine_id=claim.machine_id,
                            computer_name=claim.computer_name,
                            person_id=who.person_id,
                            since_us=self._now_us(),
                        )
                        .on_conflict_do_nothing()
                    )
                    latest = self._latest_owner(conn, who.team_id, claim.item_id)
                    if latest is None or latest.released_us is not None:
                        continue  # held and released again meanwhile: look once more
                mine = latest.machine_id == claim.machine_id and latest.person_id == who.person_id
                return wire.OwnerAnswer(
                    status="owner" if mine else "taken", owner=self._owner(latest)
                )
        raise ApiProblem(409, "busy", "the item changed hands too often; try again")

    def get_owner(self, who: Principal | str, item_id: str) -> wire.Owner:
        """Return the latest owner row of ``item_id`` in the asker's team.

        Raises:
            ApiProblem: 404 ``no_owner`` when the item was never claimed in this team.
        """
        with self._tx(write=False) as conn:
            who = self._who(conn, who)
            row = self._latest_owner(conn, who.team_id, item_id)
        if row is None:
            raise ApiProblem(404, "no_owner", f"item {item_id} has never been claimed")
        return self._owner(row)

    def owner_history(self, who: Principal | str, item_id: str) -> list[wire.Owner]:
        """Return every owner row of ``item_id`` in the asker's team, oldest epoch first."""
        with self._tx(write=False) as conn:
            who = self._who(conn, who)
            rows = conn.execute(
                self._owner_select()
                .where(owners.c.team_id == who.team_id, owners.c.item_id == item_id)
                .order_by(owners.c.epoch)
            ).all()
        return [self._owner(row) for row in rows]

    def list_owners(self, who: Principal | str) -> list[wire.Owner]:
        """Return the items of the asker's team that are held now, sorted by item id."""
        with self._tx(write=False) as conn:
            who = self._who(conn, who)
            rows = conn.execute(
                self._owner_select()
                .where(owners.c.team_id == who.team_id, owners.c.released_us.is_(None))
                .order_by(owners.c.item_id)
            ).all()
        return [self._owner(row) for row in rows]

    def release_owner(
        self, who: Principal | str, item_id: str, release: wire.OwnerRelease
    ) -> wire.Owner:
        """Release ``item_id`` by its owning machine; return the released owner row.

        The row keeps the release time, each piece's restart stage and the
        checkpoint's SHA-256. A repeated release of the same epoch by the same
        machine returns the stored answer unchanged.

        Raises:
            ApiProblem: 404 ``no_owner`` (never claimed, or no such epoch);
                403 ``not_owner`` with the owner row when another machine or
                person holds (or held) it.
        """
        with self._tx() as conn:
            who = self._who(conn, who)
            query = self._owner_select().where(
                owners.c.team_id == who.team_id, owners.c.item_id == item_id
            )
            if release.epoch is not None:
                row = conn.execute(query.where(owners.c.epoch == release.epoch)).first()
            else:
                row = self._latest_owner(conn, who.team_id, item_id)
            if row is None:
                raise ApiProblem(404, "no_owner", f"item {item_id} has no such owner")
            if row.machine_id != release.machine_id or row.person_id != who.person_id:
                owner = self._owner(row)
                raise ApiProblem(
                    403,
                    "not_owner",
                    f"item {item_id} is owned by {owner.computer_name} ({owner.person},"
                    f" machine {owner.machine_id}) since {owner.since.isoformat()}",
                    hint="only the owning computer can relinquish it",
                    owner=owner,
                )
            if row.released_us is None:
                conn.execute(
                    owners.update()
                    .where(owners.c.id == row.id, owners.c.released_us.is_(None))
                    .values(
                        released_us=self._now_us(),
                        restart_stages=canonical_json(release.restart_stages),
                        checkpoint_sha256=release.checkpoint_sha256,
                    )
                )
                row = conn.execute(query.where(owners.c.id == row.id)).one()
        return self._owner(row)

    # -- shared record ------------------------------------------------------------------

    def push(self, who: Principal | str, batch: wire.RecordPush) -> wire.PushAnswer:
        """Apply a batch of record changes; per item the greatest key wins.

        The key is (origin time, machine id, SHA-256 of the canonical fields), so any
        order and any split into batches ends in the same record. The whole batch is
        refused, nothing written, when a change comes from a machine other than the
        item's current owner.

        Raises:
            ApiProblem: 409 ``not_owner`` naming the item and its owner.
        """
        changes = batch.changes
        item_ids = sorted({c.item_id for c in changes})
        with self._tx() as conn:
            who = self._who(conn, who)
            if not changes:
                return wire.PushAnswer(received=0, applied=0)
            held = {
                row.item_id: row
                for row in conn.execute(
                    self._owner_select().where(
                        owners.c.team_id == who.team_id,
                        owners.c.item_id.in_(item_ids),
                        owners.c.released_us.is_(None),
                    )
                )
            }
            for change in changes:
                row = held.get(change.item_id)
                if row is not None and row.machine_id != change.machine_id:
                    owner = self._owner(row)
                    raise ApiProblem(
                        409,
                        "not_owner",
                        f"item {change.item_id} is owned by {owner.computer_name}"
                        f" (machine {owner.machine_id}); machine {change.machine_id}"
                        " may not change it",
                        hint="only the owning computer sends changes to an item",
                        owner=owner,
                    )
            last = conn.execute(
                teams.update()
                .where(teams.c.id == who.team_id)
                .values(record_seq=teams.c.record_seq + len(changes))
                .returning(teams.c.record_seq)
            ).scalar_one()
            seq = int(last) - len(changes)
            applied = 0
            for change in changes:
                seq += 1
                fields = canonical_json(change.fields)
                values = {
                    "team_id": who.team_id,
                    "item_id": change.item_id,
                    "fields": fields,
                    "digest": hashlib.sha256(fields.encode("utf-8")).hexdigest(),
                    "origin_us": to_us(change.origin_time),
                    "machine_id": change.machine_id,
                    "person_id": who.person_id,
                    "seq": seq,
                }
                stmt = self._insert(record).values(**values)
                newer = sa.tuple_(
                    stmt.excluded.origin_us, stmt.excluded.machine_id, stmt.excluded.digest
                ) > sa.tuple_(record.c.origin_us, record.c.machine_id, record.c.digest)
                result = conn.execute(
                    stmt.on_conflict_do_update(
                        index_elements=["team_id", "item_id"],
                        set_={k: stmt.excluded[k] for k in values if k != "team_id"},
                        where=newer,
                    ).returning(record.c.id)
                )
                applied += len(result.all())  # a row comes back only when written
        return wire.PushAnswer(received=len(changes), applied=applied)

    def pull(self, who: Principal | str, since: int, limit: int = wire.MAX_PULL) -> wire.PullAnswer:
        """Return the team's items whose sequence number is greater than ``since``.

        Cost depends on the number of changes returned, not on the record's size
        (index on team and sequence).
        """
        with self._tx(write=False) as conn:
            who = self._who(conn, who)
            rows = conn.execute(
                sa.select(record, people.c.email)
                .join(people, people.c.id == record.c.person_id)
                .where(record.c.team_id == who.team_id, record.c.seq > since)
                .order_by(record.c.seq)
                .limit(limit + 1)
            ).all()
        more = len(rows) > limit
        rows = rows[:limit]
        entries = [
            wire.RecordEntry(
                item_id=row.item_id,
                fields=json.loads(row.fields),
                origin_time=from_us(row.origin_us),
                machine_id=row.machine_id,
                person=row.email,
                seq=row.seq,
            )
            for row in rows
        ]
        cursor = entries[-1].seq if entries else since
        return wire.PullAnswer(changes=entries, cursor=cursor, more=more)


def _valid(check: Callable[[str], str], value: str, what: str) -> str:
    try:
        return check(value)
    except ValueError as error:
        raise UserError(f"bad {what} {value!r}: {error}") from None
