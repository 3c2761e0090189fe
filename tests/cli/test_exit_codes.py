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
    WaitTimedOut,
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
    ("approvals show", ("approvals", "show", ITEM), ExitCode.FAILURE),
    ("approvals show", ("approvals", "show", "01JH3"), ExitCode.USAGE),
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
    ("item create", ("item", "create", "draft-review", "--wait", "--timeout", "0", "-w", WS),
     ExitCode.FAILURE),
    ("item show", ("item", "show", "01ZZZZZZ"), ExitCode.FAILURE),
    ("item watch", ("item", "watch", "01ZZZZZZ"), ExitCode.FAILURE),
    ("item watch", ("item", "watch", ITEM, "--until-waiting", "--nope"), ExitCode.USAGE),
    ("item accept", ("item", "accept", ITEM), ExitCode.REFUSED),
    ("item cancel", ("item", "cancel", ITEM), ExitCode.REFUSED),
    ("schemas write", ("schemas", "write", "{file}"), ExitCode.USAGE),
    ("schemas write", ("schemas", "write", "{file}/schemas"), ExitCode.FAILURE),
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
    ("demo", ("demo", "--threads", "0"), ExitCode.USAGE),
    ("demo", ("demo", "--yes", "--dir", "{tmp}", "--model-url", "http://127.0.0.1:9/v1"),
     ExitCode.USAGE),
    ("delegate", ("delegate", "alpha", "--task", "look"), ExitCode.USAGE),
    ("completion", ("completion", "tcsh"), ExitCode.USAGE),
    ("help", ("help", "cloud", "nope"), ExitCode.USAGE),
    ("app", ("app", "--port", "70000", "--no-open"), ExitCode.USAGE),
    ("cloud admin-token", ("cloud", "admin-token", "--db", "x.db", "--file", "{tmp}/t"),
     ExitCode.USAGE),
    ("offers", ("offers",), ExitCode.USAGE),  # no Bees Cloud configured here
    ("runners", ("runners",), ExitCode.USAGE),  # likewise
    ("cloud admin runner add", ("cloud", "admin", "runner", "add", "runner-1", "--pool", "b",
                                "--team", "t"), ExitCode.USAGE),  # no server named
    ("cloud admin runner retire", ("cloud", "admin", "runner", "retire", "runner-1", "--team",
                                   "t"), ExitCode.USAGE),  # likewise
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
        CloudRefused, CloudUnreachable, DiskError, WaitTimedOut, OSError, KeyError)] == [
            1, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1, 1]
    assert {code for _kind, code, _why in EXIT_CODES} == set(ExitCode) - {ExitCode.OK}


def test_the_readme_states_the_table() -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    assert ("Exit codes: 0 ok; 1 failure (including not found and I/O errors); 2 bad usage or "
            "invalid workspace; 3 refused") in " ".join(readme.split())
    assert "; 141 the reader of the output went away" in " ".join(readme.split())
    assert "| 141 | the reader of the output went away" in (
        REPO / "docs" / "ci.md").read_text("utf-8")


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


def test_schemas_write_that_cannot_write_is_an_io_failure(
        run_bees: InProcess, places: dict[str, str]) -> None:
    """Issue 23, point 8: an I/O error is exit 1, as the table says, not a usage error."""
    target = f"{places['file']}/schemas"
    done = run_bees("schemas", "write", target, "--json")
    assert (done.code, done.raised) == (ExitCode.FAILURE, None)
    assert done.json() == {"version": 1, "error": {
        "code": "io", "message": f"{target}: cannot write: Not a directory", "hint": None}}


def test_a_record_that_is_not_a_database_is_one_line(run_bees: InProcess,
                                                    bees_home: Path) -> None:
    record = Computer.load().record_path
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_bytes(b"not sqlite at all" * 100)
    for argv in (("status",), ("approvals",), ("item", "show", ITEM)):
        done = run_bees(*argv)
        assert (done.code, done.raised) == (ExitCode.FAILURE, None), (argv, done.stderr)
        assert done.stderr.startswith(f"error: {record} is not a Bees record"), done.stderr
    # a documented code, the one of an I/O error on a named file (exit 1 as the table says)
    done = run_bees("status", "--json")
    assert (done.code, done.json()["error"]["code"]) == (ExitCode.FAILURE, "io")


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


