"""A work item's title (``bees item create --title``): text a terminal shows as it is. Control
characters, bidi overrides and very long titles are refused at create (exit 2); an empty
``--title`` is refused too (leave it out for the process's title); and a title that arrives
another way (the shared record, an older version's row) is printed with its control
characters replaced, never sent to the terminal raw."""

from __future__ import annotations

from pathlib import Path

import pytest

from bees_cli.cli.errors import ExitCode
from bees_cli.machine.computer import Computer
from bees_cli.record.local import LocalRecord
from tests.cli.conftest import InProcess

ITEM = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"


@pytest.fixture
def workspace(run_bees: InProcess, tmp_path: Path) -> str:
    ws = tmp_path / "ws"
    assert run_bees("init", str(ws)).code == 0
    return str(ws)


@pytest.mark.parametrize(("title", "said"), [
    ("a\tb\x1b[31mred", "error: a title cannot hold control characters: U+0009 at "
                        "character 2; write it on one line of plain text"),
    ("pay \u202eevil", "error: a title cannot hold bidi controls: U+202E at character 5; "
                       "write it on one line of plain text"),
    ("\u2066x", "error: a title cannot hold bidi controls: U+2066 at character 1; "
                "write it on one line of plain text"),
    ("x" * 201, "error: a title is at most 200 characters; this one has 201"),
    ("", "error: --title is empty; leave it out to use the process's title"),
    ("   ", "error: --title is empty; leave it out to use the process's title"),
])
def test_a_title_a_terminal_cannot_show_as_it_is_is_refused_at_create(
        run_bees: InProcess, workspace: str, title: str, said: str) -> None:
    ran = run_bees("item", "create", "draft-review", "-w", workspace, "--title", title)
    assert (ran.code, ran.raised) == (ExitCode.USAGE, None)
    assert ran.stderr.splitlines()[0] == said
    assert LocalRecord(Computer.load().record_path).items() == []


def test_a_title_of_200_characters_of_any_script_is_taken(
        run_bees: InProcess, workspace: str) -> None:
    title = "Ünïcödé 週報 " + "x" * 189
    assert len(title) == 200
    ran = run_bees("item", "create", "draft-review", "-w", workspace, "--title", title)
    assert ran.code == 0, ran.stderr
    (row,) = LocalRecord(Computer.load().record_path).items()
    assert row.title == title


def test_control_characters_from_the_record_are_replaced_when_printed(
        run_bees: InProcess, workspace: str, tmp_path: Path) -> None:
    record = LocalRecord(Computer.load().record_path)
    record.add_item(id=ITEM, process="draft-review", title="a\tb\x1b[31mred\u202eX\x07",
                    workspace=workspace, run_folder=str(tmp_path / "run"), input="",
                    stage="Draft")
    shown = "a b\ufffd[31mred\ufffdX\ufffd"
    status = run_bees("status", "--wide")
    assert status.code == 0, status.stderr
    assert status.stdout.splitlines()[2].split("  ")[2] == shown
    item = run_bees("item", "show", ITEM)
    assert item.code == 0, item.stderr
    assert item.stdout.splitlines()[0] == f"item        {ITEM}  {shown}"
    for out in (status.stdout, item.stdout):
        assert not any(c in out for c in "\t\x1b\x07\u202e"), out
    # --json keeps the text as it is (JSON escapes it)
    assert run_bees("item", "show", ITEM, "--json").json()["item"]["title"] == (
        "a\tb\x1b[31mred\u202eX\x07")
