"""This computer's state: identity per BEES_HOME, folder links, add-on connections, atomic files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bees_cli import files
from bees_cli.errors import NotFound, UserError
from bees_cli.machine.connections import check_connection
from bees_cli.machine.identity import load_identity, set_identity
from bees_cli.machine.links import link_folder, resolve_folder, unlink_folder
from bees_cli.workspace.models import Addon, Folder
from tests.conftest import EXAMPLE


def test_two_homes_are_two_computers(bees, tmp_path: Path) -> None:
    first = bees("whoami", "--json", env={"BEES_HOME": str(tmp_path / "a")})
    second = bees("whoami", "--json", env={"BEES_HOME": str(tmp_path / "b")})
    again = bees("whoami", "--json", env={"BEES_HOME": str(tmp_path / "a")})
    ids = [json.loads(p.stdout)["machine_id"] for p in (first, second, again)]
    assert len(ids[0]) == 32
    assert ids[0] != ids[1]
    assert ids[0] == ids[2]


def test_set_person_persists_and_rejects_non_email(bees_home: Path) -> None:
    identity = set_identity(person="maya@example.com", computer="maya-laptop")
    assert (identity.person, identity.computer) == ("maya@example.com", "maya-laptop")
    assert load_identity() == identity
    with pytest.raises(UserError, match="not an email address: 'maya'"):
        set_identity(person="maya")
    assert load_identity().person == "maya@example.com"


def test_links_persist_across_invocations(bees, tmp_path: Path) -> None:
    notes = tmp_path / "shared notes"
    notes.mkdir()
    linked = bees("link", "team-notes", str(notes), "-w", str(EXAMPLE))
    assert linked.returncode == 0, linked.stderr
    listed = bees("links", "--json", "-w", str(EXAMPLE))
    assert json.loads(listed.stdout)["folders"] == [
        {
            "folder": "outbox",
            "path": str(EXAMPLE / "outbox"),
            "linked": True,
            "reason": "default path",
        },
        {
            "folder": "team-notes",
            "path": str(notes),
            "linked": True,
            "reason": "linked with bees link",
        },
    ]
    assert bees("unlink", "team-notes").returncode == 0
    listed = bees("links", "--json", "-w", str(EXAMPLE))
    assert json.loads(listed.stdout)["folders"][1]["reason"] == "default path"


def test_link_errors_name_the_problem(bees, tmp_path: Path) -> None:
    typo = bees("link", "team-note", str(tmp_path), "-w", str(EXAMPLE))
    assert typo.returncode == 1  # not found (issue 15, point 3)
    assert typo.stderr.splitlines()[0] == (
        "error: no folder named 'team-note' in the workspace — did you mean 'team-notes'?"
    )
    missing = bees("link", "team-notes", str(tmp_path / "nope"), "-w", str(EXAMPLE))
    assert missing.returncode == 2
    assert (
        missing.stderr.splitlines()[0] == f"error: {tmp_path / 'nope'}: not an existing directory"
    )
    assert "Traceback" not in typo.stderr + missing.stderr


def test_resolve_reasons(bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTES_DIR", raising=False)
    unset = resolve_folder("notes", Folder(path="${NOTES_DIR}/x"), tmp_path)
    assert (unset.linked, unset.reason) == (
        False,
        "default path ${NOTES_DIR}/x: environment variable NOTES_DIR is not set",
    )
    monkeypatch.setenv("NOTES_DIR", str(tmp_path))
    (tmp_path / "x").mkdir()
    expanded = resolve_folder("notes", Folder(path="${NOTES_DIR}/x"), None)
    assert (expanded.path, expanded.linked) == (tmp_path / "x", True)
    relative = resolve_folder("notes", Folder(path="x"), tmp_path)
    assert (relative.path, relative.reason) == (tmp_path / "x", "default path")
    none = resolve_folder("notes", Folder(), tmp_path)
    assert none.reason == "not linked on this computer (bees link notes PATH)"
    link_folder("notes", tmp_path / "x", ["notes"])
    (tmp_path / "x").rmdir()
    gone = resolve_folder("notes", Folder(), tmp_path)
    assert (gone.linked, gone.reason) == (
        False,
        f"linked to {tmp_path / 'x'}, which is not an existing directory",
    )
    unlink_folder("notes")
    with pytest.raises(NotFound):
        unlink_folder("notes")


def test_addon_connection(bees_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    addon = Addon.model_validate(
        {
            "actions": {"send": {"kind": "send", "command": ["true"]}},
            "connection": {"env": ["GMAIL_TOKEN"], "files": [str(tmp_path / "cred.json")]},
        }
    )
    monkeypatch.delenv("GMAIL_TOKEN", raising=False)
    first = check_connection("gmail", addon)
    assert (first.connected, first.missing) == (
        False,
        ["env GMAIL_TOKEN", f"file {tmp_path / 'cred.json'}"],
    )
    monkeypatch.setenv("GMAIL_TOKEN", "t")
    (tmp_path / "cred.json").write_text("{}")
    assert check_connection("gmail", addon).connected is True


def test_state_file_is_never_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "links.json"
    files.write_json_atomic(target, {"a": "1"})

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        files.write_json_atomic(target, {"a": "2" * 100_000})
    assert json.loads(target.read_text()) == {"a": "1"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["links.json"]


def test_secret_mode(tmp_path: Path) -> None:
    target = tmp_path / "cloud.json"
    files.write_json_atomic(target, {"token": "x"}, mode=0o600)
    assert target.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"{garbage",
            "not valid JSON (Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1))",
        ),
        (b"", "not valid JSON (Expecting value: line 1 column 1 (char 0))"),
        (b"[]", "expected a JSON object, got list"),
        (b'{"machine_id": 5}', "machine_id 5 is not valid"),
        (b'{"person": "maya"}', "person 'maya' is not valid"),
        (
            b"\xff\xfe",
            "not valid JSON ('utf-8' codec can't decode byte 0xff in position 0: "
            "invalid start byte)",
        ),
    ],
)
def test_a_damaged_machine_file_is_a_clear_error(
    bees, bees_home: Path, content: bytes, message: str
) -> None:
    state = bees_home / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "machine.json").write_bytes(content)
    for args in (["whoami"], ["whoami", "--set-person", "maya@example.com"]):
        shown = bees(*args)
        assert shown.returncode == 2
        assert shown.stderr.splitlines()[0] == f"error: {state / 'machine.json'}: {message}"
        assert shown.stderr.splitlines()[1].startswith("hint: repair it, or move it aside")
    as_json = bees("whoami", "--json")
    assert json.loads(as_json.stdout)["error"]["code"] == "state_file_invalid"
    assert (state / "machine.json").read_bytes() == content  # nothing overwritten


def test_a_damaged_links_file_is_a_clear_error(bees, bees_home: Path) -> None:
    state = bees_home / "state"
    state.mkdir(parents=True, exist_ok=True)
    (state / "links.json").write_text('{"team-notes": 7}')
    shown = bees("links", "-w", str(EXAMPLE))
    assert shown.returncode == 2
    assert shown.stderr.splitlines()[0] == (
        f"error: {state / 'links.json'}: the link of 'team-notes' is not a path"
    )
    assert "Traceback" not in shown.stderr
