"""The ``bees cloud`` and ``bees login``/``logout`` commands, run as subprocesses."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from bees_cli.cloud.server.storage import Storage

from ..conftest import BeesRunner
from .conftest import ServerProcess

TOKEN = re.compile(r"^bees\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$")


def test_team_and_person_admin_on_a_database(bees: BeesRunner, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'admin.db'}"
    made = bees("cloud", "team", "add", "acme", "--db", db)
    assert (made.returncode, made.stderr) == (0, "team acme created\n")
    assert bees("cloud", "team", "add", "acme", "--db", db).stderr == "team acme exists already\n"
    added = bees("cloud", "person", "add", "Maya@Example.com", "--team", "acme", "--db", db)
    assert added.returncode == 0
    token = added.stdout.strip()
    assert TOKEN.match(token)
    storage = Storage(db)
    try:
        who = storage.authenticate(token)
        assert who is not None and (who.email, who.team) == ("maya@example.com", "acme")
        missing = bees("cloud", "person", "add", "sam@example.com", "--team", "nope", "--db", db)
        assert missing.returncode == 2 and "no team 'nope'" in missing.stderr
        revoked = bees(
            "cloud", "person", "revoke", "maya@example.com", "--team", "acme", "--db", db
        )
        assert (revoked.returncode, revoked.stderr) == (
            0,
            "revoked 1 token of maya@example.com in team acme\n",
        )
        assert storage.authenticate(token) is None
        with storage.engine.connect() as conn:  # the token is stored only as a hash
            dump = "\n".join(line for line in conn.connection.iterdump())  # type: ignore[attr-defined]
        assert token.split(".")[2] not in dump
    finally:
        storage.close()


def test_bad_database_url_is_a_user_error(bees: BeesRunner) -> None:
    done = bees("cloud", "team", "add", "acme", "--db", "mysql://x/y")
    assert done.returncode == 2
    assert "unsupported database URL" in done.stderr and "Traceback" not in done.stderr


def test_login_status_logout(
    bees: BeesRunner, bees_home: Path, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    name = f"cli-{tmp_path.name[-8:]}".replace("_", "-")
    admin.add_team(name)
    token = admin.add_person("maya@example.com", name)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "bees.yaml").write_text(f"name: demo\ncloud: {server.url}\n")

    signed = bees("login", "-w", str(workspace), "--token", token)
    assert signed.returncode == 0, signed.stderr
    assert signed.stderr == f"signed in to {server.url} as maya@example.com (team {name})\n"
    stored = bees_home / "state" / "cloud.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text()) == {"url": server.url, "token": token}

    status = bees("cloud", "status", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert (data["reachable"], data["person"], data["team"], data["error"]) == (
        True,
        "maya@example.com",
        name,
        None,
    )
    assert abs(data["skew_seconds"]) < 5

    assert bees("logout").stderr == "signed out\n"
    assert not stored.exists()
    after = bees("cloud", "status", "--json")
    assert after.returncode == 2
    assert json.loads(after.stdout)["error"]["message"] == "not signed in to Bees Cloud"


def test_login_with_a_bad_token_stores_nothing(
    bees: BeesRunner, bees_home: Path, server: ServerProcess
) -> None:
    done = bees("login", server.url, "--token", "bees.0000000000000000.nope")
    assert done.returncode == 1
    assert "unknown or revoked" in done.stderr and "Traceback" not in done.stderr
    assert not (bees_home / "state" / "cloud.json").exists()


def test_status_when_the_server_is_down(bees: BeesRunner, bees_home: Path) -> None:
    state = bees_home / "state"
    state.mkdir(parents=True)
    (state / "cloud.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "token": "t"}))
    done = bees("cloud", "status", "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert (data["reachable"], data["error"]["code"]) == (False, "cloud_unreachable")
