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
    (["item", "show"], {}),
    (["item", "show", "01JH3ABC", "extra"], {}),
    (["item", "show", "--help"], {}),
    (["item", "show", "01JH3ABC", "--nope"], {}),
    (["item", "show", "--", "01JH3ABC"], {}),
    (["item", "show", "-x"], {}),
    (["item", "watch", "01JH3ABC"], {}),
    (["item"], {}),
    (["checkpoint", "verify"], {}),
    (["checkpoint", "verify", "-h"], {}),
    (["checkpoint", "verify", "d", "--digest"], {}),
    (["checkpoint", "verify", "d", "--digest", "--json"], {}),
    (["checkpoint", "verify", "d", "--digest="], {}),
    (["checkpoint", "verify", "d", "--digest", "a", "--digest", "b"], {}),
    (["checkpoint", "verify", "d", "e"], {}),
    (["checkpoint", "verify", ""], {}),
    (["checkpoint"], {}),
    (["item", "show", "01JH3ABC"], {"_BEES_COMPLETE": "complete_bash"}),
])
def test_other_lines_go_to_typer(args: list[str], env: dict[str, str]) -> None:
    assert parse(args, env) is None


def _checkpointed(root: Path) -> tuple[Path, str]:
    """A run folder with a checkpoint of one file; its checkpoint's SHA-256."""
    from datetime import UTC, datetime

    from bees_cli.handover.checkpoint import write_checkpoint

    folder = root / "run"
    (folder / "Draft").mkdir(parents=True)
    (folder / "Draft" / "notes.md").write_text("notes\n")
    info = write_checkpoint(folder, item_id="i", workspace="w", process_digest="p",
                            restart_stages={"main": "Draft"}, computer="c",
                            machine_id="0" * 32, journal=[], now=datetime.now(UTC))
    return folder, info.sha256


def test_item_show_and_checkpoint_verify_answer_as_typer_does(tmp_path: Path,
                                                              bees_home: Path) -> None:
    """The read-only commands issue 29 point 3 starts without typer: every line the quick
    path takes answers with typer's stdout, stderr and exit code."""
    created = run_entry(["item", "create", "weekly-report", "-w", WS, "--title", "Week 49"])
    assert created.returncode == 0, created.stderr
    (item,) = re.findall(r"^[0-9A-Z]{26}$", created.stdout, re.MULTILINE)
    folder, digest = _checkpointed(tmp_path)
    (tmp_path / "tampered").mkdir()
    tampered, other = _checkpointed(tmp_path / "tampered")
    (tampered / "Draft" / "notes.md").write_text("changed\n")
    (tmp_path / "plain").mkdir()
    lines = [
        ["item", "show", item], ["item", "show", item, "--json"],
        ["item", "show", "--json", item.lower()[:8]], ["item", "show", f" {item[:6]} "],
        ["item", "show", "01JH3ABCDEFG"], ["item", "show", "01JH3ABCDEFG", "--json"],
        ["item", "show", "0"],  # an id too short: refused as typer's parser refuses it
        ["item", "show", "0", "--json"], ["item", "show", "no/such"],
        ["checkpoint", "verify", str(folder)],
        ["checkpoint", "verify", str(folder), "--digest", digest],
        ["checkpoint", "verify", f"--digest={digest}", str(folder), "--json"],
        ["checkpoint", "verify", str(folder), "--digest", "0" * 64],
        ["checkpoint", "verify", str(folder), "--digest", "0" * 64, "--json"],
        ["checkpoint", "verify", str(folder), "--digest", "abc"],
        ["checkpoint", "verify", str(tampered), "--digest", other],
        ["checkpoint", "verify", str(tampered), "--json"],
        ["checkpoint", "verify", str(tmp_path / "plain")],
        ["checkpoint", "verify", str(tmp_path / "nowhere"), "--json"],
    ]
    for args in lines:
        assert parse(args, {}) is not None, args
        quick, typer = _both(args, {}, tmp_path)
        assert (quick.returncode, _aged(quick.stdout), quick.stderr) == (
            typer.returncode, _aged(typer.stdout), typer.stderr), args
    shown = _both(["item", "show", item], {}, tmp_path)[0]
    assert (shown.returncode, shown.stdout.splitlines()[0]) == (
        0, f"item        {item}  Week 49")


def test_parse_gives_the_command_keywords() -> None:
    assert parse(["validate", "--json", "d", "--workspace", "w"], {}) == ("validate", {
        "directory": Path("d"), "workspace": Path("w"), "from_env": False, "as_json": True})
    assert parse(["validate", "d"], {"BEES_WORKSPACE": "e"}) == ("validate", {
        "directory": Path("d"), "workspace": Path("e"), "from_env": True, "as_json": False})
    assert parse(["status", "--wide", "--mine"], {}) == ("status", {
        "as_json": False, "mine": True, "show_all": False, "wide": True})
