"""The ``bees cloud`` and ``bees login``/``logout`` commands, run as subprocesses."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from bees_cli.cloud.server.storage import Storage
from tests.cli.test_json_contract import matches

from ..conftest import BeesRunner
from .conftest import ServerProcess

TOKEN = re.compile(r"^bees\.[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$")


def test_team_and_person_admin_on_a_database(bees: BeesRunner, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'admin.db'}"
    Storage(db).close()  # the server's first start made it
    made = bees("cloud", "team", "add", "acme", "--db", db)
    assert (made.returncode, made.stderr) == (0, f"team acme created on database {db}\n")
    assert bees("cloud", "team", "add", "acme", "--db", db).stderr == (
        f"team acme exists already on database {db}\n")
    added = bees("cloud", "person", "add", "Maya@Example.com", "--team", "acme", "--db", db)
    assert added.returncode == 0
    token = added.stdout.strip()
    assert TOKEN.match(token)
    storage = Storage(db)
    try:
        who = storage.authenticate(token)
        assert who is not None and (who.email, who.team) == ("maya@example.com", "acme")
        missing = bees("cloud", "person", "add", "sam@example.com", "--team", "nope", "--db", db)
        assert missing.returncode == 1 and "no team 'nope'" in missing.stderr  # not found
        revoked = bees(
            "cloud", "person", "revoke", "maya@example.com", "--team", "acme", "--db", db
        )
        assert (revoked.returncode, revoked.stderr) == (
            0,
            f"revoked 1 token of maya@example.com in team acme on database {db}\n",
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
    assert signed.stderr == (
        f"sending the token to {server.url}\n"
        f"signed in to {server.url} as maya@example.com (team {name})\n"
        "this computer's person is now maya@example.com\n"
    )
    stored = bees_home / "state" / "cloud.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text()) == {"url": server.url, "token": token}

    status = bees("cloud", "status", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert matches("cloud status", data) == "cloud-status.json"  # its generated schema
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


BAD_URLS = [
    ("http://[::1", "invalid IPv6 URL"),
    ("http://127.0.0.1:abc", "the port must be a number from 1 to 65535"),
    ("http://127.0.0.1:99999", "the port must be a number from 1 to 65535"),
]


def test_login_refuses_a_url_that_is_not_valid(bees: BeesRunner, bees_home: Path) -> None:
    for url, problem in BAD_URLS:
        for check in ("--check", "--no-check"):
            done = bees("login", url, "--token", "x", check)
            assert (done.returncode, done.stderr) == (
                2,
                f"error: not a valid URL: {url} ({problem})\n"
                "hint: e.g. https://cloud.example.com or http://127.0.0.1:8765\n",
            ), check
            assert not (bees_home / "state" / "cloud.json").exists()


def test_a_stored_bad_url_is_an_error_not_a_traceback(bees: BeesRunner, bees_home: Path) -> None:
    state = bees_home / "state"
    state.mkdir(parents=True)
    for url, problem in BAD_URLS:
        (state / "cloud.json").write_text(json.dumps({"url": url, "token": "t"}))
        message = f"cannot reach Bees Cloud: the stored URL is not valid: {url} ({problem})"
        hint = "run `bees logout`, then `bees login URL --with-token` with a valid URL"
        plain = bees("cloud", "status")
        assert (plain.returncode, plain.stdout, plain.stderr) == (
            1,
            f"url        {url}\nreachable  no\n",
            f"error: {message}\nhint: {hint}\n",
        )
        as_json = bees("cloud", "status", "--json")
        assert as_json.returncode == 1
        data = json.loads(as_json.stdout)
        assert (data["reachable"], data["error"]) == (
            False,
            {"code": "cloud_unreachable", "message": message, "hint": hint},
        )
        doctor = bees("doctor", "--json")
        assert "Traceback" not in doctor.stderr
        checks = {c["check"]: c for c in json.loads(doctor.stdout)["checks"]}
        assert (checks["cloud"]["ok"], checks["cloud"]["error"]) == (False, "cloud_unreachable")
        assert message in checks["cloud"]["message"]
    assert bees("logout").stderr == "signed out\n"


def test_status_hint_when_the_server_is_down_is_not_status_itself(
    bees: BeesRunner, bees_home: Path
) -> None:
    state = bees_home / "state"
    state.mkdir(parents=True)
    (state / "cloud.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "token": "t"}))
    done = bees("cloud", "status")
    assert done.returncode == 1
    assert done.stderr.endswith(
        "hint: is the server up? check the URL with `bees login URL --with-token`\n"
    )
    assert "bees cloud status" not in done.stderr


def test_login_sets_the_person_and_logout_keeps_it(
    bees: BeesRunner, bees_home: Path, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    name = f"who-{tmp_path.name[-8:]}".replace("_", "-")
    admin.add_team(name)
    maya = admin.add_person("maya@example.com", name)
    sam = admin.add_person("sam@example.com", name)

    def person() -> str | None:
        done = bees("whoami", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["person"]

    assert person() is None
    first = bees("login", server.url, "--token", maya)
    sending = f"sending the token to {server.url}\n"
    assert (first.returncode, first.stderr) == (
        0,
        sending + f"signed in to {server.url} as maya@example.com (team {name})\n"
        "this computer's person is now maya@example.com\n",
    )
    assert person() == "maya@example.com"
    again = bees("login", server.url, "--token", maya)
    assert again.stderr == (
        sending + f"signed in to {server.url} as maya@example.com (team {name})\n")
    switched = bees("login", server.url, "--token", sam)
    assert (switched.returncode, switched.stderr) == (
        0,
        sending + f"signed in to {server.url} as sam@example.com (team {name})\n"
        "person changed from maya@example.com to sam@example.com\n",
    )
    assert person() == "sam@example.com"
    unchecked = bees("login", server.url, "--token", maya, "--no-check")
    assert unchecked.stderr == sending + f"stored the token for {server.url} (not checked)\n"
    assert person() == "sam@example.com"
    assert bees("logout").stderr == "signed out\n"
    assert person() == "sam@example.com"


def test_login_without_a_url_fails_before_asking_for_the_token(
    bees: BeesRunner, tmp_path: Path
) -> None:
    expected = (
        2,
        "",
        "error: no URL given and no workspace cloud URL\n"
        "hint: pass it: bees login https://cloud.example.com --with-token"
        " (or set `cloud:` in bees.yaml)\n",
    )
    outside = bees("login", cwd=tmp_path)
    assert (outside.returncode, outside.stdout, outside.stderr) == expected
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "bees.yaml").write_text("name: demo\n")
    inside = bees("login", cwd=workspace)
    assert (inside.returncode, inside.stdout, inside.stderr) == expected


def test_serve_refuses_a_port_out_of_range(bees: BeesRunner, tmp_path: Path) -> None:
    for port in ("99999", "-1", "65536"):
        done = bees("cloud", "serve", "--db", f"sqlite:///{tmp_path / 'c.db'}", "--port", port)
        assert done.returncode == 2, done.stderr
        assert "Invalid value for '--port'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "c.db").exists()


def test_in_memory_and_bare_path_databases_are_refused(bees: BeesRunner, tmp_path: Path) -> None:
    memory = (
        2,
        "error: an in-memory database keeps nothing; give sqlite:///PATH\n"
        "hint: e.g. --db sqlite:///cloud.db (a file in this folder)\n",
    )
    for db in ("sqlite://", "sqlite:///:memory:", "sqlite+pysqlite://"):
        done = bees("cloud", "team", "add", "t", "--db", db, cwd=tmp_path)
        assert (done.returncode, done.stderr) == memory, db
    served = bees("cloud", "serve", "--db", "sqlite://", "--port", "0", cwd=tmp_path)
    assert (served.returncode, served.stderr) == memory
    for db in ("notaurl", "postgres"):
        done = bees("cloud", "team", "add", "t", "--db", db, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (
            2,
            f"error: --db {db}: not a database URL\n"
            "hint: give sqlite:///PATH or postgresql+psycopg://USER@HOST/DB\n",
        )
    assert list(tmp_path.iterdir()) == [tmp_path / "home"]


def test_login_to_a_server_that_never_answers_says_so_within_bounds(
        bees: BeesRunner, bees_home: Path) -> None:
    """A port that accepts connections and never answers: the sign-in says the server did
    not answer within its time, with a hint that is not the command just run."""
    import socket
    import time

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts; nobody reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        done = bees("login", url, "--token", "t0k")
        took = time.monotonic() - started
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"sending the token to {url}",
        f"error: Bees Cloud at {url} did not answer within 5 s (2 tries)",
        f"hint: is Bees Cloud running at {url}? nothing was stored"]
    assert took < 20, took  # a guard, not the rule: two 5 s tries and a pause
    assert not (bees_home / "state" / "cloud.json").exists()
