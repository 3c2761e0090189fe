"""Administration of Bees Cloud: serve it; add teams and people, revoke tokens, on a target.

The target is explicit (:func:`admin_target`): a running server through its admin API
(``--server URL`` with the admin token), or its database offline (``--db URL``), which an
admin command never creates. Database trouble becomes a :class:`UserError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from bees_cli.errors import BeesError, CloudRefused, CloudUnauthorized, UserError

if TYPE_CHECKING:
    from bees_cli.cloud.server.storage import Storage
    from bees_cli.cloud.wire_runners import RunnerRetired

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


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
    """Open (and migrate) the database ``db`` (see :func:`database_url`); made when missing.

    Only ``bees cloud serve`` may make a database; admin commands use
    :func:`open_existing_storage`.

    Raises:
        UserError: unsupported URL, missing driver, or the database cannot be opened.
    """
    from bees_cli.cloud.server.storage import Storage

    url = database_url(db)
    with _database_errors(url):
        return Storage(url)


def shown_url(url: str) -> str:
    """Return a database URL as it may be printed (a password hidden)."""
    import sqlalchemy as sa

    return sa.make_url(url).render_as_string(hide_password=True)


def open_existing_storage(db: str) -> Storage:
    """Open (and migrate) the Bees Cloud database ``db``, refusing to make a new one.

    Why: an admin command run against the wrong path or database must not leave an empty
    database behind and report success there (issue 15, point 5).

    Raises:
        UserError: ``db`` is not a usable URL (:func:`database_url`), or a missing driver.
        BeesError: no Bees Cloud database there (exit 1): no SQLite file, or a database
            without the Bees Cloud tables; nothing is created.
    """
    import sqlalchemy as sa

    from bees_cli.cloud.server.engine import create_engine
    from bees_cli.cloud.server.storage import Storage

    url = database_url(db)
    parsed = sa.make_url(url)
    with _database_errors(url):
        if parsed.get_backend_name() == "sqlite":
            path = Path(parsed.database or "").expanduser().resolve()
            found = path.is_file() and _sqlite_has_teams(path)
            where = str(path)
        else:
            engine = create_engine(url, pool_size=1)  # refuses a URL of another kind
            try:
                with engine.connect() as conn:
                    found = sa.inspect(conn).has_table("teams")
            finally:
                engine.dispose()
            where = shown_url(url)
        if not found:
            raise _no_database(where, url)
        return Storage(url)


def _sqlite_has_teams(path: Path) -> bool:
    """Return True when the SQLite file ``path`` holds the Bees Cloud tables; opened read-only
    so that looking changes nothing (not even an empty file's header)."""
    import sqlite3

    if path.stat().st_size == 0:
        return False
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'teams'").fetchone()
    except sqlite3.Error as error:
        raise UserError(f"database {path}: {error}", hint=f"check --db: {DB_HINT}") from None
    return row is not None


def _no_database(where: str, url: str) -> BeesError:
    return BeesError(
        f"no Bees Cloud database at {where}: an admin command does not create one",
        hint=f"check --db {shown_url(url)} (the server's own database), or start the server"
        " once there to create it (`bees cloud serve --db URL`); on a running server use"
        " --server URL",
    )


@dataclass(frozen=True)
class Target:
    """Where an admin command acts: a running server (with its admin token) or a database.

    Attributes:
        server: the server's URL, or None for a database.
        token: the admin token (with ``server``), or None.
        db: the database URL (offline work), or None for a server.
    """

    server: str | None = None
    token: str | None = field(default=None, repr=False)
    db: str | None = None

    @property
    def database(self) -> str | None:
        """The database URL as it may be printed (a password hidden), or None for a server."""
        return shown_url(self.db) if self.db else None

    @property
    def shown(self) -> str:
        """``server URL`` or ``database URL`` (a password hidden), for the command's output."""
        return f"server {self.server}" if self.server else f"database {self.database}"


def admin_target(
    server: str | None,
    db: str | None,
    *,
    token_file: Path | None,
    token: str | None,
    insecure: bool = False,
) -> Target:
    """Return where an admin command acts; no default, so it cannot hit a database by chance.

    Args:
        server: the running server's URL (``--server`` or ``BEES_CLOUD_URL``), or None.
        db: the database URL for offline work (``--db``), or None.
        token_file: the admin token file (``--admin-token-file``), or None.
        token: the admin token itself (``BEES_ADMIN_TOKEN``), or None; ``token_file`` wins.
        insecure: allow plain ``http://`` to a host that is not this computer.

    Raises:
        UserError: neither or both of ``server`` and ``db``; a URL that is not valid or is
            plain http to another host without ``insecure``; no admin token for a server.
    """
    if server and db:
        raise UserError("give --server or --db, not both",
                        hint="--server URL for a running Bees Cloud, --db URL for offline work")
    if db:
        return Target(db=database_url(db))
    if not server:
        raise UserError(
            "no Bees Cloud named: say which one to change",
            hint="--server URL (or BEES_CLOUD_URL) for a running server, --db URL to work on"
            " its database offline",
        )
    from bees_cli.cloud.login import check_transport

    url = check_transport(server, insecure=insecure)
    return Target(server=url, token=_admin_token(token_file, token))


def _admin_token(token_file: Path | None, token: str | None) -> str:
    if token_file is not None:
        try:
            text = token_file.read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise UserError(f"cannot read the admin token file {token_file}: "
                            f"{getattr(error, 'strerror', None) or error}",
                            hint="give the file `bees cloud serve` wrote") from None
        if not text:
            raise UserError(f"{token_file} is empty", hint="give the file `bees cloud serve` wrote")
        return text
    if token and token.strip():
        return token.strip()
    raise UserError(
        "no admin token", hint="give --admin-token-file FILE (the file `bees cloud serve` wrote"
        " at its first start) or set BEES_ADMIN_TOKEN")


def _call(target: Target, call: Any, *, retries: int = 2) -> Any:
    """Make admin ``call`` on the running server of ``target``.

    Raises:
        CloudRefused: the server refused the admin token (``not_admin``, exit 3: a refusal,
            not a failure; the server answers 401).
        CloudError: the server could not be reached, or failed.
    """
    from bees_cli.cloud.client import CloudClient

    assert target.server is not None and target.token is not None
    try:
        with CloudClient(target.server, target.token, retries=retries) as client:
            return client.call(call)
    except CloudUnauthorized as error:
        raise CloudRefused(error.message, hint=error.hint, code="not_admin",
                           status=error.status or 401) from None


def _on_database(target: Target, work: Callable[[Storage], T]) -> T:
    storage = open_existing_storage(target.db or "")
    try:
        with _database_errors(storage.url):
            return work(storage)
    finally:
        storage.close()


def add_team(target: Target, name: str) -> bool:
    """Create team ``name`` on ``target``; return False when it existed already.

    Raises:
        UserError: bad name, or database trouble.
        BeesError: no database at ``target.db``.
        CloudRefused: not the admin token (``not_admin``, exit 3).
        CloudError: the server could not be reached or failed.
    """
    if target.server is None:
        return _on_database(target, lambda storage: storage.add_team(name))
    from bees_cli.cloud.calls import Call
    from bees_cli.cloud.wire_admin import AdminTeam, AdminTeamAnswer

    answer = _call(target, Call("POST", "/v1/admin/teams", AdminTeamAnswer, _body(AdminTeam,
                                                                                    name=name)))
    return bool(answer.created)


def add_person(target: Target, email: str, team: str) -> str:
    """Add ``email`` to ``team`` on ``target``; return a new bearer token (only its hash is
    kept).

    Raises:
        NotFound: no such team (on a database).
        UserError: bad email, or database trouble.
        BeesError: no database at ``target.db``.
        CloudError: the server could not be reached or refused (404: no such team).
    """
    if target.server is None:
        return _on_database(target, lambda storage: storage.add_person(email, team))
    from bees_cli.cloud.calls import Call
    from bees_cli.cloud.wire_admin import AdminPerson, AdminPersonAnswer

    # no retry: a lost answer would make a second token (harmless, but shown nowhere)
    answer = _call(target, Call("POST", "/v1/admin/people", AdminPersonAnswer,
                                _body(AdminPerson, email=email, team=team)), retries=0)
    return str(answer.token)


def add_runner(target: Target, name: str, pool: str, team: str) -> str:
    """Add runner ``name`` of ``pool`` to ``team`` on ``target``; return its token (only its
    hash is kept; DESIGN.md, Runners).

    Raises:
        NotFound: no such team (on a database).
        UserError: bad name or pool, a runner of that name exists, or database trouble.
        BeesError: no database at ``target.db``.
        CloudError: the server could not be reached or refused (404: no such team).
    """
    if target.server is None:
        return _on_database(target, lambda storage: storage.add_runner(name, pool, team))
    from bees_cli.cloud.calls import Call
    from bees_cli.cloud.wire_admin import AdminRunner, AdminRunnerAnswer

    # no retry: a lost answer would leave the name taken by a token shown nowhere
    answer = _call(target, Call("POST", "/v1/admin/runners", AdminRunnerAnswer,
                                _body(AdminRunner, name=name, pool=pool, team=team)),
                   retries=0)
    return str(answer.token)


def retire_runner(target: Target, name: str, team: str) -> RunnerRetired:
    """Retire runner ``name`` of ``team`` on ``target``: fenced first (token and machine id
    revoked), then its items offered back to its pool (:meth:`Runners.retire`).

    Raises:
        NotFound: no such team or runner (on a database).
        UserError: database trouble.
        BeesError: no database at ``target.db``.
        CloudError: the server could not be reached or refused (404: no such runner).
    """
    if target.server is None:
        return _on_database(target, lambda storage: storage.retire_runner(name, team))
    from bees_cli.cloud.calls import Call
    from bees_cli.cloud.wire_runners import AdminRunnerRetire
    from bees_cli.cloud.wire_runners import RunnerRetired as Retired

    return _call(target, Call("POST", "/v1/admin/runners/retire", Retired,
                              _body(AdminRunnerRetire, name=name, team=team)))


def revoke_person(target: Target, email: str, team: str) -> int:
    """Revoke every token of ``email`` in ``team`` on ``target``; return how many were live.

    Raises:
        NotFound: no such team or person (on a database).
        UserError: database trouble.
        BeesError: no database at ``target.db``.
        CloudError: the server could not be reached or refused (404: no such person).
    """
    if target.server is None:
        return _on_database(target, lambda storage: storage.revoke_person(email, team))
    from bees_cli.cloud.calls import Call
    from bees_cli.cloud.wire_admin import AdminPerson, AdminRevokeAnswer

    answer = _call(target, Call("POST", "/v1/admin/people/revoke", AdminRevokeAnswer,
                                _body(AdminPerson, email=email, team=team)))
    return int(answer.revoked)


def _body(model: type[M], **values: str) -> M:
    """Build a request body, a bad value becoming a :class:`UserError` before any request."""
    from pydantic import ValidationError

    try:
        return model(**values)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(x) for x in problem.get("loc", ()))
        raise UserError(f"bad {where} {values.get(where)!r}: {problem.get('msg')}") from None


