"""The shape of bees_cli (issue 24, point 6): the import contracts cover the top."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


def test_cli_and_app_call_use_cases_only() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    top = [c for c in contracts if c["id"] == "top-no-engine"]
    assert top == [{"id": "top-no-engine",
                    "name": "cli and app do not import engine (they call use cases only)",
                    "type": "forbidden", "source_modules": ["bees_cli.cli", "bees_cli.app"],
                    "forbidden_modules": ["bees_cli.engine"],
                    "allow_indirect_imports": True}]
