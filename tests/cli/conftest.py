"""An in-process ``bees`` for the CLI contract tests: the real app, many times a second."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from bees_cli.cli import main


@dataclass(frozen=True)
class Ran:
    """One command's end: exit code, stdout, stderr, and the exception that ended it when
    it was not an exit (a traceback a person would have seen)."""

    code: int
    stdout: str
    stderr: str
    raised: BaseException | None

    def json(self) -> Any:
        """Return stdout read as JSON."""
        return json.loads(self.stdout)


InProcess = Callable[..., Ran]


@pytest.fixture
def run_bees(bees_home: Path, monkeypatch: pytest.MonkeyPatch) -> InProcess:
    """Run ``bees ARGS`` in this process on the isolated computer (``BEES_HOME``).

    A command that would leave by ``os._exit`` (it touched the engine) raises
    ``SystemExit`` instead, so the runner records its code.
    """

    def exit_soft(code: int) -> NoReturn:
        sys.exit(code)

    for module in ("output", "control", "engine", "handover"):
        monkeypatch.setattr(f"bees_cli.cli.{module}.exit_hard", exit_soft)
    monkeypatch.setenv("BEES_DEBUG", "0")  # undone after the test, also after a --debug
    runner = CliRunner()

    def run(*args: str, stdin: str | None = None) -> Ran:
        done = runner.invoke(main.app, list(args), input=stdin)
        raised = done.exception
        if isinstance(raised, SystemExit):
            raised = None
        return Ran(done.exit_code, done.stdout, done.stderr, raised)

    return run
