"""Bees Cloud administration over real HTTP (issue 15, point 5): the admin token the server
writes at first start, the ``/v1/admin`` routes, and the CLI that names its target."""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from bees_cli.cloud.client import CloudClient
from bees_cli.cloud.server.storage import Storage

from ..conftest import BeesRunner
from .conftest import ServerProcess, Team

TOKEN = re.compile(r"^bees\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$")
ADMIN_TOKEN = re.compile(r"^bees-admin\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$")


def _admin(server: ServerProcess) -> dict[str, str]:
    token = server.admin_token_file.read_text().strip()
    return {"authorization": f"Bearer {token}"}


def test_the_first_start_writes_the_admin_token_once(
    db_url: str, admin: Storage, server: ServerProcess,
    server_factory: Callable[[str], ServerProcess],
) -> None:
    file = server.admin_token_file
    assert ADMIN_TOKEN.match(file.read_text().strip())
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    log = (server.folder / "server-1.log").read_text()
    assert f"Bees Cloud admin token written to {file} (mode 0600; shown nowhere else)\n" in log
    again = server_factory(db_url)  # a second server (replica) on the same database
    assert not again.admin_token_file.exists()
    assert (
        f"Bees Cloud admin token made at an earlier start; {again.admin_token_file} is not here"
        " (a new one: bees cloud admin-token --db URL)\n"
    ) in (again.folder / "server-1.log").read_text()
    with httpx.Client(base_url=again.url, headers=_admin(server)) as http:
        answer = http.post("/v1/admin/teams", json={"name": "replica-team"})
    assert answer.status_code == 200 and answer.json()["team"] == "replica-team"


def test_admin_routes_need_the_admin_token(server: ServerProcess, team: Team) -> None:
    person = {"authorization": f"Bearer {team.tokens['maya']}"}
    wrong = {"authorization": "Bearer bees-admin.0123456789abcdef." + "x" * 43}
    body = {"email": "eve@example.com", "team": team.name}
    with httpx.Client(base_url=server.url) as http:
        for headers in ({}, person, wrong):
            answer = http.post("/v1/admin/people", json=body, headers=headers)
            assert answer.status_code == 401
            assert answer.json()["error"]["code"] == "not_admin"
        # and the admin token is no person's token
        me = http.get("/v1/me", headers=_admin(server))
        assert me.status_code == 401 and me.json()["error"]["code"] == "unauthorized"


def test_admin_routes_make_teams_and_people(server: ServerProcess) -> None:
    name = f"adm-{server.url.rsplit(':', 1)[1]}-{id(server) % 10_000}"
    with httpx.Client(base_url=server.url, headers=_admin(server)) as http:
        made = http.post("/v1/admin/teams", json={"name": name})
        assert (made.status_code, made.json()) == (200, {"team": name, "created": True})
        again = http.post("/v1/admin/teams", json={"name": name})
        assert again.json() == {"team": name, "created": False}
        added = http.post("/v1/admin/people", json={"email": "Maya@Example.com", "team": name})
        assert added.status_code == 200
        data = added.json()
        assert (data["email"], data["team"]) == ("maya@example.com", name)
        assert TOKEN.match(data["token"])
        with CloudClient(server.url, data["token"], retries=0) as client:
            me = client.me()
        assert (me.person, me.team) == ("maya@example.com", name)
        nope = http.post("/v1/admin/people", json={"email": "sam@example.com", "team": "nope-x"})
        assert (nope.status_code, nope.json()["error"]["code"]) == (404, "not_found")
        bad = http.post("/v1/admin/people", json={"email": "sam@", "team": name})
        assert (bad.status_code, bad.json()["error"]["message"]) == (
            422, "bad email 'sam@': not an email address")
        revoked = http.post("/v1/admin/people/revoke",
                            json={"email": "MAYA@example.com", "team": name})
        assert revoked.json() == {"email": "maya@example.com", "team": name, "revoked": 1}
        gone = http.post("/v1/admin/people/revoke", json={"email": "sam@example.com",
                                                          "team": name})
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, "not_found")
    with CloudClient(server.url, data["token"], retries=0) as client, pytest.raises(
        Exception, match="unknown or revoked"
    ):
        client.me()


def test_the_cli_changes_the_named_server(
    bees: BeesRunner, bees_home: Path, server: ServerProcess, tmp_path: Path
) -> None:
    name = f"cli-{tmp_path.name[-8:]}".replace("_", "-")
    file = str(server.admin_token_file)
    made = bees("cloud", "team", "add", name, "--server", server.url, "--admin-token-file", file)
    assert (made.returncode, made.stderr) == (0, f"team {name} created on server {server.url}\n")
    env = {"BEES_CLOUD_URL": server.url, "BEES_ADMIN_TOKEN": server.admin_token_file.read_text()}
    added = bees("cloud", "person", "add", "maya@example.com", "--team", name, env=env)
    assert added.returncode == 0, added.stderr
    assert TOKEN.match(added.stdout.strip())
    assert added.stderr == (
        f"token for maya@example.com in team {name} on server {server.url} (shown once; give it"
        " to `bees login URL --with-token`)\n")
    revoked = bees("cloud", "person", "revoke", "maya@example.com", "--team", name, env=env)
    assert (revoked.returncode, revoked.stderr) == (
        0, f"revoked 1 token of maya@example.com in team {name} on server {server.url}\n")
    refused = bees("cloud", "team", "add", "x", "--server", server.url,
                   env={"BEES_ADMIN_TOKEN": "bees-admin.0123456789abcdef.nope"})
    assert (refused.returncode, refused.stderr) == (  # refused: exit 3
        3, "error: this call needs the server's admin token (not_admin)\n"
        "hint: give --admin-token-file FILE (the file `bees cloud serve` wrote) or set"
        " BEES_ADMIN_TOKEN\n")
    assert not (bees_home / "data" / "cloud.db").exists()  # this computer's home untouched


