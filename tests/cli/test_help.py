"""Help that guides (issue 28, point 3): ``bees --help`` in panels with one-line summaries, every
command's help within 80 columns with no markup shown raw and examples kept whole, ``bees help
COMMAND`` and the ``json`` and ``exit-codes`` topics."""

from __future__ import annotations

import re

import pytest
from typer.core import TyperGroup

from bees_cli.cli import commands, roothelp, topics
from bees_cli.cli.boundary import ExitCode
from bees_cli.cli.generated import root_command
from tests.cli.conftest import InProcess
from tests.conftest import REPO, BeesRunner

RAW_MARKUP = re.compile(r"`|\*\*|\S::(\s|$)|\\b|\x08")
"""Markup a reader should never see: reST or markdown code (`` ` ``), bold (``**``), a reST
literal block (``Example::``), click's no-rewrap marker (``\\b``) shown as text."""


def _every_command() -> list[tuple[str, ...]]:
    """Every command and group of the tree as its words (``("cloud", "person", "add")``),
    the root first."""
    found: list[tuple[str, ...]] = [()]
    command = root_command()
    pending = [(command, command.context_class(command, info_name="bees"), ())]
    while pending:
        node, ctx, words = pending.pop(0)
        for name in node.list_commands(ctx):
            sub = node.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            found.append((*words, name))
            if isinstance(sub, TyperGroup):
                pending.append((sub, sub.context_class(sub, info_name=name, parent=ctx),
                                (*words, name)))
    return found


def _examples(help_text: str) -> list[str]:
    """The command of each ``Example:`` paragraph of a command's own help, on one line."""
    found = []
    for paragraph in help_text.split("\n\n"):
        rows = [row.strip() for row in paragraph.strip().splitlines()]
        if rows and rows[0].startswith("Example:"):
            found.append(" ".join([rows[0].removeprefix("Example:"), *rows[1:]]).strip())
    return found


def _shown_examples(shown: str) -> list[str]:
    """The commands shown under each ``Example:`` line, continuation lines (`` \\``) joined."""
    found = []
    lines = shown.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "Example:":
            continue
        parts = []
        for row in lines[i + 1:]:
            parts.append(row.strip().removesuffix("\\").strip())
            if not row.rstrip().endswith("\\"):
                break
        found.append(" ".join(parts))
    return found


@pytest.mark.parametrize("words", _every_command(), ids=" ".join)
def test_every_help_fits_80_columns_without_raw_markup(
        words: tuple[str, ...], run_bees: InProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    shown = run_bees(*words, "--help")
    assert shown.code == 0, shown.stderr
    for line in shown.stdout.splitlines():
        assert len(line) <= 80, line
        assert not RAW_MARKUP.search(line), line
        assert not (line.startswith("  ") and line.endswith("...")), line  # a cut summary
    command = root_command()
    for word in words:
        command = command.commands[word]  # type: ignore[attr-defined]
    assert _shown_examples(shown.stdout) == _examples(command.help or "")


def test_root_help_groups_commands_in_panels() -> None:
    shown = roothelp.render(78)
    assert [line for line in shown.splitlines() if line.endswith(":")] == [
        "Options:", "Work items:", "Approvals:", "Handover:", "Schedules:", "Workspace:",
        "This computer:", "Bees Cloud:", "Help:"]
    listed = [name for names in commands.PANELS.values() for name in names]
    assert sorted(listed) == sorted(commands.COMMANDS)
    work = shown.split("Work items:\n")[1].split("\n\n")[0].splitlines()
    assert work[0] == "  status      List work items here and the team's, with stage and status."
    assert [line.split()[0] for line in work] == commands.PANELS["Work items"]


def test_help_command_is_the_command_own_help(run_bees: InProcess,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for words in [("item", "create"), ("cloud", "person", "add"), ("cloud",), ("status",)]:
        own = run_bees(*words, "--help")
        asked = run_bees("help", *words)
        assert (asked.code, asked.stdout) == (0, own.stdout)
    assert run_bees("help").stdout == run_bees("--help").stdout
    typo = run_bees("help", "cloud", "persn")
    assert typo.code == 2
    assert "No such command 'persn'. Did you mean 'person'?" in typo.stderr


def test_help_topics_json_and_exit_codes(run_bees: InProcess) -> None:
    codes = run_bees("help", "exit-codes")
    assert codes.code == 0
    assert codes.stdout.splitlines()[:3] == [
        "Exit codes of every bees command:", "",
        "  0    done"]
    assert "\n".join(codes.stdout.splitlines()[6:9]) == (
        "  3    refused: not the owner, key taken, checkpoint invalid, wrong state;\n"
        "       item create --wait and item watch --until-waiting: the item waits for a\n"
        "       person")
    shown = run_bees("help", "json")
    assert shown.code == 0
    assert '  {"version": 1, "error": {"code": "...", "message": "...", "hint": "..."}}' in (
        shown.stdout.splitlines())


def test_the_docs_exit_code_table_is_the_topic() -> None:
    ci = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert topics.exit_codes_markdown() in ci
    assert [code for code, _ in topics.EXIT_CODES] == sorted(int(code) for code in ExitCode)


def test_help_through_the_entry_point(bees: BeesRunner) -> None:
    shown = bees("help", "exit-codes", env={"COLUMNS": "80"})
    assert (shown.returncode, shown.stdout) == (0, topics.render("exit-codes", 78) + "\n")
    assert bees("help", env={"COLUMNS": "80"}).stdout == roothelp.render(78) + "\n"
