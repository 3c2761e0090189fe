"""The ``bees`` fixture runs ``python -m bees_cli`` in the test's process
(:mod:`tests.support.inprocess`); a real process answers each of these lines with the same exit
code, stdout and stderr, so the tests that use it assert what a person would see."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, BeesRunner

LINES: list[tuple[list[str], dict[str, str]]] = [
    (["--help"], {}),
    (["--version"], {}),
    (["nosuch"], {}),  # click's usage error names the program: python -m bees_cli
    (["item"], {}),
    (["validate", "{ws}"], {}),
    (["validate", "{bad}", "--json"], {}),
    (["validate"], {"BEES_WORKSPACE": "{ws}"}),
    (["status", "--json"], {}),
    (["links", "-w", "{ws}"], {}),
    (["item", "show", "01JH3QX5Z8KZ2W4M6N8P0R2T4V"], {}),
    (["whoami", "--json"], {"BEES_HOME": "{file}"}),
]


@pytest.mark.parametrize(("args", "env"), LINES, ids=lambda value: repr(value))
def test_in_this_process_answers_as_a_process_does(
        args: list[str], env: dict[str, str], tmp_path: Path, bees: BeesRunner,
        bees_process: BeesRunner) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bees.yaml").write_text("name: [unclosed\n")
    file = tmp_path / "file"
    file.write_text("")
    places = {"ws": str(ws), "bad": str(bad), "file": str(file)}
    args = [arg.format(**places) for arg in args]
    env = {name: value.format(**places) for name, value in env.items()}
    here = bees(*args, cwd=tmp_path, env=env)
    there = bees_process(*args, cwd=tmp_path, env=env)
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode, there.stdout, there.stderr)