def test_a_wrong_admin_token_is_a_refusal(run_bees: InProcess,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The server answers 401 to a token that is not its admin token: the admin command is
    refused (exit 3, ``not_admin``), not a failure."""
    from bees_cli.cloud.client import CloudClient
    from bees_cli.errors import CloudUnauthorized

    def refuse(self: CloudClient, call: object) -> object:
        raise CloudUnauthorized("this call needs the server's admin token",
                                hint="give --admin-token-file FILE")

    monkeypatch.setattr(CloudClient, "call", refuse)
    monkeypatch.setenv("BEES_ADMIN_TOKEN", "bees-admin.0123456789abcdef.nope")
    argv = ("cloud", "team", "add", "acme", "--server", "http://127.0.0.1:1")
    done = run_bees(*argv)
    assert (done.code, done.raised, done.stderr) == (
        ExitCode.REFUSED, None, "error: this call needs the server's admin token (not_admin)\n"
        "hint: give --admin-token-file FILE\n")
    as_json = run_bees(*argv, "--json")
    assert (as_json.code, as_json.json()["error"]["code"]) == (ExitCode.REFUSED, "not_admin")


def test_the_sign_in_hint_names_with_token(run_bees: InProcess) -> None:
    """The hints name ``bees login URL --with-token`` (the token from stdin), never a token
    on the command line."""
    done = run_bees("cloud", "status")
    assert (done.code, done.stderr) == (
        ExitCode.USAGE, "error: not signed in to Bees Cloud\n"
        "hint: run `bees login URL --with-token`\n")


CLOSED_PIPE = 141
"""What a shell reports for a program a closed pipe stopped (128 + SIGPIPE's 13)."""


def _closed_pipe_run(bees_home: Path, argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``bees ARGV`` with a stdout whose reader is already gone; return its exit code
    and stderr."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "bees_cli", *argv], stdout=write,
                              stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=120,
                              env={**os.environ, "BEES_HOME": str(bees_home)})
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_bees_item_show_piped_to_head_ends_quietly_with_the_shells_status(
        bees_home: Path, tmp_path: Path) -> None:
    """``bees item show ID | head -1`` (issue 23, point 8): head leaves after one line, bees
    ends quietly with 141, as a program a closed pipe stopped does, never "unexpected
    BrokenPipeError… report it"."""
    import os
    import subprocess
    import sys

    record = LocalRecord(Computer.load().record_path)
    record.add_item(id=ITEM, process="draft-review", title="Week 1", workspace=str(tmp_path),
                    run_folder=str(tmp_path / "run"), input="", stage="Draft")
    with record.step():  # one transaction: the same rows, one commit instead of 2000
        for n in range(2000):  # a history longer than a pipe holds: head leaves before its end
            record._add_event(ITEM, key=f"retried:{n}", kind="retried", stage="Draft",
                             data={"who": "maya@example.com"})
    bees = f"{sys.executable} -m bees_cli"
    script = (f'{bees} item show {ITEM} | head -1; echo "bees ended ${{PIPESTATUS[0]}}" >&2'
              f'; {bees} item show {ITEM} --json | head -1; echo "${{PIPESTATUS[0]}}" >&2')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "BEES_HOME": str(bees_home)})
    assert done.stdout.splitlines() == [f"item        {ITEM}  Week 1", "{"]
    assert done.stderr == f"bees ended {CLOSED_PIPE}\n{CLOSED_PIPE}\n"


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The starter workspace (``bees init``), made once for this module's pipe tests."""
    from bees_cli.workspace.starter import create

    ws = tmp_path_factory.mktemp("starter") / "ws"
    create(ws)
    return ws


@pytest.mark.parametrize("argv", [
    ["--help"], ["--version"], ["item", "--help"], ["status", "--json"], ["whoami"],
    ["validate", "{ws}"], ["validate", "{ws}", "--json"], ["links", "-w", "{ws}"],
    ["schedules", "-w", "{ws}"], ["doctor", "-w", "{ws}"], ["completion", "bash"],
    ["item", "create", "draft-review", "-w", "{ws}", "--json"],
    ["item", "show", "01ZZZZZZ", "--json"], ["approvals", "--json"], ["nosuch"],
], ids=lambda argv: " ".join(argv))
def test_every_command_ends_quietly_when_its_reader_is_gone(
        bees_home: Path, tmp_path: Path, starter: Path, argv: list[str]) -> None:
    """Every way out to stdout (a command's output, its JSON error, click's help, the
    root's help and version, a command that touched the engine): a stdout nobody reads
    ends the command with 141 and nothing said about it (the closed pipe row of the
    table); its talk on stderr is still said."""
    code, stderr = _closed_pipe_run(bees_home, [a.format(ws=starter) for a in argv],
                                    tmp_path)
    if argv == ["nosuch"]:  # a usage error says so on stderr, which is still read
        assert (code, stderr.splitlines()[-1]) == (
            ExitCode.USAGE, "Error: No such command 'nosuch'.")
        return
    assert code == CLOSED_PIPE, stderr
    assert "error" not in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize(("argv", "said"), [
    (("model", "serve", "--port", "11502", "--context", "99999999999"),
     "Invalid value for '--context': Input should be less than or equal to 1048576"),
    (("model", "serve", "--port", "11502", "--threads", "99999999999"),
     "Invalid value for '--threads': Input should be less than or equal to 256"),
    (("demo", "--threads", "99999999999"),
     "Invalid value for '--threads': Input should be less than or equal to 256"),
])
def test_a_huge_number_is_a_usage_error_before_the_model_starts(
        run_bees: InProcess, argv: tuple[str, ...], said: str) -> None:
    ran = run_bees(*argv)
    assert (ran.code, ran.raised) == (ExitCode.USAGE, None)
    assert said in " ".join(ran.stderr.replace("│", " ").split())
