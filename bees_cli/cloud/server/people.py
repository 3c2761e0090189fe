"""Teams, people and their bearer tokens: administration and authentication of each request."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bees_cli.cloud import wire
from bees_cli.cloud.server.engine import Database
from bees_cli.cloud.server.refusals import Unauthorized
from bees_cli.cloud.server.tables import people, runners, teams, tokens
from bees_cli.errors import NotFound, UserError

TOKEN_PREFIX = "bees"
"""First part of every token: ``bees.<16 hex token id>.<secret>``."""
AUTH_CACHE_SECONDS = 5.0
"""Seconds a server process keeps a token's person after reading it from the database.

A revoke (``bees cloud person revoke``) therefore takes effect within this bound on every
server process (replica) that answered the token before; the process that revokes forgets
its own copy at once. Unknown and revoked tokens are never cached."""
AUTH_CACHE_SIZE = 10_000
"""Most tokens one server process keeps (the cache starts over when full)."""


@dataclass(frozen=True)
class Principal:
    """The person a request's token belongs to, and their team."""

    person_id: int
    email: str
    team_id: int
    team: str
    runner: str | None = None
    """The runner's name when the token is a runner's (DESIGN.md, Runners), else None."""
    pool: str | None = None
    """The runner's pool when the token is a runner's, else None."""


Who = Principal | str
"""A request's asker: a bearer token, or the person it was already found to be."""


def pool_identity(pool: str) -> str:
    """Return the email of ``pool``'s runner identity, the person its runners sign in as:
    ``pool-POOL@runners.invalid`` (``.invalid`` is reserved: no one receives mail there)."""
    return f"pool-{pool}@runners.invalid"


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


_DUMMY_HASH = _hash_secret("not a secret")


def _valid(check: Callable[[str], str], value: str, what: str) -> str:
    try:
        return check(value)
    except ValueError as error:
        raise UserError(f"bad {what} {value!r}: {error}") from None


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Kept(Generic[K, V]):
    """Values read from the database, kept for ``seconds`` of a monotonic clock from the
    start of their read (at most :data:`AUTH_CACHE_SIZE`; it starts over when full).

    Args:
        monotonic: seconds of a monotonic clock (injected by tests).
        seconds: how long a value is kept; 0 keeps nothing.
    """

    def __init__(self, monotonic: Callable[[], float], seconds: float) -> None:
        self.monotonic = monotonic
        self.seconds = seconds
        self._values: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def read(self, key: K, load: Callable[[], V | None]) -> V | None:
        """Return the value kept for ``key``, or ``load()`` it (None is not kept)."""
        now = self.monotonic()
        kept = self._values.get(key)
        if kept is not None and now < kept[0]:
            return kept[1]
        value = load()
        if value is not None and self.seconds > 0:
            with self._lock:
                if len(self._values) >= AUTH_CACHE_SIZE:
                    self._values.clear()
                self._values[key] = (now + self.seconds, value)
        return value

    def peek(self, key: K) -> V | None:
        """Return the value kept for ``key`` if it is still within its bound, else None
        (nothing is read)."""
        kept = self._values.get(key)
        if kept is not None and self.monotonic() < kept[0]:
            return kept[1]
        return None

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()


