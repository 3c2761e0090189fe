"""``bees status`` and ``bees validate`` parsed without typer (issue 16, point 4) answer exactly as
the typer app does: same stdout, stderr and exit code; any other line goes to typer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bees_cli.cli.quick import parse
from tests.conftest import EXAMPLE
from tests.support.inprocess import run_entry

WS = str(EXAMPLE)


def _places(tmp_path: Path) -> dict[str, str]:
    """``{tmp}``: a folder without a workspace; ``{bad}``: a workspace that does not parse;
    ``{warned}``: a valid workspace with a stray file (a warning)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bees.yaml").write_text("name: [unclosed\n")
    warned = tmp_path / "warned"
    shutil.copytree(WS, warned)
    (warned / "agents" / "notes.txt").write_text("not an agent\n")
    return {"tmp": str(empty), "bad": str(bad), "warned": str(warned)}


def _both(args: list[str], env: dict[str, str],
          cwd: Path) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """Run ``bees ARGS`` through the entry point (the quick path) and through the typer app, each
    as its own process would (:func:`tests.support.inprocess.run_entry`)."""
    full = {**os.environ, "COLUMNS": "80", **env}
    quick = run_entry(args, env=full, cwd=cwd)
    typer = run_entry(args, env=full, cwd=cwd, typer_only=True)
    return quick, typer


def _aged(text: str) -> str:
    """``text`` with each age (``2s ago``) as ``Ns ago`` and runs of spaces and dashes as one:
    the two runs are seconds apart (``9s`` and ``10s`` make columns of other widths)."""
    return re.sub(r"([ -])\1+", r"\1", re.sub(r"\b\d+s ago\b", "Ns ago", text))


LINES: list[tuple[list[str], dict[str, str]]] = [
    (["validate", WS], {}),
    (["validate", WS, "--json"], {}),
    (["validate", "-w", WS], {}),
    (["validate", "--json", "--workspace={warned}"], {}),
    (["validate"], {}),  # the current folder: tmp has no workspace
    (["validate", "{tmp}"], {}),
    (["validate", "{tmp}", "--json"], {}),
    (["validate", "{bad}"], {}),
    (["validate", "{bad}", "--json"], {}),
    (["validate", "{warned}"], {}),
    (["validate", "{tmp}"], {"BEES_WORKSPACE": WS}),  # the DIR given wins
    (["validate"], {"BEES_WORKSPACE": WS}),
    (["validate", "-w", "{bad}"], {"BEES_WORKSPACE": WS}),
    (["status"], {}),
    (["status", "--json"], {}),
    (["status", "--mine", "--all", "--wide"], {}),
    (["status", "--json", "--json"], {}),
]


@pytest.mark.parametrize(("args", "env"), LINES)
def test_the_quick_path_answers_as_typer_does(args: list[str], env: dict[str, str],
                                              tmp_path: Path, bees_home: Path) -> None:
    places = _places(tmp_path)
    args = [arg.format(**places) for arg in args]
    assert parse(args, env) is not None
    quick, typer = _both(args, env, tmp_path / "empty")
    assert (quick.returncode, quick.stdout, quick.stderr) == (
        typer.returncode, typer.stdout, typer.stderr)


def test_the_quick_path_answers_with_items_and_a_broken_home(tmp_path: Path,
                                                             bees_home: Path) -> None:
    created = run_entry(["item", "create", "weekly-report", "-w", WS, "--title", "Week 49"])
    assert created.returncode == 0, created.stderr
    for args in (["status", "--wide"], ["status", "--all", "--json"]):  # --wide cuts no cell
        quick, typer = _both(args, {}, tmp_path)
        assert quick.returncode == 0
        assert "Week 49" in quick.stdout
        assert (_aged(quick.stdout), quick.stderr) == (_aged(typer.stdout), typer.stderr)
    home_is_a_file = tmp_path / "file"
    home_is_a_file.write_text("")
    quick, typer = _both(["status"], {"BEES_HOME": str(home_is_a_file)}, tmp_path)
    assert quick.returncode == 1
    assert (quick.returncode, quick.stdout, quick.stderr) == (
        typer.returncode, typer.stdout, typer.stderr)


@pytest.mark.parametrize(("args", "env"), [
    ([], {}),
    (["run"], {}),
    (["validate", "--help"], {}),
    (["validate", "-h"], {}),
    (["validate", WS, "extra"], {}),
    (["validate", "-w"], {}),
    (["validate", "-w", "--json"], {}),
    (["validate", "-w", WS, "-w", WS], {}),
    (["validate", f"-w{WS}"], {}),
    (["validate", "--workspace="], {}),
    (["validate", "--", WS], {}),
    (["validate", ""], {}),
    (["validate", "--nope"], {}),
    (["validate"], {"BEES_WORKSPACE": ""}),
    (["validate", WS], {"_BEES_COMPLETE": "complete_bash"}),
    (["status", "--watch"], {}),
    (["status", "--limit", "5"], {}),
    (["status", "extra"], {}),
    (["--debug", "status"], {}),
])
def test_other_lines_go_to_typer(args: list[str], env: dict[str, str]) -> None:
    assert parse(args, env) is None


def test_parse_gives_the_command_keywords() -> None:
    assert parse(["validate", "--json", "d", "--workspace", "w"], {}) == ("validate", {
        "directory": Path("d"), "workspace": Path("w"), "from_env": False, "as_json": True})
    assert parse(["validate", "d"], {"BEES_WORKSPACE": "e"}) == ("validate", {
        "directory": Path("d"), "workspace": Path("e"), "from_env": True, "as_json": False})
    assert parse(["status", "--wide", "--mine"], {}) == ("status", {
        "as_json": False, "mine": True, "show_all": False, "wide": True})
