"""Configuration from the environment for CI (issue 15, point 4): ``BEES_WORKSPACE``,
``BEES_CLOUD_URL`` and ``BEES_TOKEN``, ``bees login --with-token`` and plain-http refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bees_cli.cloud.login import check_transport
from bees_cli.cloud.server.storage import Storage
from bees_cli.errors import UserError
from bees_cli.machine.signin import Login, effective_login, save_login

from ..conftest import BeesRunner, run_lines
from .conftest import ServerProcess

SAVED = Login("https://saved.example.com", "bees.saved")


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, SAVED),
    ({"BEES_TOKEN": "bees.env"},
     Login("https://saved.example.com", "bees.env", "saved", "BEES_TOKEN")),
    ({"BEES_CLOUD_URL": "https://env.example.com/"},
     Login("https://env.example.com", "bees.saved", "BEES_CLOUD_URL", "saved")),
    ({"BEES_CLOUD_URL": "https://env.example.com", "BEES_TOKEN": "bees.env"},
     Login("https://env.example.com", "bees.env", "BEES_CLOUD_URL", "BEES_TOKEN")),
    ({"BEES_CLOUD_URL": " ", "BEES_TOKEN": ""}, SAVED),
])
def test_the_environment_overrides_the_saved_sign_in(
    bees_home: Path, environ: dict[str, str], expected: Login
) -> None:
    save_login(SAVED)
    assert effective_login(environ=environ) == expected


def test_the_environment_alone_signs_in_and_half_of_it_is_an_error(bees_home: Path) -> None:
    both = {"BEES_CLOUD_URL": "https://env.example.com", "BEES_TOKEN": "bees.env"}
    assert effective_login(environ=both) == Login(
        "https://env.example.com", "bees.env", "BEES_CLOUD_URL", "BEES_TOKEN")
    assert effective_login(environ={}) is None
    with pytest.raises(UserError, match="^BEES_TOKEN is set but no Bees Cloud URL is$"):
        effective_login(environ={"BEES_TOKEN": "bees.env"})
    with pytest.raises(UserError, match="^BEES_CLOUD_URL is set but no token is$"):
        effective_login(environ={"BEES_CLOUD_URL": "https://env.example.com"})


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765",
    "http://127.3.4.5", "https://cloud.example.com", "http://cloud.example.com",
])
def test_plain_http_is_allowed_only_to_this_computer(url: str) -> None:
    if url == "http://cloud.example.com":
        with pytest.raises(UserError) as refused:
            check_transport(url)
        assert (refused.value.message, refused.value.hint, refused.value.exit_code) == (
            "refusing to send a token over plain http to cloud.example.com",
            "use https://cloud.example.com, or add --insecure if this network is trusted", 2)
        assert check_transport(url, insecure=True) == url
    else:
        assert check_transport(url) == url


def _person(admin: Storage, tmp_path: Path) -> tuple[str, str]:
    name = f"env-{tmp_path.name[-8:]}".replace("_", "-")
    admin.add_team(name)
    return name, admin.add_person("maya@example.com", name)


def test_ci_signs_in_by_the_environment_and_doctor_says_so(
    bees: BeesRunner, bees_home: Path, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    name, token = _person(admin, tmp_path)
    env = {"BEES_CLOUD_URL": server.url, "BEES_TOKEN": token}
    status = bees("cloud", "status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert (data["url"], data["person"], data["team"]) == (server.url, "maya@example.com", name)
    assert not (bees_home / "state" / "cloud.json").exists()  # nothing written to disk
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "bees.yaml").write_text("name: demo\n")
    doctor = bees("doctor", "--json", env={**env, "BEES_WORKSPACE": str(workspace)},
                  cwd=tmp_path)
    checks = {c["check"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["cloud"] == {
        "check": "cloud", "ok": True, "configured": True, "url": server.url,
        "url_from": "BEES_CLOUD_URL", "token_from": "BEES_TOKEN",
        "person": "maya@example.com", "team": name}
    assert (checks["workspace"]["path"], checks["workspace"]["from_env"]) == (
        str(workspace.resolve()), True)
    text = bees("doctor", env={**env, "BEES_WORKSPACE": str(workspace)}, cwd=tmp_path)
    assert (f"ok    cloud: {server.url}: signed in as maya@example.com (team {name}) (URL "
            "from BEES_CLOUD_URL, token from BEES_TOKEN)") in text.stdout.splitlines()
    assert (f"ok    workspace: {workspace.resolve()} (from BEES_WORKSPACE)"
            in text.stdout.splitlines())
    saved = bees("doctor", "--json", env={"BEES_CLOUD_URL": server.url},
                 cwd=tmp_path)  # half of it, nothing saved: an error, not a silent "no cloud"
    assert (saved.returncode, json.loads(saved.stdout)["error"]["message"]) == (
        2, "BEES_CLOUD_URL is set but no token is")


def test_login_with_token_reads_stdin_and_shows_the_url_first(
    bees_home: Path, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    name, token = _person(admin, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "bees_cli", "login", "--with-token"],
        input=token + "\n", capture_output=True, text=True, timeout=120,
        env=dict(os.environ, BEES_HOME=str(bees_home), BEES_CLOUD_URL=server.url),
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "",
        f"sending the token to {server.url}\n"
        f"signed in to {server.url} as maya@example.com (team {name})\n"
        "this computer's person is now maya@example.com\n")
    stored = json.loads((bees_home / "state" / "cloud.json").read_text())
    assert stored == {"url": server.url, "token": token}


def test_login_refuses_plain_http_to_another_computer(bees: BeesRunner, bees_home: Path) -> None:
    refused = bees("login", "http://cloud.example.com", "--token", "bees.x")
    assert (refused.returncode, refused.stderr) == (
        2, "error: refusing to send a token over plain http to cloud.example.com\n"
        "hint: use https://cloud.example.com, or add --insecure if this network is trusted\n")
    assert not (bees_home / "state" / "cloud.json").exists()
    allowed = bees("login", "http://cloud.example.com", "--token", "bees.x", "--insecure",
                   "--no-check")
    assert (allowed.returncode, allowed.stderr) == (
        0, "sending the token to http://cloud.example.com\n"
        "stored the token for http://cloud.example.com (not checked)\n")
    both = bees("login", "https://cloud.example.com", "--token", "x", "--with-token")
    assert (both.returncode, both.stderr.splitlines()[0]) == (
        2, "error: give --token or --with-token, not both")


def test_the_tokens_person_is_this_computers_person(
    bees: BeesRunner, bees_home: Path, admin: Storage, server: ServerProcess, tmp_path: Path
) -> None:
    """Issue 23, point 8: signed in by ``BEES_CLOUD_URL`` and ``BEES_TOKEN`` alone, the
    token's person becomes this computer's person, as ``bees login`` makes it: ``bees
    doctor`` names one person, and ``bees run`` registers that person's schedules."""
    name, token = _person(admin, tmp_path)
    env = {"BEES_CLOUD_URL": server.url, "BEES_TOKEN": token}
    workspace = tmp_path / "ws"
    assert bees("init", str(workspace)).returncode == 0
    (workspace / "schedules" / "daily-draft.yaml").write_text(
        "process: draft-review\nowner: maya@example.com\ncron: '0 9 * * *'\n"
        "timezone: Europe/Paris\n")
    doctor = bees("doctor", "-w", str(workspace), env=env)
    lines = doctor.stdout.splitlines()
    assert [line for line in lines if line.startswith("computer ")] == [
        f"computer  {json.loads(bees('whoami', '--json').stdout)['computer']} "
        "(maya@example.com)"], doctor.stdout
    assert (f"ok    cloud: {server.url}: signed in as maya@example.com (team {name}) (URL "
            "from BEES_CLOUD_URL, token from BEES_TOKEN)") in lines
    assert doctor.stderr == "this computer's person is now maya@example.com (BEES_TOKEN's)\n"
    again = bees("doctor", "-w", str(workspace), "--json", env=env)
    assert (json.loads(again.stdout)["person"], again.stderr) == ("maya@example.com", "")
    (bees_home / "state" / "machine.json").write_text(json.dumps({  # a fresh computer again
        **json.loads((bees_home / "state" / "machine.json").read_text()), "person": None}))
    ran = bees("run", "-w", str(workspace), "--exit-when-idle", env=env, timeout=180)
    said = run_lines(ran.stderr)
    assert ran.returncode == 0, ran.stderr
    assert "this computer's person is now maya@example.com (BEES_TOKEN's)" in said
    assert "schedules added: daily-draft" in said, ran.stderr
    assert not [line for line in said if "schedules are not registered" in line]