class People:
    """Teams, people and tokens of one database (every row is scoped to a team).

    Args:
        db: the database.
        monotonic: seconds of a monotonic clock, for the token cache (injected by tests).
        cache_seconds: :data:`AUTH_CACHE_SECONDS`; 0 turns the cache off.
    """

    def __init__(
        self,
        db: Database,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        cache_seconds: float = AUTH_CACHE_SECONDS,
    ) -> None:
        self.db = db
        self._kept: Kept[str, Principal] = Kept(monotonic, cache_seconds)

    # -- administration ---------------------------------------------------------------

    def add_team(self, name: str) -> bool:
        """Create team ``name``; return False when it already exists.

        Raises:
            UserError: the name is not a valid id.
        """
        name = _valid(wire.check_id, name, "team name")
        with self.db.transaction() as conn:
            result = conn.execute(
                self.db.insert(teams)
                .values(name=name, created_us=self.db.now_us(), record_seq=0)
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
        now = self.db.now_us()
        with self.db.transaction() as conn:
            person_id = self._person_id(conn, self._team_id(conn, team), email, now)
            _, token = self._mint_token(conn, person_id, now)
        return token

    def revoke_person(self, email: str, team: str) -> int:
        """Revoke every live token of ``email`` in ``team``; return how many were revoked.

        Raises:
            NotFound: no such team or person.
        """
        email = email.strip().lower()
        with self.db.transaction() as conn:
            team_id = self._team_id(conn, team)
            person_id = conn.execute(
                sa.select(people.c.id).where(people.c.team_id == team_id, people.c.email == email)
            ).scalar_one_or_none()
            if person_id is None:
                raise NotFound(f"no person {email!r} in team {team!r}")
            result = conn.execute(
                tokens.update()
                .where(tokens.c.person_id == person_id, tokens.c.revoked_us.is_(None))
                .values(revoked_us=self.db.now_us())
            )
        self._kept.clear()
        return int(result.rowcount)

    def add_runner(self, name: str, pool: str, team: str) -> str:
        """Add runner ``name`` of ``pool`` to ``team`` and return its token, shown once.

        The runner signs in as its pool's runner identity (a person of the team named
        :func:`pool_identity`), made with the first runner of the pool; its token is an
        ordinary token of that identity (only the SHA-256 of the secret is stored), tied to
        the runner's name and pool by a row of ``runners``.

        Raises:
            UserError: bad name or pool; a runner of that name exists in the team already.
            NotFound: no such team.
        """
        name = _valid(wire.check_id, name, "runner name")
        pool = _valid(wire.check_id, pool, "pool name")
        now = self.db.now_us()
        with self.db.transaction() as conn:
            team_id = self._team_id(conn, team)
            person_id = self._person_id(conn, team_id, pool_identity(pool), now)
            token_id, token = self._mint_token(conn, person_id, now)
            added = conn.execute(
                self.db.insert(runners)
                .values(team_id=team_id, name=name, pool=pool, token_id=token_id,
                        created_us=now)
                .on_conflict_do_nothing()
                .returning(runners.c.id)
            ).all()
            if not added:
                raise UserError(f"team {team} has a runner named {name!r} already",
                                hint="pick another name (each runner has its own)")
        return token

    def _person_id(self, conn: Connection, team_id: int, email: str, now: int) -> int:
        """Return the id of person ``email`` of team ``team_id``, added at ``now`` (µs) when
        new, inside the caller's transaction ``conn``."""
        conn.execute(
            self.db.insert(people)
            .values(team_id=team_id, email=email, created_us=now)
            .on_conflict_do_nothing()
        )
        return int(conn.execute(
            sa.select(people.c.id).where(people.c.team_id == team_id, people.c.email == email)
        ).scalar_one())

    @staticmethod
    def _mint_token(conn: Connection, person_id: int, now: int) -> tuple[str, str]:
        """Make a fresh bearer token of person ``person_id`` at ``now`` (µs) inside the
        caller's transaction ``conn``; return ``(token id, token)``, the token shown once.

        Only the SHA-256 of the token's secret is stored; the token is
        ``bees.<16 hex token id>.<secret>`` (:data:`TOKEN_PREFIX`).
        """
        token_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        conn.execute(tokens.insert().values(token_id=token_id, person_id=person_id,
                                            secret_sha256=_hash_secret(secret), created_us=now))
        return token_id, f"{TOKEN_PREFIX}.{token_id}.{secret}"

    @staticmethod
    def _team_id(conn: Connection, team: str) -> int:
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
        with self.db.transaction(write=False) as conn:
            return self._authenticate(conn, token)

    def authenticate_or_refuse(self, who: Who) -> Principal:
        """Return the person of ``who`` (a token or an already known person).

        Raises:
            Unauthorized: ``unauthorized`` for an unknown or revoked token.
        """
        if isinstance(who, Principal):
            return who
        with self.db.transaction(write=False) as conn:
            return self.principal(conn, who)

    def principal(self, conn: Connection, who: Who) -> Principal:
        """Return the person of ``who`` inside the caller's transaction ``conn``.

        A token found within the last :data:`AUTH_CACHE_SECONDS` is answered from this
        process's memory without a read (keyed by the token's SHA-256), so a revoke takes
        effect within that bound (issue 16).

        Raises:
            Unauthorized: ``unauthorized`` for an unknown or revoked token.
        """
        if isinstance(who, Principal):
            return who
        found = self._kept.read(_hash_secret(who), lambda: self._authenticate(conn, who))
        if found is None:
            retired = self._retired_runner(conn, who)
            if retired is not None:
                raise Unauthorized(
                    "runner_retired",
                    f"runner {retired} was retired: Bees Cloud refuses what it sends",
                    hint="its items were offered back to its pool; an admin adds a new "
                         "runner (bees cloud admin runner add NAME --pool POOL)")
            raise Unauthorized(
                "unauthorized",
                "the token is unknown or revoked",
                hint="ask your team admin for a new token (`bees cloud person add`)",
            )
        return found

    def kept(self, token: str) -> Principal | None:
        """Return the person of ``token`` when this process found it within the last
        :data:`AUTH_CACHE_SECONDS`, else None (unknown here: ask :meth:`principal`)."""
        return self._kept.peek(_hash_secret(token))

    def me(self, who: Who) -> wire.Me:
        """Return who ``who`` is, the team, and the server clock (UTC).

        Raises:
            Unauthorized: ``unauthorized``.
        """
        found = self.authenticate_or_refuse(who)
        if found.runner is not None:
            return wire.Me(person=found.email, team=found.team, server_time=self.db.clock(),
                           runner=found.runner, pool=found.pool)
        return wire.Me(person=found.email, team=found.team, server_time=self.db.clock())

    def forget(self) -> None:
        """Forget the tokens this process kept (one was just revoked)."""
        self._kept.clear()

    @staticmethod
    def _retired_runner(conn: Connection, token: str) -> str | None:
        """Return the name of the retired runner whose token ``token`` is (its secret
        matching), else None: a retired runner's later requests are refused by name."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or len(parts[1]) != 16:
            return None
        row = conn.execute(
            sa.select(tokens.c.secret_sha256, runners.c.name)
            .join(runners, runners.c.token_id == tokens.c.token_id)
            .where(tokens.c.token_id == parts[1], runners.c.retired_us.is_not(None))
        ).first()
        if row is None or not hmac.compare_digest(row.secret_sha256, _hash_secret(parts[2])):
            return None
        return str(row.name)

    @staticmethod
    def _authenticate(conn: Connection, token: str) -> Principal | None:
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
                runners.c.name.label("runner"),
                runners.c.pool,
            )
            .join(people, people.c.id == tokens.c.person_id)
            .join(teams, teams.c.id == people.c.team_id)
            .outerjoin(runners, runners.c.token_id == tokens.c.token_id)
            .where(tokens.c.token_id == parts[1])
        ).first()
        expected = row.secret_sha256 if row is not None else _DUMMY_HASH
        matches = hmac.compare_digest(expected, _hash_secret(parts[2]))
        if row is None or not matches or row.revoked_us is not None:
            return None
        return Principal(person_id=row.id, email=row.email, team_id=row.team_id, team=row.name,
                         runner=row.runner, pool=row.pool)
