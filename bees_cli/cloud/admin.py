"""Administration of a Bees Cloud database: serve it, add teams and people, revoke tokens.

These act directly on the database (``--db``), not through the API; they are what
the ``bees cloud`` commands call. Database trouble becomes a :class:`UserError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from bees_cli.errors import UserError

if TYPE_CHECKING:
    from bees_cli.cloud.server.storage import Storage


DB_HINT = "give sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"


def database_url(db: str | None) -> str:
    """Return ``db``, or the default SQLite file in the data dir when None or empty.

    Why: a bare path is refused rather than taken as a SQLite file, so a typo such
    as ``--db postgres`` does not quietly create a file named ``postgres``; an
    in-memory SQLite database is refused because a server must keep its record.

    Raises:
        UserError: ``db`` is not a URL (no ``://``), cannot be parsed, or is an
            in-memory SQLite database.
    """
    from bees_cli.cloud.server.engine import default_sqlite_url

    if not db:
        return default_sqlite_url()
    if "://" not in db:
        raise UserError(f"--db {db}: not a database URL", hint=DB_HINT)
    import sqlalchemy as sa
    import sqlalchemy.exc

    try:
        parsed = sa.make_url(db)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        raise UserError(f"--db {db}: not a database URL", hint=DB_HINT) from None
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or parsed.query.get("mode") == "memory":
            raise UserError(
                "an in-memory database keeps nothing; give sqlite:///PATH",
                hint="e.g. --db sqlite:///cloud.db (a file in this folder)",
            )
    return db


@contextmanager
def _database_errors(url: str) -> Iterator[None]:
    import sqlalchemy.exc

    try:
        yield
    except sqlalchemy.exc.SQLAlchemyError as error:
        shown = url.split("@")[-1] if "@" in url else url
        detail = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise UserError(
            f"database {shown}: {detail}",
            hint=f"check --db: {DB_HINT}",
        ) from None
    except ModuleNotFoundError as error:
        raise UserError(
            f"database driver missing: {error.name}",
            hint="install the PostgreSQL extra: pip install 'bees-cli[postgres]'",
        ) from None


def open_storage(db: str | None) -> Storage:
    """Open (and migrate) the database ``db`` (see :func:`database_url`).

    Raises:
        UserError: unsupported URL, missing driver, or the database cannot be opened.
    """
    from bees_cli.cloud.server.storage import Storage

    url = database_url(db)
    with _database_errors(url):
        return Storage(url)


def add_team(db: str | None, name: str) -> bool:
    """Create team ``name``; return False when it existed already.

    Raises:
        UserError: bad name or database trouble.
    """
    storage = open_storage(db)
    try:
        with _database_errors(storage.url):
            return storage.add_team(name)
    finally:
        storage.close()


def add_person(db: str | None, email: str, team: str) -> str:
    """Add ``email`` to ``team`` and return a new bearer token (only its hash is kept).

    Raises:
        NotFound: no such team.
        UserError: bad email or database trouble.
    """
    storage = open_storage(db)
    try:
        with _database_errors(storage.url):
            return storage.add_person(email, team)
    finally:
        storage.close()


def revoke_person(db: str | None, email: str, team: str) -> int:
    """Revoke every token of ``email`` in ``team``; return how many were live.

    Raises:
        NotFound: no such team or person.
        UserError: database trouble.
    """
    storage = open_storage(db)
    try:
        with _database_errors(storage.url):
            return storage.revoke_person(email, team)
    finally:
        storage.close()


def serve(
    db: str | None, host: str, port: int, announce: Callable[[str], None] | None = None
) -> None:
    """Serve Bees Cloud on ``host``:``port`` over database ``db`` until interrupted.

    Raises:
        UserError: database trouble, or the port cannot be bound.
    """
    from bees_cli.cloud.server.app import serve as run

    url = database_url(db)
    with _database_errors(url):
        try:
            run(url, host=host, port=port, announce=announce)
        except OSError as error:
            raise UserError(
                f"cannot listen on {host}:{port}: {error.strerror or error}",
                hint="pick another --port, or stop the process using it",
            ) from None
