"""``bees demo`` refuses before it loads a model or makes anything (issue 28, point 1)."""

from __future__ import annotations

from pathlib import Path

from bees_cli.machine.paths import data_dir
from bees_cli.usecases.liveness import forget_worker, note_worker
from tests.cli.conftest import InProcess

NOWHERE = "http://127.0.0.1:9/v1"
"""A model URL nothing answers at: these refusals come before any model call."""


def test_a_dir_that_exists_is_refused_before_anything_is_made(
        run_bees: InProcess, bees_home: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    done = run_bees("demo", "--yes", "--dir", str(taken), "--model-url", NOWHERE, "--json")
    assert (done.code, done.json()["error"]["code"]) == (2, "usage")
    assert done.json()["error"]["message"] == (
        f"{taken} exists: the demo makes a fresh workspace")
    assert list(taken.iterdir()) == []


def test_a_running_bees_run_is_refused_before_anything_is_made(
        run_bees: InProcess, bees_home: Path, tmp_path: Path) -> None:
    """Why: the demo runs its own bees run; the one already up would take its item, with a
    model the demo stops when it ends."""
    note_worker(data_dir(), "127.0.0.1:7233", "bees-q")  # this test's process: alive
    try:
        done = run_bees("demo", "--yes", "--dir", str(tmp_path / "demo"),
                        "--model-url", NOWHERE, "--json")
    finally:
        forget_worker(data_dir())
    assert (done.code, done.json()["error"]["code"]) == (3, "refused")
    assert done.json()["error"]["message"].startswith(
        "bees run is already running on this computer")
    assert not (tmp_path / "demo").exists()


def test_no_terminal_and_no_yes_is_refused_before_anything_is_made(
        run_bees: InProcess, bees_home: Path, tmp_path: Path) -> None:
    """Why: a script that forgot --yes would otherwise end at the question as a quit, exit 0,
    and pass without reaching Done."""
    done = run_bees("demo", "--dir", str(tmp_path / "demo"), "--model-url", NOWHERE, "--json")
    assert (done.code, done.json()["error"]["code"]) == (2, "usage")
    assert (done.json()["error"]["message"], done.json()["error"]["hint"]) == (
        "bees demo asks you at the terminal, and its input is not one",
        "pass --yes to approve the held action without asking")
    assert not (tmp_path / "demo").exists()