def test_an_admin_command_names_its_target_or_refuses(
    bees: BeesRunner, bees_home: Path, tmp_path: Path
) -> None:
    none = bees("cloud", "team", "add", "acme", cwd=tmp_path)
    assert (none.returncode, none.stderr) == (
        2, "error: no Bees Cloud named: say which one to change\n"
        "hint: --server URL (or BEES_CLOUD_URL) for a running server, --db URL to work on its"
        " database offline\n")
    both = bees("cloud", "team", "add", "acme", "--server", "http://127.0.0.1:1",
                "--db", f"sqlite:///{tmp_path / 'x.db'}", cwd=tmp_path)
    assert (both.returncode, both.stderr.splitlines()[0]) == (
        2, "error: give --server or --db, not both")
    no_token = bees("cloud", "team", "add", "acme", "--server", "http://127.0.0.1:1",
                    cwd=tmp_path)
    assert (no_token.returncode, no_token.stderr.splitlines()[0]) == (2, "error: no admin token")
    plain = bees("cloud", "team", "add", "acme", "--server", "http://cloud.example.com",
                 env={"BEES_ADMIN_TOKEN": "t"}, cwd=tmp_path)
    assert (plain.returncode, plain.stderr) == (
        2, "error: refusing to send a token over plain http to cloud.example.com\n"
        "hint: use https://cloud.example.com, or add --insecure if this network is trusted\n")
    assert list(tmp_path.iterdir()) == [bees_home]
    assert not (bees_home / "data" / "cloud.db").exists()


@pytest.mark.parametrize("command", [
    ("team", "add", "acme"),
    ("person", "add", "maya@example.com", "--team", "acme"),
    ("person", "revoke", "maya@example.com", "--team", "acme"),
])
def test_an_admin_command_never_creates_a_database(
    bees: BeesRunner, tmp_path: Path, command: tuple[str, ...]
) -> None:
    path = tmp_path / "typo.db"
    done = bees("cloud", *command, "--db", f"sqlite:///{path}", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "",
        f"error: no Bees Cloud database at {path}: an admin command does not create one\n"
        f"hint: check --db sqlite:///{path} (the server's own database), or start the server"
        " once there to create it (`bees cloud serve --db URL`); on a running server use"
        " --server URL\n")
    assert not path.exists()
    path.touch()  # an empty file is no Bees Cloud database either, and stays empty
    empty = bees("cloud", *command, "--db", f"sqlite:///{path}", cwd=tmp_path)
    assert (empty.returncode, empty.stderr) == (1, done.stderr)
    assert path.stat().st_size == 0


def test_admin_token_replaces_a_lost_one(
    bees: BeesRunner, tmp_path: Path, server_factory: Callable[[str], ServerProcess]
) -> None:
    db = f"sqlite:///{tmp_path / 'own.db'}"
    running = server_factory(db)
    old = _admin(running)
    new_file = tmp_path / "new.token"
    done = bees("cloud", "admin-token", "--db", db, "--file", str(new_file))
    assert (done.returncode, done.stderr) == (
        0, f"admin token of database {db} replaced; written to {new_file} (mode 0600)\n")
    assert stat.S_IMODE(new_file.stat().st_mode) == 0o600
    new = {"authorization": f"Bearer {new_file.read_text().strip()}"}
    with httpx.Client(base_url=running.url) as http:
        assert http.post("/v1/admin/teams", json={"name": "a"}, headers=old).status_code == 401
        assert http.post("/v1/admin/teams", json={"name": "a"}, headers=new).status_code == 200


def test_openapi_lists_the_admin_api(server: ServerProcess) -> None:
    document = httpx.get(f"{server.url}/openapi.json").json()
    admin_paths = {path for path in document["paths"] if path.startswith("/v1/admin/")}
    assert admin_paths == {"/v1/admin/teams", "/v1/admin/people", "/v1/admin/people/revoke",
                           "/v1/admin/runners", "/v1/admin/runners/retire"}


def test_db_for_offline_work_wins_over_the_environment(bees: BeesRunner, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'offline.db'}"
    Storage(db).close()
    done = bees("cloud", "team", "add", "acme", "--db", db,
                env={"BEES_CLOUD_URL": "http://127.0.0.1:1"})
    assert (done.returncode, done.stderr) == (0, f"team acme created on database {db}\n")


def test_an_admin_token_file_that_cannot_be_written_stops_the_first_start(
    bees: BeesRunner, tmp_path: Path
) -> None:
    db = tmp_path / "first.db"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    done = bees("cloud", "serve", "--db", f"sqlite:///{db}", "--port", "0",
                "--admin-token-file", str(blocker / "cloud-admin.token"))
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        1, f"error: cannot write {blocker}: File exists")  # a file where a folder must be
    assert "Traceback" not in done.stderr
    storage = Storage(f"sqlite:///{db}")  # no token row kept: the next start makes one
    try:
        from bees_cli.cloud.server.admin_tokens import AdminTokens

        assert AdminTokens(storage.db).ensure(tmp_path / "t.token").made is True
    finally:
        storage.close()
