"""The shipped ``completions/`` and ``man/`` are what the command tree makes; man renders them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.core import TyperGroup

from bees_cli.cli.generated import differences, expected_files, root_command
from bees_cli.cli.manpages import escape, man_pages
from tests.cli.shells import need
from tests.conftest import REPO

REGENERATE = "regenerate them: .venv/bin/python -m bees_cli.cli.generated"


def _leaves_and_groups() -> tuple[list[str], list[str]]:
    """Every visible leaf command and every group of the tree, as typed (``bees item
    create``; ``bees cloud team``)."""
    leaves: list[str] = []
    groups: list[str] = []
    command = root_command()
    pending = [(command, command.context_class(command, info_name="bees"))]
    while pending:
        node, ctx = pending.pop(0)
        assert isinstance(node, TyperGroup)
        for name in node.list_commands(ctx):
            sub = node.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = sub.context_class(sub, info_name=name, parent=ctx)
            if isinstance(sub, TyperGroup):
                groups.append(sub_ctx.command_path)
                pending.append((sub, sub_ctx))
            else:
                leaves.append(sub_ctx.command_path)
    return leaves, groups


def test_the_shipped_files_are_fresh() -> None:
    """A changed command, help text or option makes a stale file; a removed group an extra
    page."""
    assert differences(REPO, expected_files()) == [], REGENERATE


def test_a_stale_missing_or_extra_file_is_found(tmp_path: Path) -> None:
    files = {"completions/bees.bash": "new\n", "man/bees.1": "page\n"}
    (tmp_path / "completions").mkdir()
    (tmp_path / "completions" / "bees.bash").write_text("old\n")
    (tmp_path / "man").mkdir()
    (tmp_path / "man" / "bees-gone.1").write_text("page\n")
    assert differences(tmp_path, files) == [
        "stale completions/bees.bash", "missing man/bees.1", "extra man/bees-gone.1"]


def test_every_command_has_its_section_and_every_group_its_page() -> None:
    leaves, groups = _leaves_and_groups()
    assert "bees completion" in leaves and "bees item create" in leaves
    assert "bees cloud team add" in leaves and "bees cloud team" in groups
    pages = expected_files()
    text = "".join(pages.values())
    for leaf in leaves:
        assert text.count(f'.SS "{escape(leaf)}"\n') == 1, leaf
    top_groups = [g for g in groups if g.count(" ") == 1]
    assert sorted(pages) == sorted([
        "completions/_bees", "completions/bees.bash", "completions/bees.fish", "man/bees.1",
        *(f"man/{g.replace(' ', '-')}.1" for g in top_groups)])
    assert len(top_groups) >= 5


def test_a_page_keeps_its_help_text_and_escapes_roff() -> None:
    pages = man_pages(root_command(), prog="bees", version="9.9.9")
    item = pages["bees-item.1"]
    assert item.splitlines()[0] == '.TH "BEES\\-ITEM" 1 "" "bees 9.9.9" "Bees Manual"'
    assert ".SS \"bees item create\"\n.B bees item create\n[\\fIOPTIONS\\fR] \\fIPROCESS\\fR\n" \
        in item
    assert "\\fB\\-\\-agent\\fR \\fIAGENT\\fR\nAn agent for the item's work stages " \
        "(repeatable, in order).\n" in item
    assert escape(".hidden") == "\\&.hidden"
    assert escape("a\\b → c") == "a\\eb \\[u2192] c"


def _render(page: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command, str(page)], capture_output=True, text=True, timeout=60,
                          check=False, env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))


@pytest.mark.parametrize("page", sorted(p.name for p in (REPO / "man").glob("*.1")))
def test_each_page_renders_without_warnings(page: str) -> None:
    """``groff -man -ww`` (every warning on) and ``man -l`` print the page and nothing on
    stderr."""
    groff = need("groff", "groff-base")
    path = REPO / "man" / page
    done = _render(path, [groff, "-man", "-Tutf8", "-ww", "-z"])
    assert (done.returncode, done.stderr) == (0, "")
    man = need("man", "man-db")
    shown = _render(path, [man, "--warnings", "-l"])
    assert (shown.returncode, shown.stderr) == (0, "")
    name = page.removesuffix(".1")
    assert shown.stdout.splitlines()[0].split()[0] == f"{name.upper()}(1)"
    assert "NAME" in shown.stdout and "SYNOPSIS" in shown.stdout
