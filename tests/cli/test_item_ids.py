"""Item ids are ids (issue 12, point 6): every command that takes one refuses anything else
with exit 2 before it touches the disk, and no id names a path outside the runs folder."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import get_type_hints

import pytest
import typer

from bees_cli.errors import UserError
from bees_cli.ids import check_item_id
from bees_cli.machine.paths import run_folder_of
from tests.cli.conftest import InProcess
from tests.conftest import BeesRunner

WHOLE = "01JH3QX5Z8KZ2W4M6N8P0R2T4V"
SHAPE = ("an item id is 26 letters and digits (0-9 and A-Z without I, L, O or U), like "
         "01JH3QX5Z8KZ2W4M6N8P0R2T4V")
PREFIX_OK = "its first 6 or more are enough"
HINT = "hint: `bees status` lists the items and their ids"

# (argv before the id, argv after it, whether a prefix is enough)
COMMANDS: list[tuple[tuple[str, ...], tuple[str, ...], bool]] = [
    (("item", "show"), (), True),
    (("item", "watch"), ("--until-waiting",), True),
    (("item", "accept"), (), True),
    (("item", "cancel"), (), True),
    (("retry",), (), True),
    (("approve",), (), True),
    (("approve",), ("--action", "1", "--ran"), True),
    (("deny",), ("--reason", "no"), True),
    (("approvals", "show"), ("--action", "1"), True),
    (("relinquish",), ("--json",), True),
    (("continue",), ("--digest", "ab" * 32), False),
    (("continue",), ("--from", "/tmp"), False),
]

BAD = ["../x", "../../etc", "/etc/passwd", f"{WHOLE}/..", "01JH3QX5Z8%", "0" * 5000]


def _refusal(given: str, *, prefix: bool) -> str:
    shown = repr(given if len(given) <= 40 else given[:40] + "...")
    enough = PREFIX_OK if prefix else "give the whole id"
    return f"error: not an item id: {shown}: {SHAPE}; {enough}"


def test_every_command_that_takes_an_item_id_checks_it() -> None:
    """A new command with an ``item`` parameter must use the shared argument (one check), and
    shows up here until COMMANDS covers it."""
    from bees_cli.cli import main
    from bees_cli.cli.options import ItemArg, WholeItemArg

    found: set[str] = set()

    def walk(app: typer.Typer, path: tuple[str, ...]) -> None:
        for command in app.registered_commands:
            callback = command.callback
            assert callback is not None
            hints = get_type_hints(inspect.unwrap(callback), include_extras=True)
            if "item" in hints:
                name = " ".join((*path, command.name or callback.__name__))
                assert hints["item"] in (ItemArg, WholeItemArg), name
                found.add(name)
        for group in app.registered_groups:
            assert group.typer_instance is not None and group.name is not None
            walk(group.typer_instance, (*path, group.name))

    walk(main.whole_app(), ())
    assert found == {" ".join(before) for before, _, _ in COMMANDS}


@pytest.mark.parametrize("bad", BAD, ids=["up", "up-up", "absolute", "trailing-up", "like",
                                          "very-long"])
@pytest.mark.parametrize(("before", "after", "prefix"), COMMANDS,
                         ids=[" ".join(c[0] + c[1]) for c in COMMANDS])
def test_a_bad_id_exits_2_and_creates_nothing(run_bees: InProcess, bees_home: Path,
                                              before: tuple[str, ...], after: tuple[str, ...],
                                              prefix: bool, bad: str) -> None:
    """In this process (the real app; the tests below go through ``python -m bees_cli``)."""
    done = run_bees(*before, bad, *after)
    assert (done.code, done.raised) == (2, None), done.stderr
    if "--json" in after:
        assert done.stderr == ""
        assert json.loads(done.stdout) == {"version": 1, "error": {
            "code": "usage", "message": _refusal(bad, prefix=prefix)[len("error: "):],
            "hint": HINT[len("hint: "):]}}
    else:
        assert (done.stdout, done.stderr.splitlines()) == ("", [_refusal(bad, prefix=prefix),
                                                               HINT])
    assert list(bees_home.iterdir()) == []


def test_continue_wants_the_whole_id(bees: BeesRunner, bees_home: Path) -> None:
    done = bees("continue", WHOLE[:10], "--digest", "ab" * 32)
    assert (done.returncode, done.stderr.splitlines()[0]) == (
        2, _refusal(WHOLE[:10], prefix=False))
    assert list(bees_home.iterdir()) == []


def test_bees_action_checks_the_stage_s_item_id(bees: BeesRunner, bees_home: Path) -> None:
    env = {"BEES_ITEM_ID": "../../etc", "BEES_STAGE": "Send", "BEES_AGENT": "sender"}
    done = bees("action", "mail.send", "--input", "{}", env=env)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (
        2, "", [_refusal("../../etc", prefix=False), HINT])
    assert list(bees_home.iterdir()) == []


def test_a_nul_in_an_id_is_refused_in_process(bees_home: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A NUL cannot travel in a process's arguments; the parser sees it from a caller."""
    from bees_cli.cli import main, output

    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(output, "exit_hard", leave)
    with pytest.raises(SystemExit) as left:
        main.app(["relinquish", "01JH3Q\x00/../x"], standalone_mode=True)
    assert left.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        _refusal("01JH3Q\x00/../x", prefix=True), HINT]
    assert list(bees_home.iterdir()) == []


@pytest.mark.parametrize(("given", "prefix", "expected"), [
    (WHOLE, False, WHOLE),
    (WHOLE.lower(), False, WHOLE),
    (f" {WHOLE}\n", False, WHOLE),
    ("01jh3q", True, "01JH3Q"),
    (WHOLE, True, WHOLE),
])
def test_what_an_id_looks_like(given: str, prefix: bool, expected: str) -> None:
    assert check_item_id(given, prefix=prefix) == expected


@pytest.mark.parametrize(("given", "prefix"), [
    ("01JH3", True),  # too short for a prefix
    (WHOLE[:25], False),  # a prefix where the whole id is needed
    (WHOLE + "0", True),  # too long
    ("01JH3QX5Z8KZ2W4M6N8P0R2T4I", False),  # I is not in the alphabet
    ("01JH3_", True),  # a LIKE wildcard would match any item
    ("01JH3%", True),
    ("", True),
    ("01JH3\u00c9X", True),  # not ASCII
])
def test_what_is_not_an_id(given: str, prefix: bool) -> None:
    with pytest.raises(UserError) as caught:
        check_item_id(given, prefix=prefix)
    assert caught.value.message == _refusal(given, prefix=prefix)[len("error: "):]
    assert caught.value.exit_code == 2


def test_a_run_folder_never_leaves_its_root(tmp_path: Path) -> None:
    assert run_folder_of(tmp_path, WHOLE) == tmp_path / WHOLE
    for bad in ("..", "../x", "/etc", WHOLE + "/..", WHOLE.lower(), f" {WHOLE}", "\x00"):
        with pytest.raises(UserError):
            run_folder_of(tmp_path, bad)
    assert list(tmp_path.iterdir()) == []
