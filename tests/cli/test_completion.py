"""Shell completion: ``bees completion SHELL`` and the values offered through the protocol."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner, Result

from bees_cli.cli.completion import COMPLETE_VAR
from bees_cli.cli.generated import root_command
from bees_cli.record.local import LocalRecord
from bees_cli.record.sync import SharedRecord
from tests.cli.shells import complete_bash, need, with_bees_on_path
from tests.conftest import EXAMPLE, REPO, BeesRunner

LOCAL_A = "01JH3QX5Z8K2M4N6P8R0T2V4W6"
LOCAL_B = "01JH3QYB2C3D4E5F6G7H8J9K0M"
TEAM_ONLY = "01JK7N8P9Q0R1S2T3V4W5X6Y7Z"

HEAVY = ("temporalio", "fastapi", "uvicorn", "sqlalchemy", "alembic", "httpx")
"""Packages a completion must not import: each costs a Tab hundreds of milliseconds."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The weekly-report example with a second process, ``monthly-report``."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    shutil.copy(root / "processes" / "weekly-report.yaml",
                root / "processes" / "monthly-report.yaml")
    return root


@pytest.fixture
def recorded(bees_home: Path, workspace: Path) -> Path:
    """A record holding items LOCAL_A and LOCAL_B, and team rows of LOCAL_A and TEAM_ONLY;
    LOCAL_B waits on requests 1 (mail.send) and 3 (the finish), request 2 was approved."""
    path = bees_home / "data" / "record.db"
    record = LocalRecord(path)
    for item_id, title in ((LOCAL_B, "Week 2"), (LOCAL_A, "Week 1")):
        record.add_item(id=item_id, process="weekly-report", title=title,
                        workspace=str(workspace), run_folder=str(bees_home / item_id),
                        input="{}", stage="Draft")
    for request, action, kind, status in ((1, "mail.send", "send", "waiting"),
                                          (2, "mail.send", "send", "approved"),
                                          (3, None, "finish", "waiting")):
        record.put_approval(LOCAL_B, {
            "id": request, "item_id": LOCAL_B, "stage": "Send", "round": 1, "action": action,
            "kind": kind, "summary": "-", "status": status, "asked_at": "2026-12-01T09:00:00Z"})
    shared = SharedRecord(path)
    for seq, item_id in enumerate((LOCAL_A, TEAM_ONLY), start=1):
        entry = SimpleNamespace(item_id=item_id, fields={"title": "Theirs", "status": "running"},
                                origin_time=datetime(2026, 12, 1, 9, tzinfo=UTC),
                                machine_id="m-2", person="ana@example.com", seq=seq)
        shared.apply([entry], seq)  # type: ignore[list-item]
    return path


def offered(words: str, *, home: Path, cwd: Path, env: dict[str, str] | None = None
            ) -> list[str]:
    """The values ``bees`` offers for the last word of ``words`` through the bash protocol
    (``COMP_WORDS``, ``COMP_CWORD``), asked in this process (one value a line; no values is
    an empty line, which bash's ``$( )`` drops); it printed nothing else and exited 0."""
    from bees_cli.cli import main

    count = len(words.split()) + (1 if words.endswith(" ") else 0)
    values = {"BEES_HOME": str(home), "COMP_WORDS": words, "COMP_CWORD": str(count - 1),
              COMPLETE_VAR: "complete_bash", **(env or {})}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("BEES_WORKSPACE", raising=False)
        for name, value in values.items():
            patch.setenv(name, value)
        patch.chdir(cwd)
        out, err = io.StringIO(), io.StringIO()
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        with pytest.raises(SystemExit) as left:
            main.whole_command()([], prog_name="bees", complete_var=COMPLETE_VAR)
    assert (left.value.code, err.getvalue()) == (0, "")
    return out.getvalue().rstrip("\n").splitlines()


def test_the_protocol_answers_another_process(bees_home: Path, workspace: Path) -> None:
    """``python -m bees_cli`` as the scripts run it: values on stdout, nothing on stderr."""
    done = complete_bash("bees item create --agent ", home=bees_home, cwd=workspace)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["reviewer", "sender", "writer"]


@pytest.mark.parametrize(("words", "expected"), [
    ("bees item create ", ["monthly-report", "weekly-report"]),
    ("bees item create w", ["weekly-report"]),
    ("bees item create --agent ", ["reviewer", "sender", "writer"]),
    ("bees item create --title T --agent wr", ["writer"]),
    ("bees item create --folder ", ["outbox", "team-notes"]),
    ("bees link ", ["outbox", "team-notes"]),
    ("bees action ", ["mail.send"]),
    ("bees completion ", ["bash", "zsh", "fish"]),
])
def test_workspace_names_are_offered_in_the_workspace(
        words: str, expected: list[str], bees_home: Path, workspace: Path) -> None:
    assert offered(words, home=bees_home, cwd=workspace / "processes") == expected


