"""Exit codes, one table, one test (issue 15, point 3): every leaf command is driven through
its error paths and ends with the table's code (0 ok; 1 failure, not found, I/O; 2 bad usage
or invalid workspace; 3 refused), never with a Python traceback unless ``bees --debug``."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import bees_cli
from bees_cli.cli.errors import EXIT_CODES, ExitCode, exit_code_for
from bees_cli.errors import (
    Ambiguous,
    BeesError,
    CloudRefused,
    CloudUnreachable,
    DiskError,
    NotFound,
    Refused,
    StateFileInvalid,
    UserError,
    WorkspaceInvalid,
)
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from bees_cli.record.states import Status
from tests.cli.conftest import InProcess
from tests.cli.test_json_contract import leaf_commands
from tests.conftest import REPO

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
WS = "{ws}"
"""Stands for the starter workspace's folder in a case's argv; ``{tmp}`` for a fresh folder
that holds no workspace, ``{bad}`` for an invalid workspace, ``{file}`` for a plain file."""

# (leaf command, argv, exit code): the error paths of every leaf command
CASES: list[tuple[str, tuple[str, ...], ExitCode]] = [
    ("whoami", ("whoami", "--set-person", "nope"), ExitCode.USAGE),
    ("link", ("link", "nothere", "{tmp}", "-w", WS), ExitCode.FAILURE),
    ("link", ("link", "notes", "{tmp}/missing", "-w", WS), ExitCode.USAGE),
    ("unlink", ("unlink", "notes"), ExitCode.FAILURE),
    ("links", ("links", "-w", "{tmp}"), ExitCode.USAGE),
    ("addons", ("addons", "-w", "{tmp}"), ExitCode.USAGE),
    ("run", ("run", "-w", "{tmp}/none", "--exit-when-idle"), ExitCode.USAGE),
    ("status", ("status", "--limit-that-is-not"), ExitCode.USAGE),
    ("init", ("init", WS), ExitCode.USAGE),
    ("validate", ("validate", "{tmp}"), ExitCode.USAGE),
    ("validate", ("validate", "{bad}"), ExitCode.USAGE),
    ("login", ("login",), ExitCode.USAGE),
    ("logout", ("logout", "extra"), ExitCode.USAGE),
    ("retry", ("retry", ITEM), ExitCode.REFUSED),
    ("retry", ("retry", "01ZZZZZZ"), ExitCode.FAILURE),
    ("retry", ("retry", "01JH3"), ExitCode.USAGE),
    ("retry", ("retry", "../x"), ExitCode.USAGE),
    ("approvals", ("approvals", "extra"), ExitCode.USAGE),
    ("approve", ("approve", ITEM), ExitCode.REFUSED),
    ("approve", ("approve", ITEM, "--ran", "--again"), ExitCode.USAGE),
    ("deny", ("deny", ITEM), ExitCode.USAGE),
    ("deny", ("deny", ITEM, "--reason", "no"), ExitCode.REFUSED),
    ("action", ("action", "mail.send"), ExitCode.USAGE),
    ("schedules", ("schedules", "-w", "{tmp}"), ExitCode.USAGE),
    ("doctor", ("doctor", "-w", WS), ExitCode.FAILURE),
    ("doctor", ("doctor", "-w", "{tmp}"), ExitCode.USAGE),
    ("doctor", ("doctor", "-w", "{bad}"), ExitCode.USAGE),
    ("relinquish", ("relinquish", ITEM), ExitCode.REFUSED),
    ("relinquish", ("relinquish", "01ZZZZZZ"), ExitCode.FAILURE),
    ("continue", ("continue", ITEM, "--digest", "nothex"), ExitCode.USAGE),
    ("continue", ("continue", ITEM, "--digest", "ab" * 32, "-w", WS), ExitCode.REFUSED),
    ("item create", ("item", "create", "nope", "-w", WS), ExitCode.FAILURE),
    ("item create", ("item", "create", "draft-review", "--timeout", "5", "-w", WS),
     ExitCode.USAGE),
    ("item show", ("item", "show", "01ZZZZZZ"), ExitCode.FAILURE),
    ("item accept", ("item", "accept", ITEM), ExitCode.REFUSED),
    ("item cancel", ("item", "cancel", ITEM), ExitCode.REFUSED),
    ("schemas write", ("schemas", "write", "{file}"), ExitCode.USAGE),
    ("cloud serve", ("cloud", "serve", "--db", "x.db"), ExitCode.USAGE),
    ("cloud status", ("cloud", "status"), ExitCode.USAGE),
    ("cloud team add", ("cloud", "team", "add", "acme", "--db", "x.db"), ExitCode.USAGE),
    ("cloud person add", ("cloud", "person", "add", "a@example.com", "--team", "acme",
                          "--db", "sqlite:///{tmp}/none/cloud.db"), ExitCode.FAILURE),
    ("cloud person revoke", ("cloud", "person", "revoke", "a@example.com", "--team", "acme",
                             "--db", "x.db"), ExitCode.USAGE),
    ("checkpoint verify", ("checkpoint", "verify", "{tmp}"), ExitCode.REFUSED),
    ("checkpoint verify", ("checkpoint", "verify", "{tmp}/none"), ExitCode.FAILURE),
    ("model serve", ("model", "serve", "--port", "70000"), ExitCode.USAGE),
    ("delegate", ("delegate", "alpha", "--task", "look"), ExitCode.USAGE),
    ("completion", ("completion", "tcsh"), ExitCode.USAGE),
    ("app", ("app", "--port", "70000", "--no-open"), ExitCode.USAGE),
    ("cloud admin-token", ("cloud", "admin-token", "--db", "x.db", "--file", "{tmp}/t"),
     ExitCode.USAGE),
]


@pytest.fixture
def places(run_bees: InProcess, tmp_path: Path) -> dict[str, str]:
    """The starter workspace, an empty folder, an invalid workspace, a file; and item ITEM
    here, relinquished."""
    ws = tmp_path / "ws"
    assert run_bees("init", str(ws)).code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bees.yaml").write_text("name: [unclosed\n")
    file = tmp_path / "file"
    file.write_text("not a folder\n")
    record = LocalRecord(Computer.load().record_path)
    record.add_item(id=ITEM, process="draft-review", title="Week 1", workspace=str(ws),
                    run_folder=str(tmp_path / "run"), input="", stage="Draft")
    record.set_state(ITEM, status=Status.FREE, stage="Draft", reason="restarts at Draft")
    return {"ws": str(ws), "tmp": str(empty), "bad": str(bad), "file": str(file)}


def test_every_leaf_command_has_error_paths_here() -> None:
    assert {name for name, _argv, _code in CASES} == set(leaf_commands())


@pytest.mark.parametrize(("argv", "code"), [(argv, code) for _n, argv, code in CASES],
                         ids=[" ".join(argv[:3]) for _n, argv, _c in CASES])
def test_each_error_path_ends_with_the_tables_code(
        run_bees: InProcess, places: dict[str, str], argv: tuple[str, ...],
        code: ExitCode) -> None:
    done = run_bees(*(a.format(**places) for a in argv))
    assert (done.code, done.raised) == (code, None), done.stderr
    assert "Traceback" not in done.stderr and "error: unexpected" not in done.stderr
    if argv[0] != "doctor":  # doctor's report is on stdout
        assert "\nerror: " in f"\n{done.stderr}" or done.stderr.startswith("Usage: "), \
            done.stderr


def test_the_table_and_the_errors_agree() -> None:
    for module in pkgutil.walk_packages(bees_cli.__path__, "bees_cli."):
        if not module.name.startswith(("bees_cli.cli", "bees_cli.__main__")) and \
                ".migrations" not in module.name:
            importlib.import_module(module.name)
    kinds: list[type[BeesError]] = [BeesError]
    seen = []
    while kinds:
        kind = kinds.pop()
        seen.append(kind)
        assert kind.exit_code == exit_code_for(kind), kind
        kinds.extend(kind.__subclasses__())
    assert len(seen) > 20
    assert [exit_code_for(k) for k in (
        NotFound, Ambiguous, UserError, WorkspaceInvalid, StateFileInvalid, Refused,
        CloudRefused, CloudUnreachable, DiskError, OSError, KeyError)] == [1, 2, 2, 2, 2, 3,
                                                                        3, 1, 1, 1, 1]
    assert {code for _kind, code, _why in EXIT_CODES} == set(ExitCode) - {ExitCode.OK}


def test_the_readme_states_the_table() -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    assert ("Exit codes: 0 ok; 1 failure (including not found and I/O errors); 2 bad usage or "
            "invalid workspace; 3 refused") in " ".join(readme.split())


@pytest.mark.parametrize("argv", [
    ("status",), ("whoami", "--json"), ("approvals",), ("doctor",), ("item", "show", ITEM),
    ("retry", ITEM), ("logout",), ("cloud", "status", "--json"),
])
def test_bees_home_naming_a_file_is_one_line_not_a_traceback(
        run_bees: InProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        argv: tuple[str, ...]) -> None:
    home = tmp_path / "home-file"
    home.write_text("")
    monkeypatch.setenv("BEES_HOME", str(home))
    done = run_bees(*argv)
    assert (done.code, done.raised) == (ExitCode.FAILURE, None)
    message = f"cannot use {home}/state: Not a directory"
    if "--json" in argv:
        assert done.json()["error"] == {"code": "io", "message": message,
                                        "hint": "check that path (and BEES_HOME, if set)"}
    else:
        assert done.stderr.splitlines() == [f"error: {message}",
                                            "hint: check that path (and BEES_HOME, if set)"]


def test_a_record_that_is_not_a_database_is_one_line(run_bees: InProcess,
                                                    bees_home: Path) -> None:
    record = Computer.load().record_path
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_bytes(b"not sqlite at all" * 100)
    for argv in (("status",), ("approvals",), ("item", "show", ITEM)):
        done = run_bees(*argv)
        assert (done.code, done.raised) == (ExitCode.FAILURE, None), (argv, done.stderr)
        assert done.stderr.startswith(f"error: {record} is not a Bees record"), done.stderr


def test_a_bug_keeps_its_traceback_only_under_debug(
        run_bees: InProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise KeyError("person")

    monkeypatch.setattr("bees_cli.machine.identity.load_identity", broken)
    plain = run_bees("whoami")
    assert (plain.code, plain.raised, plain.stderr.splitlines()) == (ExitCode.FAILURE, None, [
        "error: unexpected KeyError: 'person'",
        "hint: run it again with bees --debug to see the traceback, and report it"])
    debug = run_bees("--debug", "whoami")
    assert isinstance(debug.raised, KeyError)
    monkeypatch.setenv("BEES_DEBUG", "1")
    assert isinstance(run_bees("whoami").raised, KeyError)


def test_doctor_on_an_invalid_workspace_agrees_with_validate(
        run_bees: InProcess, places: dict[str, str]) -> None:
    validated = run_bees("validate", places["bad"], "--json")
    doctor = run_bees("doctor", "-w", places["bad"], "--json")
    assert (validated.code, doctor.code) == (ExitCode.USAGE, ExitCode.USAGE)
    [check] = [c for c in doctor.json()["checks"] if c["check"] == "workspace"]
    assert (check["ok"], check["error"]) == (False, validated.json()["error"]["code"])
    assert validated.json()["error"]["code"] == "invalid_workspace"