def rotate_admin_token(db: str, file: Path) -> Path:
    """Replace the admin token of the database ``db`` (offline) and write it to ``file``.

    Raises:
        UserError: bad URL, database trouble.
        BeesError: no database at ``db``.
        DiskError: ``file`` cannot be written.
    """
    from bees_cli.cloud.server.admin_tokens import AdminTokens
    from bees_cli.errors import disk_error_of

    target = Target(db=database_url(db))

    def rotate(storage: Storage) -> Path:
        try:
            AdminTokens(storage.db).rotate(file)
        except OSError as error:
            raise (disk_error_of(error) or error) from None
        return file

    return _on_database(target, rotate)


def serve(
    db: str | None, host: str, port: int, announce: Callable[[str], None] | None = None,
    admin_token_file: Path | None = None,
) -> None:
    """Serve Bees Cloud on ``host``:``port`` over database ``db`` until interrupted.

    At the first start the admin token is written to ``admin_token_file`` (default
    ``cloud-admin.token`` in this computer's data folder), mode 0600.

    Raises:
        UserError: database trouble, or the port cannot be bound.
        DiskError: the admin token file cannot be written.
    """
    from bees_cli.cloud.server.app import serve as run

    url = database_url(db)
    with _database_errors(url):
        try:
            run(url, host=host, port=port, announce=announce,
                admin_token_file=admin_token_file)
        except OSError as error:
            from bees_cli.errors import DiskError, disk_error_of, os_path

            if error.filename is not None:  # the admin token file cannot be written
                raise (disk_error_of(error) or DiskError(
                    os_path(error.filename), error.strerror or str(error))) from None
            raise UserError(
                f"cannot listen on {host}:{port}: {error.strerror or error}",
                hint="pick another --port, or stop the process using it",
            ) from None