def test_the_workspace_option_names_the_workspace(bees_home: Path, workspace: Path,
                                                  tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert offered(f"bees item create -w {workspace} ", home=bees_home, cwd=outside) == [
        "monthly-report", "weekly-report"]
    assert offered(f"bees item create --workspace {workspace} --agent s", home=bees_home,
                   cwd=outside) == ["sender"]


def test_bees_action_reads_the_stage_environment(bees_home: Path, workspace: Path,
                                                 tmp_path: Path) -> None:
    """In a stage the cwd is the run folder; ``BEES_WORKSPACE`` names the workspace."""
    assert offered("bees action m", home=bees_home, cwd=tmp_path,
                   env={"BEES_WORKSPACE": str(workspace)}) == ["mail.send"]


def test_no_workspace_offers_nothing(bees_home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for words in ("bees item create ", "bees item create --agent ", "bees action ",
                  f"bees item create -w {tmp_path / 'missing'} "):
        assert offered(words, home=bees_home, cwd=outside) == [], words


@pytest.mark.parametrize(("words", "expected"), [
    ("bees retry ", [LOCAL_A, LOCAL_B, TEAM_ONLY]),
    ("bees item show ", [LOCAL_A, LOCAL_B, TEAM_ONLY]),
    ("bees approve 01JH3QY", [LOCAL_B]),
    ("bees continue 01JK", [TEAM_ONLY]),
    ("bees relinquish 01JZ", []),
    (f"bees approve {LOCAL_B} --action ", ["1", "3"]),
    (f"bees deny {LOCAL_B.lower()[:8]} --reason no --action ", ["1", "3"]),
    (f"bees approve {LOCAL_A} --action ", []),
    ("bees approve 01JH3Q --action ", []),  # a prefix naming two items: no request is meant
    ("bees approve --action ", []),
])
def test_item_ids_and_requests_come_from_the_record(
        words: str, expected: list[str], recorded: Path, bees_home: Path,
        tmp_path: Path) -> None:
    assert offered(words, home=bees_home, cwd=tmp_path) == expected


def test_linked_folders_are_offered_to_unlink(bees: BeesRunner, bees_home: Path,
                                              workspace: Path) -> None:
    linked = bees("link", "team-notes", str(workspace / "notes"), "-w", str(workspace))
    assert linked.returncode == 0, linked.stderr
    assert offered("bees unlink ", home=bees_home, cwd=workspace) == ["team-notes"]


def test_a_missing_record_offers_nothing_and_creates_nothing(bees_home: Path,
                                                             tmp_path: Path) -> None:
    assert offered("bees retry ", home=bees_home, cwd=tmp_path) == []
    assert offered("bees unlink ", home=bees_home, cwd=tmp_path) == []
    assert list(bees_home.iterdir()) == []


def test_a_broken_home_offers_nothing_without_a_traceback(bees_home: Path,
                                                          tmp_path: Path) -> None:
    (bees_home / "data").mkdir()
    (bees_home / "data" / "record.db").write_text("not a database")
    (bees_home / "state").mkdir()
    (bees_home / "state" / "links.json").write_text("{not json")
    assert offered("bees retry ", home=bees_home, cwd=tmp_path) == []
    assert offered("bees unlink ", home=bees_home, cwd=tmp_path) == []
    a_file = tmp_path / "home-is-a-file"
    a_file.write_text("")
    assert offered("bees item show ", home=a_file, cwd=tmp_path) == []


def test_a_broken_addon_file_offers_nothing_without_a_traceback(bees_home: Path,
                                                                workspace: Path) -> None:
    (workspace / "addons" / "mail.yaml").write_text("actions: [unclosed\n")
    assert offered("bees action ", home=bees_home, cwd=workspace) == []


def test_every_top_level_command_is_offered(bees_home: Path, tmp_path: Path) -> None:
    command = root_command()
    ctx = command.context_class(command, info_name="bees")
    names = command.list_commands(ctx)  # type: ignore[attr-defined]
    assert "completion" in names
    assert offered("bees ", home=bees_home, cwd=tmp_path) == names
    # an eager option typed before the word does not act (--version printed the version)
    assert offered("bees --version ", home=bees_home, cwd=tmp_path) == names


def test_completion_imports_no_engine_and_no_server(recorded: Path, bees_home: Path,
                                                    workspace: Path) -> None:
    """A Tab must be quick: no Temporal, FastAPI, SQLAlchemy or httpx on its path."""
    for words in ("bees retry ", "bees action ", "bees item create --agent "):
        count = len(words.split())
        env = dict(os.environ, BEES_HOME=str(bees_home), COMP_WORDS=words,
                   COMP_CWORD=str(count))
        env[COMPLETE_VAR] = "complete_bash"
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "bees_cli"],
                              cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0 and done.stdout, (words, done.stderr[-2000:])
        imported = {line.split("|")[-1].strip().split(".")[0]
                    for line in done.stderr.splitlines() if line.startswith("import time:")}
        assert imported.isdisjoint(HEAVY), (words, sorted(imported & set(HEAVY)))


def _invoke(*args: str) -> Result:
    """Run ``bees ARGS`` in this process (typer's runner: stdout and stderr apart)."""
    from bees_cli.cli import main

    return CliRunner().invoke(main.app, list(args), prog_name="bees")


def test_bees_completion_prints_the_shipped_script() -> None:
    for shell, name in (("bash", "bees.bash"), ("zsh", "_bees"), ("fish", "bees.fish"),
                        ("FISH", "bees.fish")):
        done = _invoke("completion", shell)
        assert (done.exit_code, done.stderr) == (0, ""), shell
        assert done.stdout == (REPO / "completions" / name).read_text(encoding="utf-8")
        assert f"{COMPLETE_VAR}=complete_{shell.lower()}" in done.stdout


def test_an_unknown_shell_is_a_usage_error_naming_the_choices() -> None:
    done = _invoke("completion", "tcsh")
    assert done.exit_code == 2
    assert done.stdout == ""
    assert re.search(r"'tcsh' is not one of 'bash', 'zsh', 'fish'", done.stderr), done.stderr


def test_no_option_edits_rc_files() -> None:
    shown = _invoke("--help")
    assert shown.exit_code == 0
    assert "--install-completion" not in shown.stdout
    assert "--show-completion" not in shown.stdout
    assert _invoke("--install-completion").exit_code == 2


@pytest.mark.parametrize(("shell", "package"), [("bash", "bash"), ("zsh", "zsh"),
                                                 ("fish", "fish")])
def test_each_script_parses_in_its_shell(shell: str, package: str, tmp_path: Path) -> None:
    """``bees completion SHELL | SHELL -n``."""
    program = need(shell, package)
    script = tmp_path / f"script.{shell}"
    script.write_text(_invoke("completion", shell).stdout)
    checked = subprocess.run([program, "-n", str(script)], capture_output=True, text=True,
                             timeout=60, check=False)
    assert (checked.returncode, checked.stderr) == (0, "")


def test_bash_completes_through_its_script(recorded: Path, bees_home: Path,
                                           workspace: Path) -> None:
    """The shipped script, sourced in bash, fills COMPREPLY from ``bees``."""
    bash = need("bash", "bash")
    script = REPO / "completions" / "bees.bash"
    code = (f"source {script}; COMP_WORDS=(bees item create --agent ''); COMP_CWORD=4; "
            "_bees_completion bees; printf '%s\\n' \"${COMPREPLY[@]}\"; "
            "COMP_WORDS=(bees retry 01JH3QX); COMP_CWORD=2; "
            "_bees_completion bees; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run([bash, "--norc", "-c", code], cwd=workspace, capture_output=True,
                          text=True, timeout=60, check=False,
                          env=with_bees_on_path(dict(os.environ, BEES_HOME=str(bees_home))))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["reviewer", "sender", "writer", LOCAL_A]


def test_fish_completes_through_its_script(recorded: Path, bees_home: Path,
                                           workspace: Path) -> None:
    """The shipped script, sourced in fish, offers values with their help."""
    fish = need("fish", "fish")
    script = REPO / "completions" / "bees.fish"
    code = (f"source {script}; complete -C 'bees retry 01JK'; "
            f"complete -C 'bees approve {LOCAL_B} --action '")
    done = subprocess.run([fish, "--no-config", "-c", code], cwd=workspace,
                          capture_output=True, text=True, timeout=60, check=False,
                          env=with_bees_on_path(dict(os.environ, BEES_HOME=str(bees_home))))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [f"{TEAM_ONLY}\tTheirs - running",
                                        "1\tSend: mail.send", "3\tSend: finish"]


def test_zsh_is_answered_in_its_format(recorded: Path, bees_home: Path,
                                       workspace: Path) -> None:
    """What the zsh script evals: ``_arguments`` with each value and its help."""
    env = dict(os.environ, BEES_HOME=str(bees_home),
               _TYPER_COMPLETE_ARGS="bees item create --agent s")
    env[COMPLETE_VAR] = "complete_zsh"
    done = subprocess.run([sys.executable, "-m", "bees_cli"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == """_arguments '*: :(("sender":"agent"))'"""
