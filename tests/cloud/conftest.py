"""Fixtures for the Bees Cloud tests: databases (SQLite and PostgreSQL), real servers, teams.

PostgreSQL comes from ``BEES_TEST_POSTGRES_URL``; when it is unset and server binaries
are installed, a throwaway cluster is started with ``.ci/postgres.sh``. Without either,
the PostgreSQL tests fail when ``CI`` is set and are skipped (with the reason) otherwise.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bees_cli.cloud.client import AsyncCloudClient, CloudClient
from bees_cli.cloud.server.storage import Storage
from tests.support.wait import until_sync

REPO = Path(__file__).resolve().parents[2]
POSTGRES_SH = REPO / ".ci" / "postgres.sh"


# -- PostgreSQL ------------------------------------------------------------------------


def _start_cluster() -> tuple[str, str] | None:
    """Start a throwaway cluster with .ci/postgres.sh (no apt install); return (url, dir)."""
    script = (
        f". {POSTGRES_SH} >&2 || exit 1; "
        'printf "%s\\n%s\\n" "$BEES_TEST_POSTGRES_URL" "$BEES_TEST_POSTGRES_DIR"'
    )
    env = dict(os.environ, BEES_PG_NO_INSTALL="1")
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    if done.returncode != 0:
        return None
    url, folder = done.stdout.split()
    return url, folder


def _stop_cluster(folder: str) -> None:
    env = dict(os.environ, BEES_PG_ACTION="stop", BEES_TEST_POSTGRES_DIR=folder)
    subprocess.run(["bash", str(POSTGRES_SH)], env=env, capture_output=True, timeout=60)


def _no_postgres(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL not available: {reason}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The PostgreSQL server's URL for this session (a throwaway cluster when none is given)."""
    base = os.environ.get("BEES_TEST_POSTGRES_URL")
    cluster: str | None = None
    if not base:
        started = _start_cluster()
        if started is None:
            _no_postgres(
                "BEES_TEST_POSTGRES_URL is unset and no server binaries were found"
                " (source .ci/postgres.sh first)"
            )
            raise AssertionError  # pragma: no cover
        base, cluster = started
    try:
        yield base
    finally:
        if cluster:
            _stop_cluster(cluster)


@contextmanager
def fresh_database(base: str) -> Iterator[str]:
    """Create a database of a random name on the server at ``base``; yield its URL; drop it.

    Each name is new, so two pytest-xdist workers (or two set-ups of one fixture) never share
    a database.
    """
    import psycopg
    import sqlalchemy as sa

    parsed = sa.make_url(base)
    name = f"bees_{secrets.token_hex(4)}"
    dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as error:
        _no_postgres(f"cannot connect to {parsed.render_as_string()}: {error}")
    try:
        yield parsed.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database for this session (dropped at the end)."""
    with fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(
    scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[str]:
    """The database URL of this parametrisation: a new SQLite file, or a new PostgreSQL
    database, at each set-up (pytest sets a parametrised session fixture up again when a
    worker's tests switch between its parameters; the session server's first start on it
    writes the admin token file)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('cloud') / 'cloud.db'}"
        return
    with fresh_database(str(request.getfixturevalue("postgres_server"))) as url:
        yield url


# -- servers ---------------------------------------------------------------------------


_LISTENING = re.compile(r"listening on (http://\S+)")


class ServerProcess:
    """``bees cloud serve --db URL --port 0`` in a subprocess; ``url`` once it listens."""

    def __init__(self, db: str, folder: Path) -> None:
        self.db = db
        self.folder = folder
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.starts = 0

    def start(self) -> ServerProcess:
        """Start the server and wait (at most 60 s) until it listens."""
        self.starts += 1
        log = self.folder / f"server-{self.starts}.log"
        env = dict(os.environ, BEES_HOME=str(self.folder / "home"), PYTHONUNBUFFERED="1")
        env.pop("CI", None)
        with log.open("wb") as handle:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bees_cli",
                    "cloud",
                    "serve",
                    "--db",
                    self.db,
                    "--port",
                    "0",
                ],
                stdout=subprocess.DEVNULL,
                stderr=handle,
                env=env,
                cwd=self.folder,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            found = _LISTENING.search(text)
            if found:
                self.url = found.group(1)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited {self.proc.returncode}:\n{text}")
            time.sleep(0.02)
        raise RuntimeError(f"server did not listen within 60 s:\n{log.read_text()}")

    @property
    def admin_token_file(self) -> Path:
        """The admin token file the server wrote at its first start (its data folder)."""
        return self.folder / "home" / "data" / "cloud-admin.token"

    def kill(self) -> None:
        """SIGKILL the server and reap it."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM the server (SIGKILL after 10 s) and reap it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()


@pytest.fixture(scope="session")
def admin(db_url: str) -> Iterator[Storage]:
    """Direct access to the session database (migrates it), for setting up teams."""
    storage = Storage(db_url)
    yield storage
    storage.close()


@pytest.fixture(scope="session")
def server(
    db_url: str, admin: Storage, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One real server process per database for the whole session."""
    proc = ServerProcess(db_url, tmp_path_factory.mktemp("server")).start()
    yield proc
    proc.stop()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[[str], ServerProcess]]:
    """Start extra server processes on a database URL; all stopped after the test."""
    started: list[ServerProcess] = []

    def make(db: str) -> ServerProcess:
        folder = tmp_path / f"server-{len(started)}"
        folder.mkdir()
        proc = ServerProcess(db, folder)
        started.append(proc)
        return proc.start()

    yield make
    for proc in started:
        proc.stop()


# -- teams -----------------------------------------------------------------------------


@dataclass
class Team:
    """A fresh team with two people (``maya`` and ``sam``) and their tokens."""

    name: str
    url: str
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, person: str = "maya", **kwargs: object) -> CloudClient:
        """A sync client for ``person`` against the session server."""
        kwargs.setdefault("backoff", 0.01)
        return CloudClient(self.url, self.tokens[person], **kwargs)  # type: ignore[arg-type]

    def aclient(self, person: str = "maya", **kwargs: object) -> AsyncCloudClient:
        """An async client for ``person`` against the session server."""
        kwargs.setdefault("backoff", 0.01)
        return AsyncCloudClient(self.url, self.tokens[person], **kwargs)  # type: ignore[arg-type]


def make_team(admin: Storage, url: str) -> Team:
    """Create a team with two people on ``admin``'s database."""
    name = f"team-{secrets.token_hex(4)}"
    assert admin.add_team(name) is True
    team = Team(name=name, url=url)
    for person in ("maya", "sam"):
        team.tokens[person] = admin.add_person(f"{person}@{name}.example", name)
    return team


@pytest.fixture
def team(admin: Storage, server: ServerProcess) -> Team:
    """A fresh team on the session server."""
    return make_team(admin, server.url)


@pytest.fixture
def other_team(admin: Storage, server: ServerProcess) -> Team:
    """A second fresh team on the session server."""
    return make_team(admin, server.url)


# -- an in-thread server with an injected clock ----------------------------------------


class FakeClock:
    """A settable UTC clock: returns ``now`` and moves only when told."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        self.now += timedelta(seconds=seconds)


@dataclass
class ThreadServer:
    """uvicorn serving the app in a thread, with a fake clock."""

    url: str
    storage: Storage
    clock: FakeClock


@pytest.fixture
def clocked_server(tmp_path: Path) -> Iterator[ThreadServer]:
    """A real HTTP server in a thread over a fresh SQLite file, its clock injected."""
    import uvicorn

    from bees_cli.cloud.server.app import asgi, bind

    clock = FakeClock(datetime(2025, 1, 6, 8, 59, 30, tzinfo=UTC))
    storage = Storage(f"sqlite:///{tmp_path / 'clocked.db'}", clock=clock)
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(asgi(storage), log_level="warning", access_log=False, lifespan="off")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until_sync(lambda: uv.started, "uvicorn did not start", every=0.01)
    yield ThreadServer(f"http://127.0.0.1:{sock.getsockname()[1]}", storage, clock)
    uv.should_exit = True
    thread.join(10)
    storage.close()
